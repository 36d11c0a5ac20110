"""Session: compiles each (fetches, feeds, feed shapes) signature to native code and runs it.

The session owns the state that outlives one run: variable buffers, their initialized flags,
and the streams of random ops. Every compiled program of the session binds the same buffers,
so `sess.run(init)` and `sess.run(train_op)` see one set of variables.
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Iterator
from typing import Any

import numpy as np

from tfc.backend.cc import bind_io, build_shared_library, load_library, program_error
from tfc.client.config import compile_options, fetches_on_device, session_threads
from tfc.client.profiling import Profile, ProfileBuild, loop_library
from tfc.client.python_stage import PythonStagedProgram
from tfc.client.request import FeedSources, RunRequest
from tfc.client.staged import StagedProgram
from tfc.client.targets import check_session_target
from tfc.codegen.lower import LoweredProgram, Slot
from tfc.codegen.targets import CUDA, C
from tfc.compiler import Program, compile_program, compile_stages, split_python_stages
from tfc.data.runtime import IteratorStates
from tfc.ir import errors
from tfc.ir.graph import Graph, get_default_graph, register_session_lookup
from tfc.ir.program import make_program_graph
from tfc.ops.state import GRAPHS_WITH_INIT_FLAGS

_ALIGN = 64


def aligned_zeros(shape: tuple, dtype: np.dtype) -> np.ndarray:
    """A zeroed array whose data starts on a 64-byte boundary (what the kernels assume)."""
    dtype = np.dtype(dtype)
    nbytes = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
    raw = np.zeros(nbytes + _ALIGN, dtype=np.uint8)
    start = (-raw.ctypes.data) % _ALIGN
    return raw[start : start + nbytes].view(dtype).reshape(shape)


class CompiledProgram:
    """One signature's native program, with its arena and the pointer tables it is called with."""

    def __init__(self, session: Session, lowered: LoweredProgram, source: str) -> None:
        self.lowered = lowered
        self.source = source
        path = build_shared_library(source, name=lowered.name)
        self.ffi, self.lib = load_library(path, lowered.prefix)
        self._run = getattr(self.lib, f"{lowered.prefix}run")
        self._set_threads = getattr(self.lib, f"{lowered.prefix}set_num_threads")
        self._config = session.config
        ffi = self.ffi
        self.arena = aligned_zeros((max(lowered.arena_bytes, 1),), np.uint8)
        self._keep = [session._slot_buffer(slot) for slot in lowered.slots] + list(
            lowered.external_consts
        )
        self.state = ffi.new(
            "void *[]", [ffi.from_buffer(b) for b in self._keep[: len(lowered.slots)]] or 1
        )
        self.consts = ffi.new(
            "void *[]", [ffi.from_buffer(c) for c in lowered.external_consts] or 1
        )
        self.inputs = ffi.new("void *[]", max(len(lowered.feeds), 1))
        self.outputs = ffi.new("void *[]", max(len(lowered.fetches), 1))
        self.errbuf = ffi.new("char[]", 1024)
        self.err = ffi.new("tfc_error *")
        self.err.msg = self.errbuf
        self.err.cap = 1024
        self.arena_ptr = ffi.from_buffer(self.arena)

    on_device = False  # runs on the host (CudaProgram runs on the GPU)

    def __call__(self, feeds: list[np.ndarray]) -> tuple[int, list[np.ndarray]]:
        held, results = bind_io(self.ffi, self.inputs, self.outputs, feeds, self.lowered.fetches)
        self.err.node = self.ffi.NULL
        self._set_threads(session_threads(self._config))
        rc = self._run(self.state, self.inputs, self.outputs, self.consts, self.arena_ptr, self.err)
        del held  # the buffers stay alive through the call
        return rc, results

    def time_loop(self, feeds: list[np.ndarray], runs: int) -> tuple[int, float]:
        """Call the program `runs` times on `feeds` from the timing loop in C: (its status,
        seconds per run)."""
        loop_ffi, loop = loop_library()
        ffi = self.ffi
        held = []  # the feeds' and fetches' buffers, alive until the loop returns
        for i, value in enumerate(feeds):
            held.append(ffi.from_buffer(value))
            self.inputs[i] = held[-1]
        for j, fetch in enumerate(self.lowered.fetches):
            held.append(ffi.from_buffer(np.empty(fetch.shape, fetch.dtype.np)))
            self.outputs[j] = held[-1]
        self.err.node = ffi.NULL
        self._set_threads(session_threads(self._config))

        def address(cdata: Any) -> int:
            return int(ffi.cast("uintptr_t", cdata))

        ns = loop_ffi.new("int64_t *")
        rc = loop.tfc_time_runs(
            address(self._run),
            address(self.state),
            address(self.inputs),
            address(self.outputs),
            address(self.consts),
            address(self.arena_ptr),
            address(self.err),
            runs,
            ns,
        )
        return rc, ns[0] / runs * 1e-9

    def error(self, rc: int, graph: Graph) -> errors.OpError:
        return program_error(self.ffi, self.errbuf, self.err, rc, graph)


