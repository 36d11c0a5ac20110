"""Where a compiled program's time goes, from the command line and for scripts.

`profile(sess, fetches, feed_dict, runs=100)` is `sess.profile(...)`: the profile build of the
program `sess.run(fetches, feed_dict)` runs, every step timed, as a `Profile` (per graph node its
op types, seconds per run, share and GFLOP/s; see tfc/client/profiling.py). `profile_model` does
the same for one signature of a model file (`tfc inspect MODEL.py --profile`).
`time_runs(sess, fetches, feed_dict, runs)` is `sess.time_runs(...)`: the default build called
`runs` times by a loop in C. Both run the program for real: a training step trains.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from tfc.client.profiling import KernelTime, Profile
from tfc.client.session import Session

__all__ = ["KernelTime", "Profile", "profile", "profile_model", "time_runs"]


def profile(
    sess: Session, fetches: Any, feed_dict: Any = None, runs: int = 100, warmup: int = 2
) -> Profile:
    """Run the profile build of `sess.run(fetches, feed_dict)`'s program `warmup` + `runs`
    times with the same feeds (iterators are read once) and time each of its kernels."""
    return sess.profile(fetches, feed_dict, runs=runs, warmup=warmup)


def profile_model(
    model: Any,
    signature: str | None = None,
    batch: int = 32,
    options: Any = None,
    runs: int = 100,
    seed: int = 0,
) -> Profile:
    """Profile one signature of a model file (see `pydoc tfc.aot`) at `batch`: its variables
    initialized, its features standard normal (seeded), its labels 0."""
    from tfc.aot.signatures import build_signatures, load_signatures_function
    from tfc.variables import global_variables_initializer

    name, fn = load_signatures_function(model, batch)
    sigs = build_signatures(name, fn)
    with sigs.graph.as_default():
        init = global_variables_initializer()
    signature = signature or ("train" if sigs.train is not None else "predict")
    sig = getattr(sigs, signature)
    if sig is None:
        raise ValueError(f"model {name} has no '{signature}' signature")
    rng = np.random.default_rng(seed)

    def value(tensor: Any) -> np.ndarray:
        shape = (batch, *tensor.shape.as_list()[1:])
        dtype = tensor.dtype.np
        if np.issubdtype(dtype, np.floating):
            return rng.standard_normal(shape).astype(dtype)
        return np.zeros(shape, dtype)  # class 0: a valid label for any number of classes

    feeds = {sig.features: value(sig.features)}
    if signature == "train":
        if sig.labels is not None:
            feeds[sig.labels] = value(sig.labels)
        fetches: Any = [sig.loss, sig.train_op]
    else:
        fetches = list(sig.outputs.values())
    with Session(graph=sigs.graph, config=options) as sess:
        sess.run(init)
        return profile(sess, fetches, feeds, runs=runs)


def time_runs(sess: Session, fetches: Any, feed_dict: Any = None, runs: int = 100) -> float:
    """Seconds per run of `sess.run(fetches, feed_dict)`'s program (the default build), run
    `runs` times by a loop in C with the same feeds; the fetched values are not returned."""
    return sess.time_runs(fetches, feed_dict, runs=runs)
