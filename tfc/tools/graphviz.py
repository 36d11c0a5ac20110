"""Pictures of graphs: Graphviz DOT with name scopes collapsed into boxes, SVG, an HTML page.

Every name scope (`gradients/`, `Adam/`, `hidden1/`) is drawn as one box holding its ops, with
the tensors that cross its border as edges, so a training graph of hundreds of ops reads as a
few dozen boxes; `expand` opens scopes (a cluster holding their ops and their own, still
collapsed, sub-scopes). Ops show their type, output dtypes and shapes, and device; ops only Python
runs (tf.py_func, string ops, shapes that depend on values) are dashed and say so. DOT is
written here; SVG needs Graphviz's `dot` program.
"""

from __future__ import annotations

import html
import os
import shutil
import subprocess
from collections import Counter
from collections.abc import Iterable, Sequence
from pathlib import Path

from tfc.ir.graph import CONTROL, Graph
from tfc.ir.tensor_shape import shape_str
from tfc.ops.registry import python_reason

__all__ = ["GraphvizNotFound", "graph_dot", "graph_html", "graph_svg", "write_graph"]

MAX_PARALLEL_EDGES = 3  # more tensors than this between two boxes are drawn as one edge
EXPAND_ALL = "all"
_STYLE = {  # op type -> node attributes; others are plain rounded boxes
    "Feed": 'shape=invhouse style=filled fillcolor="#c8e6c9"',
    "Placeholder": 'shape=invhouse style=filled fillcolor="#c8e6c9"',
    "PlaceholderWithDefault": 'shape=invhouse style=filled fillcolor="#c8e6c9"',
    "VariableV2": 'shape=cylinder style=filled fillcolor="#fff9c4"',
    "Const": 'shape=box style="rounded,filled" fillcolor="#eeeeee" fontcolor="#555555"',
    "NoOp": 'shape=octagon style=filled fillcolor="#eeeeee"',
}
_HEAVY = 'shape=box style="rounded,filled" fillcolor="#ffccbc"'  # matrix products, convolutions
_UPDATE = 'shape=box style="rounded,filled" fillcolor="#ffe0b2"'  # variable updates
_SCOPE = 'shape=box3d style=filled fillcolor="#bbdefb"'
# ops only Python runs (py_func, strings, value-dependent shapes): a Session's Python stages
_PYTHON = 'shape=box style="rounded,filled,dashed" fillcolor="#e1bee7"'


class GraphvizNotFound(RuntimeError):
    """Graphviz's `dot` is not installed, so no SVG can be drawn (DOT still can)."""