class _InitializedFlags:
    """Feeds each IsVariableInitialized op a run needs (and nobody fed) its answer: whether
    this session has initialized the variable, as at the start of the run."""

    def __init__(self, session: Session) -> None:
        self._session = session

    def add_feeds(
        self,
        graph: Graph,
        fetches: list,
        targets: list[str],
        feed_tensors: list,
        feed_values: list[np.ndarray],
    ) -> None:
        if graph not in GRAPHS_WITH_INIT_FLAGS:
            return
        fed = {(t.op.name, t.value_index) for t in feed_tensors}
        seen: set[str] = set()
        stack = [t.op.name for t in fetches] + list(targets)
        while stack:
            name = stack.pop()
            if name in seen:
                continue
            seen.add(name)
            if graph.op_type(name) == "IsVariableInitialized" and (name, 0) not in fed:
                var = graph.input_edges(name)[0][0]
                feed_tensors.append(graph.get_tensor_by_name(f"{name}:0"))
                feed_values.append(np.array(var in self._session._initialized))
                continue
            stack += [src for src, out in graph.input_edges(name) if (src, out) not in fed]
            stack += graph.control_input_names(name)


class Session:
    """`tf.Session`: runs fetches of a graph, compiled ahead of time per feed/fetch signature."""

    def __init__(self, target: str = "", graph: Graph | None = None, config: Any = None) -> None:
        check_session_target(target)  # "" or an in-process tf.train.Server's
        self.graph = graph or get_default_graph()
        self.config = config
        self._passes = compile_options(config).pipeline()
        self._closed = False
        self._lock = threading.RLock()
        self._programs: dict[tuple, CompiledProgram] = {}
        self._profiled: dict[tuple, ProfileBuild] = {}  # profile builds, as _programs
        self._vars: dict[str, np.ndarray] = {}
        self._rng: dict[str, np.ndarray] = {}
        self._initialized: set[str] = set()
        # tf.data iterators' positions are per session; map functions run in sessions of their own
        self._iterators = IteratorStates(lambda graph: Session(graph=graph, config=config))
        self._feed_sources = FeedSources(self._iterators, _InitializedFlags(self))
        self._verify = bool(os.environ.get("TFC_VERIFY"))
        self._default_cm: Any = None
        self._gpu: Any = None  # device_memory.DeviceState once a program ran on the GPU

    # -- running ---------------------------------------------------------------------------------
    def run(
        self, fetches: Any, feed_dict: Any = None, options: Any = None, run_metadata: Any = None
    ) -> Any:
        """Evaluate `fetches` (a tensor, an op, a name, or nested lists/tuples/dicts of them)."""
        if self._closed:
            raise RuntimeError("Attempted to use a closed Session.")
        request = RunRequest(self.graph, fetches, feed_dict, self._feed_sources)
        with self._lock:
            program = self._program(request)
            self._check_initialized(program.lowered)
            rc, results = self._call_program(program, request.feed_values, options)
            if rc != 0:
                raise program.error(rc, self.graph)
            self._initialized.update(program.lowered.vars_written)
        return request.results(results)

    def _call_program(self, program: Any, feeds: list, options: Any = None) -> tuple[int, list]:
        """Call one compiled program with its state where it runs: the variables a GPU program
        uses on the device, those a host program uses in the host buffers (copied when the
        other side wrote them last). A GPU program reads device feeds in place and may leave
        its fetches on the device (RunOptions.fetches_on_device); a host program gets copies.
        A staged program hands its stages on to _call_stage."""
        if isinstance(program, (StagedProgram, PythonStagedProgram)):
            return program(feeds, fetches_on_device(options))
        return self._call_stage(program, feeds, fetches_on_device(options))

    def _call_stage(self, program: Any, feeds: list, on_device: bool | list) -> tuple[int, list]:
        """_call_program with where a GPU program leaves its fetches: `on_device`, for all or
        per fetch (CudaProgram's list, for the hand-offs of a staged program's stages)."""
        if self._gpu is not None:
            self._gpu.before(program)
        if program.on_device:
            rc, results = program(feeds, on_device)
        else:
            rc, results = program([_host_value(v) for v in feeds])
        if self._gpu is not None:  # made by the program's call when it ran on the GPU first
            self._gpu.after(program)
        return rc, results

    def source(self, fetches: Any, feed_dict: Any = None) -> str:
        """The generated C source of the program that `run(fetches, feed_dict)` executes."""
        if self._closed:
            raise RuntimeError("Attempted to use a closed Session.")
        with self._lock:
            return self._program(RunRequest(self.graph, fetches, feed_dict)).source

    # -- timing (tfc/client/profiling.py) -------------------------------------------------------
    def profile(
        self, fetches: Any, feed_dict: Any = None, runs: int = 100, warmup: int = 2
    ) -> Profile:
        """Time each kernel of `run(fetches, feed_dict)`'s program: its profile build run
        `warmup` + `runs` times with the same feeds (iterators are read once; the runs train,
        as runs do). `print(profile.table())` shows the result."""
        if runs < 1:
            raise ValueError(f"runs must be at least 1, got {runs}")
        if self._closed:
            raise RuntimeError("Attempted to use a closed Session.")
        request = RunRequest(self.graph, fetches, feed_dict, self._feed_sources)
        with self._lock:
            build = self._profile_build(request)
            program, lowered = build.program, build.lowered
            self._check_initialized(lowered)
            for i in range(warmup + runs):
                if i == warmup:
                    build.reset()
                rc, _ = program(request.feed_values)
                if rc != 0:
                    raise program.error(rc, self.graph)
                self._initialized.update(lowered.vars_written)
            return build.profile(runs)

    def _profile_build(self, request: RunRequest) -> ProfileBuild:
        key = (request.signature(), self.graph.version)
        build = self._profiled.get(key)
        if build is None:
            fetches, targets = request.fetch_keys, request.targets
            graph = make_program_graph(self.graph, fetches, targets, request.feeds)
            compiled = compile_program(
                graph, self._passes, C, name=program_name(fetches, targets), profile=True,
                verify=self._verify,
            )  # fmt: skip
            program = CompiledProgram(self, compiled.lowered, compiled.source)
            build = self._profiled[key] = ProfileBuild(compiled.graph, compiled.lowered, program)
        return build

    def time_runs(self, fetches: Any, feed_dict: Any = None, runs: int = 100) -> float:
        """Seconds per run of `run(fetches, feed_dict)`'s program (the default build), run
        `runs` times by a loop in C with the same feeds; the fetched values are not returned.
        The runs train, as runs do."""
        if runs < 1:
            raise ValueError(f"runs must be at least 1, got {runs}")
        if self._closed:
            raise RuntimeError("Attempted to use a closed Session.")
        request = RunRequest(self.graph, fetches, feed_dict, self._feed_sources)
        with self._lock:
            program = self._program(request)
            if not isinstance(program, CompiledProgram):
                raise ValueError(
                    "time_runs times a program that runs on the host CPU in one piece; the "
                    "program of these fetches runs on a GPU (ops placed there, or "
                    "TFC_DEVICE=gpu) or in stages around ops only Python runs"
                )
            self._check_initialized(program.lowered)
            rc, seconds = program.time_loop(request.feed_values, runs)
            if rc != 0:
                raise program.error(rc, self.graph)
            self._initialized.update(program.lowered.vars_written)
        return seconds

    def _program(self, request: RunRequest) -> Any:
        key = (request.signature(), self.graph.version)
        program = self._programs.get(key)
        if program is None:
            fetches, targets = request.fetch_keys, request.targets
            graph = make_program_graph(self.graph, fetches, targets, request.feeds)
            name = program_name(fetches, targets)
            stages = split_python_stages(graph, verify=self._verify)
            if stages:  # ops only Python runs: native stages compiled per shape, in turn
                program = PythonStagedProgram(
                    name, stages, len(fetches), self._compile, self._run_stage, self.graph
                )
            else:
                program = self._compile(graph, name)
            self._programs[key] = program
        return program

    def _run_stage(self, program: Any, feeds: list) -> tuple[int, list]:
        """A native stage of a PythonStagedProgram run as `run` runs a program: its variables
        checked before, marked initialized after; its fetches to the host."""
        self._check_initialized(program.lowered)
        rc, results = self._call_program(program, feeds)
        if rc == 0:
            self._initialized.update(program.lowered.vars_written)
        return rc, results

    def _compile(self, graph: Graph, name: str) -> Any:
        """A program graph compiled: for the host, or in host and GPU stages when it has ops
        on a GPU."""
        if _placed_on_gpu(graph):
            return self._placed_program(graph, name, len(graph.graph_attrs["fetches"]))
        compiled = compile_program(graph, self._passes, C, name=name, verify=self._verify)
        return CompiledProgram(self, compiled.lowered, compiled.source)

    def _placed_program(self, graph: Graph, name: str, n_fetches: int) -> Any:
        """A program with ops on a GPU, cut into host and GPU stages (tfc/client/staged.py).
        One stage is one program, with one host call; several run as a StagedProgram."""
        from tfc.passes.place import PlacementError

        soft = bool(getattr(self.config, "allow_soft_placement", False))
        try:
            compiled = compile_stages(graph, self._passes, name, soft, verify=self._verify)
        except PlacementError as e:  # TF1 reports placement failures as InvalidArgumentError
            op = self.graph.get_operation_by_name(e.node) if e.node in self.graph.nx else None
            raise errors.InvalidArgumentError(None, op, str(e)) from None
        programs = [self._stage_program(program) for _, program in compiled]
        if len(programs) == 1:
            return programs[0]
        return StagedProgram(self, name, [stage for stage, _ in compiled], programs, n_fetches)

    def _stage_program(self, program: Program) -> Any:
        """A compiled stage (or a whole program) loaded where it runs: the GPU or the host."""
        if program.target is CUDA:
            from tfc.backend.cuda import CudaProgram

            return CudaProgram(self, program.lowered, program.source)
        return CompiledProgram(self, program.lowered, program.source)

    def _device_state(self) -> Any:
        """The GPU copies of this session's variables and random streams (made on first use)."""
        if self._gpu is None:
            from tfc.backend.device_memory import DeviceState

            self._gpu = DeviceState(self._slot_buffer)
        return self._gpu

    def _check_initialized(self, lowered: LoweredProgram) -> None:
        for var in lowered.vars_read_first:
            if var not in self._initialized:
                op = self.graph.get_operation_by_name(var) if var in self.graph.nx else None
                raise errors.FailedPreconditionError(
                    None, op, f"Attempting to use uninitialized value {var}"
                )

    def _slot_buffer(self, slot: Any) -> np.ndarray:
        """The session's buffer for a variable or a random op's stream, made on first use."""
        if slot.kind == "var":
            buf = self._vars.get(slot.name)
            if buf is None:
                buf = self._vars[slot.name] = aligned_zeros(slot.shape, slot.dtype.np)
            return buf
        state = self._rng.get(slot.name)
        if state is None:
            seed, seed2 = slot.seed, slot.seed2  # the op may be in a loop body
            if seed == 0 and seed2 == 0:  # unseeded: fresh numbers every session, as in TF
                seed, seed2 = (int.from_bytes(os.urandom(8), "little") for _ in range(2))
            state = self._rng[slot.name] = np.array([seed, seed2, 0], dtype=np.uint64)
        return state

    # -- variables' values (checkpoints read and write them here) ------------------------------
    def read_variable(self, name: str) -> np.ndarray:
        """A copy of variable `name`'s current value (the VariableV2 node's name)."""
        if self._closed:
            raise RuntimeError("Attempted to use a closed Session.")
        if name not in self._initialized:
            op = self.graph.get_operation_by_name(name) if name in self.graph.nx else None
            raise errors.FailedPreconditionError(
                None, op, f"Attempting to use uninitialized value {name}"
            )
        if self._gpu is not None:
            self._gpu.to_host("var", name)
        return np.array(self._vars[name], copy=True)

    def write_variable(self, name: str, value: Any) -> None:
        """Set variable `name` to `value` (converted to its dtype; the shape must match)."""
        if self._closed:
            raise RuntimeError("Attempted to use a closed Session.")
        node = self.graph.node(name) if name in self.graph.nx else None
        if node is None or node["op"] != "VariableV2":
            raise ValueError(f"'{name}' is not a variable of this session's graph")
        dtype, shape = node["dtypes"][0], tuple(node["shapes"][0])
        array = np.asarray(value, dtype=dtype.np)
        if array.shape != shape:
            raise ValueError(
                f"Cannot assign a value of shape {array.shape} to variable '{name}' of shape "
                f"{shape}"
            )
        with self._lock:
            self._slot_buffer(Slot("var", name, dtype, shape))[...] = array
            if self._gpu is not None:
                self._gpu.host_wrote("var", name)
            self._initialized.add(name)

    def initialized_variables(self) -> set[str]:
        return set(self._initialized)

    # -- lifetime --------------------------------------------------------------------------------
    def close(self) -> None:
        """Free the native state: variables, random streams and compiled programs' arenas."""
        with self._lock:
            self._closed = True
            self._programs.clear()
            self._profiled.clear()
            self._gpu = None
            self._vars.clear()
            self._rng.clear()
            self._initialized.clear()
            self._iterators.close()

    @property
    def closed(self) -> bool:
        return self._closed

    def as_default(self) -> Any:
        return _default_session(self)

    def __enter__(self) -> Session:
        self._default_cm = self.as_default()
        self._default_cm.__enter__()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._default_cm.__exit__(*exc)
        self._default_cm = None
        self.close()

    def __del__(self) -> None:  # pragma: no cover - interpreter shutdown order varies
        with contextlib.suppress(Exception):
            self.close()


