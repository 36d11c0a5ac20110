"""A fuzz case: a graph as Python statements over named values, replayable into any tf.Graph.

A case is what the generator made, what the shrinker cuts and what a regression file holds:
statements (`v3 = tf.matmul(v1, v2)`), the arrays of its feeds and variables by name, and the
names it fetches. Statements read only earlier names and the helpers of `namespace`:
`feed("v0")` (a placeholder holding values["v0"]), `var("v1")` (a variable holding
values["v1"] before the step), `op("Atan2", a, b)` (one node of a registered op type, by
tfc.ops.registry.apply_op) and `const(array)`. A statement whose value is an Operation (an
optimizer's minimize) is a target: the run executes it, and the variables after it are compared.
"""

from __future__ import annotations

import ast
import textwrap
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

import tfc as tf
from tfc.ops.registry import apply_op


@dataclass(frozen=True)
class Stmt:
    """`out[0], out[1]... = expr`; kind "feed", "var", "op" or "train" (an Operation)."""

    out: tuple[str, ...]
    expr: str
    kind: str = "op"
    seq: bool = False  # the expression is a sequence (unpacked even into one name)

    def line(self) -> str:
        comma = "," if self.seq and len(self.out) == 1 else ""
        return f"{', '.join(self.out)}{comma} = {self.expr}"

    def reads(self) -> set[str]:
        return {
            n.id for n in ast.walk(ast.parse(self.expr, mode="eval")) if isinstance(n, ast.Name)
        }


@dataclass
class Case:
    stmts: list[Stmt]
    values: dict[str, np.ndarray]  # feeds' and variables' arrays
    fetch: list[str]  # names of tensors to fetch (targets are the "train" statements)
    origin: str = ""  # where it came from: "seed 3, graph 117"
    # per name: how many inexact operations (transcendental functions, sums) lie behind it at
    # most; comparisons allow error in proportion (the generator sets it; a replayed file
    # gives every value the case's largest)
    depth: dict[str, int] = field(default_factory=dict)

    def copy(self, **changes: Any) -> Case:
        fields = {
            "stmts": list(self.stmts),
            "values": dict(self.values),
            "fetch": list(self.fetch),
            "depth": dict(self.depth),
        }
        fields.update(changes)
        return replace(self, **fields)

    @property
    def targets(self) -> list[str]:
        return [s.out[0] for s in self.stmts if s.kind == "train"]

    def max_depth(self) -> int:
        return max(self.depth.values(), default=8)

    def source(self) -> str:
        """The statements as the body of a function `build`."""
        return "\n".join(s.line() for s in self.stmts)


# -- building a case into a graph ----------------------------------------------------------------
def op(op_type: str, *inputs: Any, **attrs: Any) -> Any:
    """One node of a registered op type (no frontend), its first output (all of them when it
    has several)."""
    tensors = [x if isinstance(x, tf.Tensor) else tf.convert_to_tensor(x) for x in inputs]
    operation = apply_op(op_type, tensors, attrs)
    outs = operation.outputs
    return outs[0] if len(outs) == 1 else tuple(outs)


def const(value: Any, dtype: Any = None) -> Any:
    return tf.constant(np.asarray(value) if dtype is None else np.asarray(value, dtype))


@dataclass
class Built:
    """A case built into a graph: its tensors and operations by name."""

    names: dict[str, Any]
    feeds: dict[str, Any]  # name -> placeholder
    variables: dict[str, Any]  # name -> tf.Variable


def namespace(case: Case, built: Built) -> dict[str, Any]:
    def feed(name: str) -> Any:
        value = case.values[name]
        t = tf.placeholder(tf.as_dtype(value.dtype), value.shape, name=name)
        built.feeds[name] = t
        return t

    def var(name: str) -> Any:
        v = tf.Variable(case.values[name], name=name)
        built.variables[name] = v
        return v

    return {"tf": tf, "np": np, "op": op, "const": const, "feed": feed, "var": var}


def build(case: Case, scope: str | None = None) -> Built:
    """Run the case's statements in the default graph (under name scope `scope`)."""
    built = Built({}, {}, {})
    env = namespace(case, built)
    with tf.name_scope(scope) if scope else _nothing():
        for stmt in case.stmts:
            run_stmt(stmt, env)
    built.names = {k: v for k, v in env.items() if k.startswith(("v", "t")) and k[1:].isdigit()}
    return built


def run_stmt(stmt: Stmt, env: dict[str, Any]) -> None:
    exec(stmt.line(), env)  # noqa: S102 - the fuzzer's own statements


class _nothing:
    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: Any) -> None:
        return None


# -- regression files ------------------------------------------------------------------------------
def write_regression(case: Case, path: Path, title: str, details: str) -> None:
    """`path` as a Python module: a docstring saying what failed, the arrays, the fetches and
    `build` holding the statements; load_regression reads it back."""
    lines = [f'"""{title}', "", textwrap.fill(details, 96), '"""', "", "import numpy as np", ""]
    lines.append("VALUES = {")
    for name, value in case.values.items():
        lines.append(f"    {name!r}: {_array_literal(value)},")
    lines += ["}", f"FETCH = {case.fetch!r}", f"DEPTH = {case.max_depth()}", "", ""]
    lines.append("def build(tf, op, const, feed, var):")
    lines += [
        "    " + s.line() + (f"  # {s.kind}" if s.kind == "train" else "") for s in case.stmts
    ]
    lines.append(f"    return {{{', '.join(f'{n!r}: {n}' for n in _returned(case))}}}")
    path.write_text("\n".join(lines) + "\n")


def _returned(case: Case) -> list[str]:
    return list(dict.fromkeys([*case.fetch, *case.targets]))


def _array_literal(value: np.ndarray) -> str:
    dtype = value.dtype.name
    if value.dtype.kind == "f":
        items = np.vectorize(lambda x: repr(float(x)), otypes=[object])(value).tolist()
    else:
        items = value.tolist()
    text = repr(items).replace("'", "")
    return f"np.array({text}, np.{dtype})"


def load_regression(path: Path) -> Case:
    """The case a regression file holds (see write_regression)."""
    tree = ast.parse(path.read_text())
    module: dict[str, Any] = {}
    exec(compile(path.read_text(), str(path), "exec"), module)  # noqa: S102 - our own files
    fn = next(n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "build")
    stmts = []
    for node in fn.body:
        if isinstance(node, ast.Return):
            continue
        if not isinstance(node, ast.Assign) or len(node.targets) != 1:
            raise ValueError(f"{path}:{node.lineno}: build holds only assignments")
        target = node.targets[0]
        names = target.elts if isinstance(target, ast.Tuple) else [target]
        out = tuple(n.id for n in names)  # type: ignore[attr-defined]
        expr = ast.unparse(node.value)
        kind = "op"
        if expr.startswith("feed("):
            kind = "feed"
        elif expr.startswith("var("):
            kind = "var"
        elif ".minimize(" in expr:
            kind = "train"
        stmts.append(Stmt(out, expr, kind, seq=isinstance(target, ast.Tuple)))
    values = {k: np.asarray(v) for k, v in module["VALUES"].items()}
    depth = {n: int(module.get("DEPTH", 8)) for s in stmts for n in s.out}
    return Case(stmts, values, list(module["FETCH"]), origin=path.name, depth=depth)
