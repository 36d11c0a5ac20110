"""Checking ops: many cases compiled into one program, compared three ways.

Each case is a tensor plus the value NumPy says it should have. One Session.run compiles (with
no optimization pass, so every op's own kernel runs) and runs all cases of a batch (a gcc run
costs about a second, so batching keeps the suite fast);
the interpreter runs the same graph with the ops' references. A case passes when the compiled
value matches the reference and both match the independent NumPy expectation, dtype and shape
included.
"""

from __future__ import annotations

from typing import Any

import numpy as np

import tfc
from tfc.reference.interp import Interpreter

# relative tolerance per dtype: tight enough that a wrong index or a wrong formula fails
RTOL = {"float32": 1e-5, "float64": 1e-12, "float16": 1e-3}
ATOL = {"float32": 1e-6, "float64": 1e-12, "float16": 1e-4}


def assert_same(
    got: Any, want: Any, rtol: float | None = None, atol: float | None = None, what: str = ""
) -> None:
    got, want = np.asarray(got), np.asarray(want)
    if want.dtype == object and isinstance(got[()] if got.ndim == 0 else None, bytes):
        got = np.array(got[()], dtype=object)  # a fetched string scalar comes back as bytes
    assert got.dtype == want.dtype, f"{what}: dtype {got.dtype}, expected {want.dtype}"
    assert got.shape == want.shape, f"{what}: shape {got.shape}, expected {want.shape}"
    if got.dtype == tfc.bfloat16.np and got.dtype.kind == "V":  # ml_dtypes: compare its bits
        got, want = got.view(np.uint16), want.view(np.uint16)
    if got.dtype.kind == "f":
        rtol = RTOL[got.dtype.name] if rtol is None else rtol
        atol = ATOL[got.dtype.name] if atol is None else atol
        np.testing.assert_allclose(got, want, rtol=rtol, atol=atol, err_msg=what, equal_nan=True)
    else:
        np.testing.assert_array_equal(got, want, err_msg=what)


class CaseBatch:
    """Cases built in one graph, compiled once. Build inside `with batch.graph.as_default():`."""

    def __init__(self) -> None:
        self.graph = tfc.Graph()
        self.cases: dict[str, tuple] = {}
        self.feed_dict: dict = {}
        self._results: tuple | None = None
        self._error: Exception | None = None  # a failed compile fails every case, once

    def feed(self, value: np.ndarray, shape: Any = "same") -> tfc.Tensor:
        """A placeholder fed with `value` (shape given, or `None` dims to test specialization)."""
        value = np.asarray(value)
        ph = tfc.placeholder(tfc.as_dtype(value.dtype), value.shape if shape == "same" else shape)
        self.feed_dict[ph] = value
        return ph

    def add(
        self,
        case_id: str,
        tensor: tfc.Tensor,
        expected: Any,
        rtol: float | None = None,
        atol: float | None = None,
    ) -> None:
        assert case_id not in self.cases, f"duplicate case id {case_id}"
        self.cases[case_id] = (tensor, np.asarray(expected), rtol, atol)

    def ids(self) -> list[str]:
        return list(self.cases)

    def results(self) -> tuple[dict, dict]:
        if self._error is not None:
            raise self._error
        if self._results is None:
            keys = list(self.cases)
            tensors = [self.cases[k][0] for k in keys]
            try:
                # no optimization pass: folding would turn constant-input cases into constants
                # and the op's C kernel would never run (the passes have tests of their own)
                options = tfc.CompileOptions(passes=[])
                with tfc.Session(graph=self.graph, config=options) as sess:
                    compiled = sess.run(tensors, feed_dict=self.feed_dict)
                reference = Interpreter(self.graph).run(tensors, feed_dict=self.feed_dict)
            except Exception as e:
                self._error = e
                raise
            self._results = (dict(zip(keys, compiled)), dict(zip(keys, reference)))
        return self._results

    def check(self, case_id: str) -> None:
        _, expected, rtol, atol = self.cases[case_id]
        compiled, reference = self.results()
        assert_same(reference[case_id], expected, rtol, atol, f"{case_id}: reference vs NumPy")
        assert_same(
            compiled[case_id], reference[case_id], rtol, atol, f"{case_id}: compiled vs reference"
        )