class InteractiveSession(Session):
    """A session that installs itself as the default on construction (for shells, notebooks)."""

    def __init__(self, target: str = "", graph: Graph | None = None, config: Any = None) -> None:
        super().__init__(target, graph, config)
        self._interactive_cm = self.as_default()
        self._interactive_cm.__enter__()

    def close(self) -> None:
        super().close()
        cm, self._interactive_cm = getattr(self, "_interactive_cm", None), None
        if cm is not None:
            with contextlib.suppress(Exception):
                cm.__exit__(None, None, None)


# -- the default session ------------------------------------------------------------------------
_local = threading.local()


def _session_stack() -> list[Session]:
    if not hasattr(_local, "stack"):
        _local.stack = []
    return _local.stack


@contextlib.contextmanager
def _default_session(session: Session) -> Iterator[Session]:
    _session_stack().append(session)
    try:
        with session.graph.as_default():
            yield session
    finally:
        stack = _session_stack()
        for i in range(len(stack) - 1, -1, -1):
            if stack[i] is session:
                del stack[i]
                break


def get_default_session() -> Session | None:
    stack = _session_stack()
    return stack[-1] if stack else None


def get_default_session_or_raise(what: str) -> Session:
    session = get_default_session()
    if session is None:
        raise ValueError(
            f"Cannot {what} using `eval()`/`run()`: No default session is registered. Use "
            "`with sess.as_default()` or pass an explicit session to `eval(session=sess)`"
        )
    return session


register_session_lookup(get_default_session_or_raise)


# -- helpers ------------------------------------------------------------------------------------
def program_name(fetches: list, targets: list) -> str:
    """The name of a run signature's program (in its source and its build)."""
    names = [f"{n}_{i}" for n, i in fetches] + list(targets)
    text = "+".join(names) or "empty"
    return (text[:60] + "...") if len(text) > 63 else text


def _host_value(value: Any) -> np.ndarray:
    """A feed as a CPU program takes it: device feeds copied to the host."""
    return value if isinstance(value, np.ndarray) else value.to_host()


def _placed_on_gpu(graph: Graph) -> bool:
    """Whether a program uses the GPU: any of its ops placed on one (tf.device("/gpu:0")),
    or TFC_DEVICE=gpu in the environment (every program, e.g. to run the op tests there).
    Its ops then run on the GPU unless placed on a CPU or host-only; feeds and fetches are
    copied in and out."""
    if os.environ.get("TFC_DEVICE", "").lower() == "gpu":
        return True
    return any("GPU" in (data.get("device") or "").upper() for _, data in graph.nx.nodes(data=True))
