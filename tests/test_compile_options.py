"""Every optimization pass can be switched off, and the numbers do not change: on every sample
model, the training step (loss and every updated variable, over several steps) and the
forward pass give the same results with all passes, with none, and with each one off (each
pass off on one of the models)."""

from pathlib import Path

import numpy as np
import pytest

import tfc as tf
from tfc.aot.signatures import build_signatures, load_signatures_function
from tfc.compiler import OPTIMIZATIONS, pass_name

SAMPLES = Path(__file__).resolve().parent.parent / "samples"
MODELS = sorted(SAMPLES.glob("*_model.py"))
CONFIGS = {"all": tf.CompileOptions(), "none": tf.CompileOptions(passes=[])} | {
    f"no-{p}": tf.CompileOptions(disable=[p]) for p in map(pass_name, OPTIMIZATIONS)
}
STEPS = 3


# gcc at -O1 (conftest.quick_builds): the passes, not gcc, are under test here, and -O1 gives
# every compared number bit for bit as -O3 does (checked on all five models, all passes and none)
pytestmark = pytest.mark.usefixtures("quick_builds")


def _run(path, options, batch=8):
    """Losses and variables after STEPS training steps, and the predictions, for one config."""
    sigs = build_signatures(*load_signatures_function(path))
    train, predict = sigs.train, sigs.predict
    rng = np.random.default_rng(0)
    shape = [batch, *train.features.shape.as_list()[1:]]
    x = rng.normal(size=shape).astype(train.features.dtype.np)
    y = rng.integers(0, 3, size=batch).astype(train.labels.dtype.np)
    with tf.Session(graph=sigs.graph, config=options) as sess:
        with sigs.graph.as_default():
            sess.run(tf.global_variables_initializer())
            variables = tf.global_variables()
        feed = {train.features: x, train.labels: y}
        losses = [sess.run([train.loss, train.train_op], feed)[0] for _ in range(STEPS)]
        state = {v.op.name: sess.read_variable(v.op.name) for v in variables}
        outputs = sess.run(predict.outputs, {predict.features: x})
    return losses, state, outputs


def _configs_of(path) -> list[str]:
    """All passes, and each pass off on one model in turn (every pass is switched off on some
    sample; the differential fuzzer, tests/fuzz, switches each off on random graphs too)."""
    i = MODELS.index(path)
    off = [name for name in CONFIGS if name.startswith("no-")]
    return ["all", *(name for k, name in enumerate(off) if k % len(MODELS) == i)]


@pytest.mark.parametrize("path", MODELS, ids=lambda p: p.stem)
def test_passes_on_and_off_give_the_same_numbers(path):
    reference = _run(path, CONFIGS["none"])
    for name in _configs_of(path):
        options = CONFIGS[name]
        losses, state, outputs = _run(path, options)
        # folding evaluates constants with NumPy, which may round a last bit differently
        tol = dict(rtol=1e-6, atol=1e-7)
        np.testing.assert_allclose(losses, reference[0], **tol, err_msg=f"{name}: losses")
        assert state.keys() == reference[1].keys()
        for var, value in state.items():
            np.testing.assert_allclose(value, reference[1][var], **tol, err_msg=f"{name}: {var}")
        for key, value in outputs.items():
            np.testing.assert_allclose(value, reference[2][key], **tol, err_msg=f"{name}: {key}")
