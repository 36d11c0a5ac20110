"""TF1's ConfigProto and RunOptions for Session(config=, options=), and the thread settings."""

from __future__ import annotations

import os
from dataclasses import dataclass, field, replace
from typing import Any

from tfc.compiler import CompileOptions
from tfc.io.config_pb import GPUOptions, GraphOptions, OptimizerOptions

__all__ = ["ConfigProto", "RunOptions", "get_num_threads", "set_num_threads"]

_num_threads = 0  # set_num_threads's count; 0: the environment's TFC_NUM_THREADS, else 1


def set_num_threads(n: int) -> None:
    """Threads the compiled programs split large kernels (GEMMs) over, from their next run on;
    0 goes back to the default: the TFC_NUM_THREADS environment variable, else 1. A session's
    ConfigProto(intra_op_parallelism_threads=n) overrides it for that session. Results do not
    depend on the count: the work is split by output columns, never inside a sum."""
    global _num_threads
    if isinstance(n, bool) or not isinstance(n, int) or not 0 <= n <= 64:
        raise ValueError(f"set_num_threads: expected an int in [0, 64], got {n!r}")
    _num_threads = n


def get_num_threads() -> int:
    """The thread count compiled programs run with (set_num_threads, TFC_NUM_THREADS, or 1)."""
    if _num_threads:
        return _num_threads
    text = os.environ.get("TFC_NUM_THREADS", "").strip()
    return min(int(text), 64) if text.isdigit() and int(text) >= 1 else 1


def session_thread_request(config: Any) -> int:
    """The count a Session hands its programs' library before a run: its ConfigProto's
    intra-op count, else set_num_threads's, else 0, with which the library reads
    TFC_NUM_THREADS itself (runtime/include/tfc_threads.h, as native executables do): a run
    then pays no os.environ lookup in Python (about 1 us of a batch-1 inference's call)."""
    if isinstance(config, ConfigProto) and config.intra_op_parallelism_threads > 0:
        return min(int(config.intra_op_parallelism_threads), 64)
    return _num_threads


@dataclass
class ConfigProto:
    """TF1's session configuration. `intra_op_parallelism_threads` (> 0) is the number of threads
    the session's programs split large kernels over (see set_num_threads);
    `operation_timeout_in_ms` (> 0) bounds a run's waits on queues when its RunOptions set no
    timeout; the other TF fields are accepted and kept but change nothing; `compile_options`
    chooses the passes."""

    allow_soft_placement: bool = False
    log_device_placement: bool = False
    intra_op_parallelism_threads: int = 0
    inter_op_parallelism_threads: int = 0
    operation_timeout_in_ms: int = 0
    device_count: dict = field(default_factory=dict)
    gpu_options: GPUOptions = field(default_factory=GPUOptions)
    graph_options: GraphOptions = field(default_factory=GraphOptions)
    compile_options: CompileOptions = field(default_factory=CompileOptions)


@dataclass
class RunOptions:
    """TF1's per-call options for Session.run(options=). `timeout_in_ms` (> 0): a run waiting on
    a queue longer fails with DeadlineExceededError (a compiled program, once started, runs to
    its end). `fetches_on_device`: a program that runs on the GPU (or the emulated device)
    returns its fetches as tfc.DeviceArray, left in device memory, instead of NumPy copies; CPU
    programs return NumPy arrays either way. The other TF fields are accepted and kept but
    change nothing."""

    trace_level: int = 0
    timeout_in_ms: int = 0
    fetches_on_device: bool = False


def fetches_on_device(options: Any) -> bool:
    """Whether Session.run's `options` ask for GPU programs' fetches as device arrays."""
    return bool(getattr(options, "fetches_on_device", False))


def compile_options(config: Any) -> CompileOptions:
    """The CompileOptions a Session's `config` argument stands for."""
    if config is None:
        return CompileOptions()
    if isinstance(config, CompileOptions):
        return config
    if isinstance(config, ConfigProto):
        return with_optimizer_options(config.compile_options, config.graph_options)
    if isinstance(config, dict):
        return CompileOptions(**config)
    raise TypeError(
        f"Session config must be a tfc.CompileOptions, a tf.ConfigProto or a dict, got {config!r}"
    )


def with_optimizer_options(options: CompileOptions, graph_options: Any) -> CompileOptions:
    """`options` less the passes a ConfigProto's GraphOptions.optimizer_options switch off: TF's
    level L1 (the default) folds constants and merges common subexpressions, L0 does neither
    unless do_constant_folding / do_common_subexpression_elimination asks for it."""
    if not isinstance(graph_options, GraphOptions) or not graph_options.HasField(
        "optimizer_options"
    ):
        return options
    optimizer = graph_options.optimizer_options
    level_one = optimizer.opt_level == OptimizerOptions.L1
    off = []
    if not (level_one or optimizer.do_constant_folding):
        off.append("fold")
    if not (level_one or optimizer.do_common_subexpression_elimination):
        off.append("cse")
    if not off:
        return options
    return replace(options, disable=tuple(dict.fromkeys([*options.disable, *off])))
