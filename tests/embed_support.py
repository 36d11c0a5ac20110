"""Helpers of tests/test_embed*.py: a model's embeddable library with the test program of
tests/embed/harness.c, the session's reference numbers, and the programs' output words."""

from __future__ import annotations

import subprocess
from pathlib import Path

import numpy as np

import tfc
from tfc.aot.embed import EMBED_CFLAGS, EmbeddedModel, compile_embed, library_sources
from tfc.aot.signatures import build_signatures, load_signatures_function
from tfc.ir.graph import GraphKeys
from tfc.variables import variables_initializer

ROOT = Path(__file__).resolve().parent.parent
SAMPLES = ROOT / "samples"
HARNESS = Path(__file__).resolve().parent / "embed" / "harness.c"
CHECKS = Path(__file__).resolve().parent / "embed" / "checks.c"
WARNINGS = ["-Wall", "-Wextra", "-Werror", "-pedantic"]
STEPS = 3
LR = 0.05


def inputs(batch: int, n_features: int, n_classes: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(batch, n_features)).astype(np.float32)
    y = rng.integers(0, n_classes, size=batch)
    return x, y


def _c_floats(x: np.ndarray) -> str:
    return ", ".join(f"{float.hex(float(v))}f" for v in x.ravel())


def compile_with_harness(
    model: str, outdir: Path, batch: int, x: np.ndarray, y: np.ndarray, **kw
) -> EmbeddedModel:
    """The library of samples/`model`, and OUTDIR/harness_data.h for these inputs."""
    m = compile_embed(SAMPLES / model, outdir, batch, **kw)
    P, M = m.prefix, m.macro
    out_name = m.programs["predict"].output_names[0].upper()
    n = f"INT64_C({x.shape[0]})" if m.max_batch else f"{M}BATCH"  # predict's examples
    lines = [
        '#include "model.h"',
        f"#define H_TRAIN {int(m.trainable)}",
        f"#define H_STATE {int(m.stateful)}",
        f"#define H_STEPS {STEPS}",
        f"#define H_ARENA_BYTES {M}ARENA_BYTES",
        f"#define H_STATE_BYTES {M}STATE_BYTES",
        f"#define H_OUT_COUNT ({x.shape[0] if m.max_batch else 1} * "
        f"{M}PREDICT_OUT_{out_name}_COUNT)",
        f"static const float h_features[] = {{ {_c_floats(x)} }};",
    ]
    blob = f"{P}weights_blob, sizeof {P}weights_blob"
    init = f"{P}init(s, sb, {blob})" if m.external_weights else f"{P}init(s, sb)"
    lines.append(f"#define H_INIT(s, sb) {init}")
    if m.trainable:
        label = m.programs["train"].lowered.feeds[1].dtype.c_type
        lines += [
            f"static const {label} h_labels[] = {{ {', '.join(str(int(v)) for v in y)} }};",
            f"#define H_TRAIN_STEP(s, sb, x, l, loss, a, ab) "
            f"{P}train_step(s, sb, {M}BATCH, x, l, {LR}f, loss, a, ab)",
            f"#define H_PREDICT(s, sb, x, y, a, ab) {P}predict(s, sb, {n}, x, y, a, ab)",
        ]
    elif m.stateful:
        lines.append(f"#define H_PREDICT(s, sb, x, y, a, ab) {P}predict(s, sb, {n}, x, y, a, ab)")
    elif m.external_weights:
        lines.append(f"#define H_PREDICT(s, sb, x, y, a, ab) {P}predict({blob}, {n}, x, y, a, ab)")
    else:
        lines.append(f"#define H_PREDICT(s, sb, x, y, a, ab) {P}predict({n}, x, y, a, ab)")
    if m.external_weights:
        blob = np.frombuffer((outdir / "weights.bin").read_bytes(), dtype="<u8")
        items = ", ".join(f"UINT64_C({int(v)})" for v in blob) or "0"
        lines.insert(1, f"static const uint64_t {P}weights_blob[] = {{ {items} }};")
    (outdir / "harness_data.h").write_text("\n".join(lines) + "\n")
    return m


def reference_words(model: str, batch: int, x, y, trainable: bool = True) -> list[np.ndarray]:
    """What the harness emits, computed by tfc.Session: predict; then per step the loss and
    predict again."""
    _, fn = load_signatures_function(SAMPLES / model)
    sigs = build_signatures("ref", fn)
    g = sigs.graph
    with g.as_default():
        init = variables_initializer(
            g.get_collection(GraphKeys.GLOBAL_VARIABLES)
            + g.get_collection(GraphKeys.LOCAL_VARIABLES)
        )
    out = []
    pr = sigs.predict
    prob = next(iter(pr.outputs.values()))
    with tfc.Session(graph=g) as sess:
        sess.run(init)
        out.append(sess.run(prob, {pr.features: x}).ravel())
        if trainable:
            tr = sigs.train
            feed = {tr.features: x, tr.labels: y.astype(tr.labels.dtype.np)}
            for name, t in tr.hyperparameters.items():
                if name == "learning_rate":
                    feed[t] = np.float32(LR)
            for _ in range(STEPS):
                loss, _ = sess.run([tr.loss, tr.train_op], feed)
                out.append(np.array([loss], np.float32))
                out.append(sess.run(prob, {pr.features: x}).ravel())
    return out


def split_words(words: list[int], shapes: list[int]) -> list[np.ndarray]:
    bits = np.array(words, dtype=np.uint32)
    assert len(bits) == sum(shapes), f"{len(bits)} words, expected {sum(shapes)}"
    return np.split(bits.view(np.float32), np.cumsum(shapes)[:-1])


def parse_stdout(text: str) -> list[int]:
    lines = text.split()
    assert "end" in lines and lines[lines.index("end") + 1] == "0", text[-500:]
    return [int(w, 16) for w in lines[: lines.index("end")]]


def build(cc: list[str], outdir: Path, flags: list[str], exe: str, extra: list[str] = ()) -> Path:
    """Compile model.c and the harness with `cc` in OUTDIR into OUTDIR/`exe`."""
    sources = ["model.c", *library_sources(), str(HARNESS)]
    cmd = [*cc, *EMBED_CFLAGS, *WARNINGS, *flags, *sources, *extra, "-o", exe]
    proc = subprocess.run(cmd, cwd=outdir, capture_output=True, text=True)
    assert proc.returncode == 0, f"{' '.join(cmd)}\n{proc.stderr}"
    return outdir / exe
