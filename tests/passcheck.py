"""Checking one pass: the graph it gets (Before) and the graph it must give (Expected) as text.

A pass test builds a graph with the TF API, makes it a program graph (`program`), runs the
passes that pass needs first as set-up (`front`: prune, specialize, prune), then the one pass
under test (`run`, which checks the graph invariants after it), and compares the result with
the expected graph's text (`assert_graph`, text as `tfc.ir.dump.program_text` writes it). No C
compiler and no pass pipeline: each test takes milliseconds.
"""

from __future__ import annotations

import difflib
import textwrap
from collections.abc import Callable, Sequence

from tfc.ir import dtypes as _dt
from tfc.ir.dump import program_text
from tfc.ir.graph import Graph, get_default_graph
from tfc.ir.program import FeedSpec, make_program_graph
from tfc.passes.prune import prune_graph
from tfc.passes.specialize import specialize_shapes
from tfc.passes.verify import verify_graph


def feed(name: str, shape: tuple[int, ...], dtype: _dt.DType = _dt.float32) -> FeedSpec:
    """Output 0 of node `name`, fed with `shape`."""
    return FeedSpec((name, 0), dtype, tuple(shape))


def program(
    fetches: Sequence[tuple[str, int]],
    feeds: Sequence[FeedSpec] = (),
    targets: Sequence[str] = (),
    graph: Graph | None = None,
) -> Graph:
    """The program graph of a run of the default graph (or `graph`)."""
    return make_program_graph(graph or get_default_graph(), fetches, targets, feeds)


def run(pass_function: Callable[..., Graph], graph: Graph, **options: object) -> Graph:
    """`graph` after the pass, its invariants checked."""
    graph = pass_function(graph, **options)
    verify_graph(graph, after=pass_function.__name__)
    return graph


def front(graph: Graph) -> Graph:
    """The set-up of most passes: fed tensors cut, what the fetches need kept, shapes concrete
    and compile-time values Consts, and what that made dead pruned."""
    for pass_function in (prune_graph, specialize_shapes, prune_graph):
        graph = run(pass_function, graph)
    return graph


def assert_graph(graph: Graph, expected: str) -> None:
    """`graph`'s text is `expected` (indentation common to its lines and blank lines around it
    ignored); the message shows the difference and the whole text."""
    want = textwrap.dedent(expected).strip("\n") + "\n"
    got = program_text(graph)
    if got != want:
        diff = difflib.unified_diff(
            want.splitlines(), got.splitlines(), "expected", "got", lineterm=""
        )
        raise AssertionError("\n".join(diff) + "\n\nthe whole graph:\n" + got)
