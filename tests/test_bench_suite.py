"""The benchmark suite (bench/): its tfc part end to end on a tiny model, the report renderer
on fixed inputs, and a missing peer. Peers need not be installed (CI has none)."""

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parent.parent
BENCH = ROOT / "bench"
sys.path.insert(0, str(BENCH))

from suite import data, orchestrate, report, workloads  # noqa: E402
from suite.measure import Plan  # noqa: E402


def numpy_mlp_loss(x, y, weights):
    """Mean sparse softmax cross entropy of a ReLU MLP, written out independently."""
    h = x.astype(np.float64)
    layers = list(zip(weights[0::2], weights[1::2]))
    for i, (kernel, bias) in enumerate(layers):
        h = h @ kernel + bias
        if i < len(layers) - 1:
            h = np.maximum(h, 0.0)
    p = np.exp(h - h.max(axis=1, keepdims=True))
    p /= p.sum(axis=1, keepdims=True)
    return float(-np.log(p[np.arange(len(y)), y]).mean())


@pytest.fixture(scope="module")
def quick_doc(tmp_path_factory):
    out = tmp_path_factory.mktemp("bench")
    proc = subprocess.run(
        [
            sys.executable,
            str(BENCH / "run.py"),
            "--quick",
            "--tiny",
            "--frameworks",
            "tfc",
            "--json",
            str(out / "r.json"),
            "--markdown",
            str(out / "R.md"),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=str(ROOT),
    )
    assert proc.returncode == 0, proc.stderr
    return json.loads((out / "r.json").read_text()), (out / "R.md").read_text()


def test_quick_tfc_run_reports_every_tiny_workload(quick_doc):
    doc, markdown = quick_doc
    names = [w["name"] for w in workloads.tiny()]
    assert [w["name"] for w in doc["workloads"]] == names
    assert doc["quick"] is True and doc["threads"] == [1]
    for name in names:
        rows = {r["label"]: r for r in doc["results"] if r["workload"] == name}
        assert set(rows) == {"tfc", "tfc Session.run"}
        for r in rows.values():
            assert r["status"] == "ok" and r["threads"] == 1 and "profile" not in r
            assert 0 < r["ms"] < 1000 and len(r["round_ms"]) == Plan.quick().rounds
            assert r["ms"] == pytest.approx(float(np.median(r["round_ms"])))
    assert doc["peak"]["gflops"] > 0
    assert "### tiny MLP 12-16-5 training step, b=8" in markdown
    assert "| framework | threads | ms/step | examples/s | GFLOP/s | of FMA peak |" in markdown
    assert "Step-1 loss mismatches: none" in markdown
    assert "tfc-bench-data-" not in markdown + json.dumps(doc)  # no temporary paths kept


def test_step1_loss_equals_numpy(quick_doc):
    doc, _ = quick_doc
    for w in workloads.tiny():
        d = data.make(w)
        x, y = data.batch(d, w, 0)
        expected = numpy_mlp_loss(x, y, d["weights"])
        reported = next(v for v in doc["workloads"] if v["name"] == w["name"])
        assert reported["reference_loss"] == pytest.approx(expected, rel=1e-9)
        for r in doc["results"]:
            if r["workload"] == w["name"]:
                assert r["loss1"] == pytest.approx(expected, rel=1e-5), r["label"]


def test_the_lenet_reference_loss_uses_convolutions():
    w = next(w for w in workloads.full() if w["name"] == "lenet_infer_b1")
    d = data.make(w)
    x = d["x"][:1].astype(np.float64)
    k = d["weights"][0].astype(np.float64)
    padded = np.pad(x, ((0, 0), (2, 2), (2, 2), (0, 0)))
    direct = sum(padded[0, 3 + i, 4 + j, 0] * k[i, j, 0, 2] for i in range(5) for j in range(5))
    conv = data._conv(padded, k)
    assert conv.shape == (1, 28, 28, 6)
    assert conv[0, 3, 4, 2] == pytest.approx(direct)
    assert np.isfinite(data.reference_loss(d, w))


def fixed_doc():
    w = {
        "name": "m",
        "title": "model m, b=4",
        "model": "mlp",
        "sizes": [2, 2],
        "mode": "train",
        "batch": 4,
        "target": {"ratio": 0.8, "ref": "best"},
        "flops": 2_000_000,
        "reference_loss": 2.0,
    }
    row = {
        "workload": "m",
        "status": "ok",
        "threads": 1,
        "round_ms": [1.0, 0.9],
        "load": 0.1,
        "own_cpus": 1.0,
        "version": "x",
    }
    return {
        "command": "python bench/run.py",
        "elapsed_s": 1,
        "date": "today",
        "machine": {"cpu": "CPU", "cores": 2, "python": "3", "versions": ["x 1"]},
        "peak": {"gflops": 10.0, "vector_bytes": 32},
        "workloads": [w],
        "results": [
            dict(row, framework="tfc", label="tfc", ms=1.0, loss1=2.0),
            dict(row, framework="jax", label="JAX jit", ms=2.0, loss1=2.0001),
            dict(row, framework="torch", label="PyTorch eager", ms=4.0, loss1=2.1),
            {
                "workload": "m",
                "framework": "onnxruntime",
                "threads": 1,
                "status": "missing",
                "reason": "No module named 'onnxruntime'",
            },
        ],
    }


def test_report_renders_fixed_results():
    text = report.render(fixed_doc())
    # 2 MFLOP in 1 ms = 2 GFLOP/s = 20% of a 10 GFLOP/s peak; 4 examples / 1 ms = 4,000/s
    assert "| **tfc** | 1 | 1 | 4,000 | 2 | 20.0% | 0.50x | 0.9 | 0.10 | 1.00 | 2 | ok |" in text
    assert "| JAX jit | 1 | 2 | 2,000 | 1 | 10.0% | 1.00x |" in text
    assert "| model m, b=4 | <= 0.80x best peer | 1 ms | JAX jit 2 ms | 0.5x | 0.10 | met |" in text
    assert "PyTorch eager 1t: step-1 loss 2.1, NumPy 2" in text  # 5% off: flagged
    assert "MISMATCH (5.0e-02)" in text
    assert "Not measured: onnxruntime (1 thread): missing: No module named 'onnxruntime'" in text
    lines = text.splitlines()
    assert lines.index(
        "| **tfc** | 1 | 1 | 4,000 | 2 | 20.0% | 0.50x | 0.9 | 0.10 | 1.00 | 2 | ok |"
    ) < lines.index(next(x for x in lines if x.startswith("| JAX jit")))


def test_report_shows_tfc_profiles():
    doc = fixed_doc()
    assert "Where tfc's time goes" not in report.render(doc)
    doc["results"][0]["profile"] = "profile of program p: 3 runs\n  1.0 100% conv1: Conv2D\n"
    text = report.render(doc)
    assert "## Where tfc's time goes\n" in text
    assert "### model m, b=4, 1 thread\n\n```\nprofile of program p: 3 runs\n" in text


def test_report_verdicts_not_met_and_scaling():
    doc = fixed_doc()
    doc["results"][0]["ms"] = 3.0  # tfc now slower than JAX: 1.5x > 0.8x
    doc["results"].append(dict(doc["results"][0], threads=2, ms=2.0, load=0.9))
    text = report.render(doc, {"workloads": ["m"], "speedup": 1.7})
    assert "| 1.5x | 0.10 | not met |" in text
    assert "| workload | target | tfc | reference | ratio | other load (CPUs) | verdict |" in text
    # 3 ms -> 2 ms is 1.5x, under 1.7x, measured while 0.9 other CPUs were busy
    assert "| 1.50x speedup | 0.90 | not met (machine busy) |" in text


def test_a_missing_peer_is_reported_as_missing(tmp_path):
    fake = tmp_path / "fake" / "torch"
    fake.mkdir(parents=True)
    (fake / "__init__.py").write_text("raise ImportError(\"No module named 'torch'\")\n")
    w = workloads.tiny()[0]
    w["data"] = str(data.write(w, tmp_path))
    rows = orchestrate.run_worker(
        "torch",
        1,
        [w],
        Plan.quick(),
        timeout_s=60,
        extra_env={"PYTHONPATH": str(tmp_path / "fake")},
    )
    assert len(rows) == 1
    assert rows[0]["status"] == "missing" and rows[0]["framework"] == "torch"
    assert "No module named 'torch'" in rows[0]["reason"]


def test_block_is_replaced_between_markers_only(tmp_path):
    from suite import marked_block

    path = tmp_path / "performance.md"
    path.write_text(
        f"# x\n\n## Performance\n\n{marked_block.BEGIN}\nold table\n{marked_block.END}\n\n## y\n"
    )
    block = report.summary(fixed_doc())
    assert marked_block.update(path, block)
    text = path.read_text()
    assert "old table" not in text and text.startswith("# x\n\n## Performance\n")
    assert "| model m, b=4 | <= 0.80x best peer | 1 ms | JAX jit 2 ms | 0.5x | 0.10 | met |" in text
    assert text.endswith(f"{marked_block.END}\n\n## y\n")
    assert marked_block.update(path, "new") and "| model m" not in path.read_text()
    path.write_text("no markers\n")
    assert not marked_block.update(path, block) and path.read_text() == "no markers\n"


def _render(saved: Path, out: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [
            sys.executable,
            str(BENCH / "run.py"),
            "--render",
            str(saved),
            "--markdown",
            str(out),
            "--no-docs",
        ],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=str(ROOT),
    )


def test_render_rewrites_the_report_of_a_saved_run(tmp_path):
    saved, out = tmp_path / "results.json", tmp_path / "RESULTS.md"
    saved.write_text(json.dumps(fixed_doc()))
    proc = _render(saved, out)
    assert proc.returncode == 0, proc.stderr
    assert out.read_text() == report.render(fixed_doc(), workloads.SCALING_TARGET) + "\n"
    assert "STEP-1 LOSS MISMATCH: m PyTorch eager 1t" in proc.stderr


def test_render_keeps_what_a_report_holds_around_its_markers(tmp_path):
    """bench/RESULTS.md: the generated report between the markers, hand-written history below."""
    from suite import marked_block

    saved, out = tmp_path / "results.json", tmp_path / "RESULTS.md"
    saved.write_text(json.dumps(fixed_doc()))
    out.write_text(f"{marked_block.BEGIN}\nold report\n{marked_block.END}\n\n## History\nkept\n")
    proc = _render(saved, out)
    assert proc.returncode == 0, proc.stderr
    generated = report.render(fixed_doc(), workloads.SCALING_TARGET).rstrip()
    assert out.read_text() == (
        f"{marked_block.BEGIN}\n{generated}\n{marked_block.END}\n\n## History\nkept\n"
    )