def _quote(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _label(lines: Iterable[str]) -> str:
    return _quote("\n".join(lines)).replace("\n", "\\n")


def _node_style(op: str) -> str:
    if op in _STYLE:
        return _STYLE[op]
    if "MatMul" in op or op.startswith(("Conv", "DepthwiseConv")):
        return _HEAVY
    if op.startswith(("Apply", "Assign", "ResourceApply")):
        return _UPDATE
    return 'shape=box style="rounded"'


class _Layout:
    """Which drawn unit (an op or a collapsed scope) each node belongs to, and the clusters of
    the expanded scopes."""

    def __init__(self, graph: Graph, expand: Sequence[str]) -> None:
        self.graph = graph
        self.names = sorted(graph.node_names(), key=lambda n: graph.node(n)["id"])
        self.expand_all = EXPAND_ALL in expand
        expanded: set[str] = set()
        for scope in expand:
            parts = scope.strip("/").split("/")
            expanded.update("/".join(parts[: k + 1]) for k in range(len(parts)))
        self.expanded = expanded
        unit = {n: self._unit_of(n) for n in self.names}
        members = Counter(u for u in unit.values() if u.startswith("scope:"))
        # a scope holding one op is drawn as that op: a box of one says nothing
        self.unit = {n: (n if members.get(u) == 1 else u) for n, u in unit.items()}
        # the expanded scope whose cluster draws each unit ("" for the top level)
        self.cluster = {
            self.unit[n]: u[len("scope:") :].rpartition("/")[0] if u != n else n.rpartition("/")[0]
            for n, u in unit.items()
        }
        self.members: dict[str, list[str]] = {}
        for n in self.names:
            self.members.setdefault(self.unit[n], []).append(n)
        self.ids = {u: f"u{k}" for k, u in enumerate(self.members)}

    def _unit_of(self, name: str) -> str:
        parts = name.split("/")
        for k in range(1, len(parts)):
            scope = "/".join(parts[:k])
            if not self.expand_all and scope not in self.expanded:
                return f"scope:{scope}"
        return name


def _op_lines(graph: Graph, name: str, cluster: str) -> list[str]:
    node = graph.node(name)
    outs = [f"{d.name}{shape_str(s)}" for d, s in zip(node["dtypes"], node["shapes"])]
    if len(outs) > 3:
        outs = [*outs[:2], f"... {len(outs)} outputs"]
    lines = [node["op"], name[len(cluster) + 1 :] if cluster else name, *outs]
    if node["device"]:
        lines.append(node["device"])
    if python_reason(graph, name):
        lines.append("runs in Python")
    return lines


def _scope_lines(graph: Graph, scope: str, members: list[str]) -> list[str]:
    types = Counter(graph.op_type(n) for n in members)
    common = ", ".join(f"{c} {t}" for t, c in types.most_common(3))
    more = ", ..." if len(types) > 3 else ""
    lines = [f"{scope}/", f"{len(members)} ops: {common}{more}"]
    devices = {graph.node(n)["device"] for n in members}
    if len(devices) == 1 and "" not in devices:
        lines.append(devices.pop())
    return lines


def graph_dot(graph: Graph, expand: Sequence[str] = (), title: str | None = None) -> str:
    """The graph in Graphviz DOT: name scopes collapsed into boxes except those in `expand`
    (a scope name such as "gradients" or "gradients/hidden1", or "all")."""
    layout = _Layout(graph, expand)
    lines = [
        "digraph tfc {",
        '  graph [rankdir=TB fontname="Helvetica" fontsize=11 nodesep=0.25 ranksep=0.35'
        + (f" label={_quote(title)} labelloc=t" if title else "")
        + "]",
        '  node [fontname="Helvetica" fontsize=10 margin="0.08,0.03"]',
        '  edge [fontname="Helvetica" fontsize=8 color="#555555"]',
    ]
    children: dict[str, list[str]] = {}
    for unit in layout.members:
        children.setdefault(layout.cluster[unit], []).append(unit)
    clusters = sorted({c for c in children if c}, key=lambda c: (c.count("/"), c))
    for cluster in clusters:  # every enclosing scope of a cluster is a cluster too
        parent = cluster.rpartition("/")[0]
        while parent and parent not in children:
            children[parent] = []
            parent = parent.rpartition("/")[0]

    def emit(cluster: str, indent: str) -> None:
        for unit in children.get(cluster, []):
            members = layout.members[unit]
            if unit.startswith("scope:"):
                scope = unit[len("scope:") :]
                label = _scope_lines(graph, scope, members)
                tooltip = "\n".join(members[:40]) + ("\n..." if len(members) > 40 else "")
                style = _SCOPE
            else:
                label = _op_lines(graph, unit, cluster)
                tooltip, style = unit, _node_style(graph.op_type(unit))
                if python_reason(graph, unit):
                    tooltip, style = f"{unit}: {python_reason(graph, unit)}", _PYTHON
            lines.append(
                f"{indent}{layout.ids[unit]} [label={_label(label)} {style} "
                f"id={_quote(layout.ids[unit])} tooltip={_label([tooltip])}]"
            )
        subclusters = [c for c in children if c and c.rpartition("/")[0] == cluster]
        for sub in sorted(subclusters):
            lines.append(f"{indent}subgraph {_quote('cluster_' + sub)} {{")
            lines.append(
                f'{indent}  graph [label={_quote(sub + "/")} style="rounded,dashed" '
                'color="#1565c0" fontcolor="#1565c0"]'
            )
            emit(sub, indent + "  ")
            lines.append(f"{indent}}}")

    emit("", "  ")
    lines += _edge_lines(graph, layout)
    lines.append("}")
    return "\n".join(lines) + "\n"


def _edge_lines(graph: Graph, layout: _Layout) -> list[str]:
    data: dict[tuple[str, str], list[tuple[str, int]]] = {}
    control: set[tuple[str, str]] = set()
    for u, v, key, attrs in graph.nx.edges(keys=True, data=True):
        a, b = layout.unit[u], layout.unit[v]
        if a == b:
            continue
        if key == CONTROL:
            control.add((a, b))
            continue
        tensors = data.setdefault((a, b), [])
        if (u, attrs["out"]) not in tensors:
            tensors.append((u, attrs["out"]))
    order = {unit: k for k, unit in enumerate(layout.members)}
    lines = []
    for (a, b), tensors in sorted(data.items(), key=lambda e: (order[e[0][0]], order[e[0][1]])):
        ids = f"  {layout.ids[a]} -> {layout.ids[b]}"
        if len(tensors) > MAX_PARALLEL_EDGES:
            names = [f"{n}:{i}" for n, i in tensors]
            lines.append(
                f"{ids} [label={_quote(f'{len(tensors)} tensors')} penwidth=2 "
                f"tooltip={_label(names)}]"
            )
            continue
        for n, i in tensors:
            shape = shape_str(graph.node(n)["shapes"][i])
            lines.append(f"{ids} [label={_quote(shape)} tooltip={_quote(f'{n}:{i}')}]")
    for a, b in sorted(control - set(data), key=lambda e: (order[e[0]], order[e[1]])):
        lines.append(f"  {layout.ids[a]} -> {layout.ids[b]} [style=dashed arrowhead=odot]")
    return lines


def dot_program() -> str:
    """The path of Graphviz's `dot`, or GraphvizNotFound saying what to do."""
    path = shutil.which("dot")
    if path is None:
        raise GraphvizNotFound(
            "drawing SVG needs Graphviz's `dot` program, which is not on PATH: install "
            "Graphviz (Debian/Ubuntu: apt-get install graphviz; macOS: brew install graphviz), "
            "or write DOT instead (-o graph.dot) and render it elsewhere"
        )
    return path


def graph_svg(graph: Graph, expand: Sequence[str] = (), title: str | None = None) -> str:
    """The picture of `graph_dot` as SVG, drawn by Graphviz's `dot`."""
    return _render_svg(graph_dot(graph, expand, title))


def _render_svg(dot_text: str) -> str:
    proc = subprocess.run(
        [dot_program(), "-Tsvg"], input=dot_text, capture_output=True, text=True, timeout=300
    )
    if proc.returncode != 0:
        raise RuntimeError(f"Graphviz's dot failed: {proc.stderr.strip()}")
    return proc.stdout


def graph_html(graph: Graph, expand: Sequence[str] = (), title: str | None = None) -> str:
    """A self-contained page (no scripts, no network): the SVG picture and an index of the
    scopes and ops, each op linked to the node or box drawing it."""
    layout = _Layout(graph, expand)
    svg = _render_svg(graph_dot(graph, expand, title))
    svg = svg[svg.index("<svg") :]  # the XML prolog and the DOCTYPE do not belong in HTML
    esc = html.escape
    heading = esc(title or "tfc graph")
    drawn = len(layout.members)
    scopes = sorted({u[len("scope:") :] for u in layout.members if u.startswith("scope:")})
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        f"<title>{heading}</title>",
        "<style>body{font-family:Helvetica,Arial,sans-serif;margin:1.5em}"
        ".picture{overflow:auto;border:1px solid #ccc;padding:.5em}"
        "table{border-collapse:collapse;font-size:13px}td,th{padding:2px 10px;text-align:left}"
        "tr:nth-child(even){background:#f4f4f4}code{font-size:12px}</style>",
        "</head><body>",
        f"<h1>{heading}</h1>",
        f"<p>{len(layout.names)} ops drawn as {drawn} nodes; collapsed scopes: "
        f"{esc(', '.join(s + '/' for s in scopes)) or 'none'} (tfc graph --expand SCOPE opens "
        "one).</p>",
        f'<div class="picture">{svg}</div>',
        "<h2>Index</h2>",
    ]
    groups: dict[str, list[str]] = {}
    for name in layout.names:
        scope = name.rpartition("/")[0]
        groups.setdefault(scope, []).append(name)
    for scope in sorted(groups):
        names = groups[scope]
        parts.append(
            f"<details><summary><code>{esc(scope + '/' if scope else '(top level)')}</code> "
            f"({len(names)} ops)</summary><table><tr><th>op</th><th>type</th><th>outputs</th>"
            "<th>device</th></tr>"
        )
        for name in names:
            node = graph.node(name)
            outs = ", ".join(
                f"{d.name}{shape_str(s)}" for d, s in zip(node["dtypes"], node["shapes"])
            )
            link = f"#{layout.ids[layout.unit[name]]}"
            parts.append(
                f'<tr><td><a href="{link}"><code>{esc(name)}</code></a></td>'
                f"<td>{esc(node['op'])}</td><td><code>{esc(outs)}</code></td>"
                f"<td>{esc(node['device'])}</td></tr>"
            )
        parts.append("</table></details>")
    parts.append("</body></html>")
    return "\n".join(parts) + "\n"


FORMATS = {".dot": graph_dot, ".gv": graph_dot, ".svg": graph_svg, ".html": graph_html}


def write_graph(
    graph: Graph,
    path: str | os.PathLike,
    expand: Sequence[str] = (),
    title: str | None = None,
) -> Path:
    """Write the picture of `graph` to `path`, in the format its suffix names (.dot, .svg,
    .html)."""
    path = Path(path)
    render = FORMATS.get(path.suffix.lower())
    if render is None:
        raise ValueError(f"cannot tell the format of '{path}': name a .dot, .svg or .html file")
    text = render(graph, expand, title)
    path.write_text(text, encoding="utf-8")
    return path
