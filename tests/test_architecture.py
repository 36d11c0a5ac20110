"""The package's import structure: no import cycle, and imports only go down the layers.

Imports are read with `ast`, so imports inside functions count too, and `from tfc.x import y`
counts as an import of package `tfc.x` (its `__init__` runs first). docs/architecture.md
explains the layers; LAYERS below is their order, lowest first.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "tfc"

# lowest first: a module may import its own layer and the layers before it
LAYERS: list[tuple[str, ...]] = [
    ("tfc.version", "tfc.ir"),
    ("tfc.io",),
    ("tfc.ops",),
    ("tfc.data",),
    ("tfc.autodiff",),
    (  # the TF1 graph-building API
        "tfc.variables", "tfc.init_ops", "tfc.partitioned_variables", "tfc.nn", "tfc.layers",
        "tfc.losses", "tfc.metrics", "tfc.feature_column", "tfc.train", "tfc.logging",
        "tfc.debugging", "tfc.contrib", "tfc.rnn", "tfc.linalg", "tfc.math", "tfc.random",
        "tfc.strings", "tfc.sparse", "tfc.manip", "tfc.graphdef", "tfc.summary", "tfc.queue",
        "tfc.dtypes", "tfc.image", "tfc.bitwise", "tfc.tflite", "tfc.python_io", "tfc.initializers",
        "tfc.flags", "tfc.app", "tfc.behavior", "tfc.onnx",
    ),
    ("tfc.passes",),
    ("tfc.codegen",),
    ("tfc.backend",),
    ("tfc.compiler",),
    ("tfc.client", "tfc.config"),  # tfc.config: tf.config, on the client's thread settings
    ("tfc.training",),  # the training loops that create Sessions (tf.train.MonitoredSession...)
    ("tfc.onnx.backend",),  # ONNX's backend API: imported models run by a Session
    ("tfc.reference",),
    ("tfc.aot",),
    ("tfc.tools",),
    ("tfc.estimator",),
    ("tfc",),  # the public namespace, tfc/__init__.py
]  # fmt: skip
RANK = {name: i for i, layer in enumerate(LAYERS) for name in layer}


def _modules() -> dict[str, Path]:
    modules = {}
    for path in PACKAGE.rglob("*.py"):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        modules[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return modules


def _imports(name: str, path: Path, modules: dict[str, Path]) -> dict[str, int]:
    """The tfc modules `name` imports, each with the line of its first import."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: dict[str, int] = {}
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                module = ".".join(base + ([node.module] if node.module else []))
            else:
                module = node.module or ""
            targets = [module] + [f"{module}.{alias.name}" for alias in node.names]
        else:
            continue
        for target in targets:
            while target and target not in modules:
                target = target.rpartition(".")[0]
            if target and target != name:
                found.setdefault(target, node.lineno)
    return found


def _rank(module: str) -> int:
    """The layer of `module`: its own entry in LAYERS, or its package's. "tfc" stands for
    tfc/__init__.py alone: a new top-level module must be given a layer of its own."""
    name = module
    while name not in RANK:
        parent = name.rpartition(".")[0]
        if parent in ("", "tfc"):
            raise AssertionError(f"module {module} belongs to no layer: add it to LAYERS")
        name = parent
    return RANK[name]


@pytest.fixture(scope="module")
def graph() -> dict[str, dict[str, int]]:
    modules = _modules()
    return {name: _imports(name, path, modules) for name, path in modules.items()}


def test_every_module_has_a_layer(graph):
    for name in graph:
        _rank(name)


def test_imports_only_go_down_the_layers(graph):
    upward = [
        f"{name} imports {target} (line {line}): layer {_rank(name)} -> {_rank(target)}"
        for name, targets in sorted(graph.items())
        for target, line in sorted(targets.items())
        if _rank(target) > _rank(name)
    ]
    assert not upward, "imports that go up the layers:\n" + "\n".join(upward)


def test_there_is_no_import_cycle(graph):
    # Tarjan's strongly connected components, iteratively
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    cycles: list[list[str]] = []
    for root in graph:
        if root in index:
            continue
        work = [(root, iter(graph[root]))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            for child in children:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(graph[child])))
                    break
                if child in on_stack:
                    low[node] = min(low[node], index[child])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == node:
                            break
                    if len(component) > 1:
                        cycles.append(sorted(component))
    described = [
        " <-> ".join(c)
        + ": "
        + "; ".join(f"{a} -> {b} (line {graph[a][b]})" for a in c for b in graph[a] if b in c)
        for c in cycles
    ]
    assert not cycles, "import cycles:\n" + "\n".join(described)


def test_the_checker_sees_a_cycle_and_an_upward_import(tmp_path):
    """The checks above would fail on a real cycle (guards against a checker that sees none)."""
    modules = {"tfc.ir.a": tmp_path / "a.py", "tfc.ir.b": tmp_path / "b.py", "tfc.ir": tmp_path}
    modules["tfc.ir.a"].write_text("def f():\n    from tfc.ir.b import g\n")
    modules["tfc.ir.b"].write_text("from tfc.ir import a\nimport tfc.tools.cli\n")
    edges_a = _imports("tfc.ir.a", modules["tfc.ir.a"], modules)
    edges_b = _imports("tfc.ir.b", modules["tfc.ir.b"], {**modules, "tfc.tools.cli": tmp_path})
    assert "tfc.ir.b" in edges_a and "tfc.ir.a" in edges_b  # the cycle, through a function body
    assert "tfc.tools.cli" in edges_b and _rank("tfc.tools.cli") > _rank("tfc.ir.b")
