"""One module per framework. Each exposes RUNNERS: {label: function(workload, data, threads,
plan) -> list of result dicts}; the worker process imports one module. A module whose
framework is not installed raises ImportError on import: the worker reports it as missing.

A result dict: label, ms (median ms per step), round_ms, load (other processes' CPUs), own_cpus,
loss1 (step 1's loss: batch 0, initial weights), version, and optional note.
"""

import math


def result(label: str, timing, loss1: float, version: str, note: str = "") -> dict:
    return {
        "label": label,
        "status": "ok",
        "ms": timing.median * 1e3,
        "round_ms": [s * 1e3 for s in timing.round_seconds],
        "load": timing.load,
        "own_cpus": timing.own,
        "loss1": float(loss1),
        "version": version,
        "note": note,
    }


def cross_entropy(probabilities, labels) -> float:
    """Mean -log p[label]: the 'loss' of an inference run, to compare outputs across peers."""
    total = 0.0
    for p, y in zip(probabilities, labels):
        total -= math.log(max(float(p[int(y)]), 1e-30))
    return total / len(labels)
