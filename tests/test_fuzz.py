"""The differential fuzzer in the suite: a fixed-seed batch of random graphs, the regressions it
found, and that it finds and shrinks a planted bug (tests/fuzz/; its long mode:
`python -m tests.fuzz --minutes N`)."""

import time
from pathlib import Path

import pytest
from fuzz.case import load_regression
from fuzz.check import Report, check_cases, check_one, check_rotating
from fuzz.graphs import generate, one_per_op
from fuzz.ops import EXCLUDED, REACHED, elementwise, elementwise_ops, unlisted_ops
from fuzz.run import CONFIGS, configs
from fuzz.shrink import shrink

from tfc.ops.registry import REGISTRY

SEED = 19
GRAPHS = 300  # the benchmark-marked batch; the default suite checks the first SMALL of them
SMALL = 24
REGRESSIONS = sorted((Path(__file__).parent / "fuzz" / "regressions").glob("*.py"))


def _explain(report: Report) -> str:
    return "\n\n".join(f"{f.summary()}\n{f.case.source()}" for f in report.findings)


def test_every_registered_op_is_generated_reached_or_excluded_with_a_reason():
    assert unlisted_ops() == [], "add a row to tests/fuzz/ops.py for each"
    assert set(REACHED) <= set(REGISTRY) and set(EXCLUDED) <= set(REGISTRY)


def test_every_row_makes_its_op_and_every_op_agrees_with_the_interpreter():
    made, failed = one_per_op(SEED)
    assert failed == {}, failed
    report = Report()
    check_cases(list(made.values()), [CONFIGS["all"]], report)
    assert not report.findings, _explain(report)


def test_probing_finds_each_element_wise_ops_domain_and_discontinuity():
    assert elementwise("Log").domains == ("pos",)
    assert elementwise("Acosh").domains == ("gt1",)
    assert elementwise("Atanh").domains == ("unit",)
    assert elementwise("RealDiv").domains == ("any", "pos")
    assert elementwise("Floor").discontinuous and elementwise("Less").discontinuous
    assert not elementwise("Tanh").discontinuous and not elementwise("Relu").discontinuous
    assert elementwise("FloorMod").int_domains == ("any", "nonzero")
    assert "Add" in elementwise_ops() and "ReluGrad" not in elementwise_ops()


@pytest.mark.parametrize(
    "graphs", [SMALL, pytest.param(GRAPHS, marks=pytest.mark.benchmark)], ids=["small", "full"]
)
def test_a_fixed_batch_of_random_graphs_agrees_with_the_interpreter_everywhere(graphs):
    # every graph through all optimizations (-O3 -march=native, as sessions build), and each
    # other configuration (each pass off, none, generic, embed) through a sixth of them
    start = time.monotonic()
    cases = [generate(SEED, i) for i in range(graphs)]
    others = [c for c in configs("-O0") if c.name != "all"]
    report = Report()
    check_rotating(cases, CONFIGS["all"], others, report)
    seconds = time.monotonic() - start
    print(f"{report.graphs} graphs in {seconds:.1f} s: {report.seconds}")
    assert report.graphs == graphs
    assert not report.findings, _explain(report)


@pytest.mark.parametrize("config", [c.name for c in configs()])
def test_the_regressions_the_fuzzer_found_stay_fixed(config):
    cases = [load_regression(path) for path in REGRESSIONS]
    report = Report()
    check_cases(cases, [CONFIGS[config]], report)
    assert not report.findings, _explain(report)


def test_a_planted_bug_is_found_and_shrunk_to_a_few_statements(monkeypatch):
    # Sub's C expression with its operands swapped: the interpreter's NumPy reference is right
    cases = []
    for i in range(400):
        case = generate(7, i)
        if 'op("Sub"' in case.source() and len(case.stmts) >= 5:
            cases.append(case)
        if len(cases) == 3:
            break
    exprs = REGISTRY["Sub"].expr.exprs
    for kind in list(exprs):
        monkeypatch.setitem(exprs, kind, exprs[kind].replace("{0}", "{x}").replace("{1}", "{0}")
                            .replace("{x}", "{1}"))  # fmt: skip
    unoptimized = next(c for c in configs("-O0") if c.name == "none")
    found = [f for f in (check_one(c, unoptimized) for c in cases) if f is not None]
    assert found, "swapping Sub's operands in C went unnoticed"
    small = shrink(found[0], budget=60)
    assert len(small.stmts) <= 4 and 'op("Sub"' in small.source(), small.source()
    assert check_one(small, unoptimized) is not None
