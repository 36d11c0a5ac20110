"""Session: compiles each (fetches, feeds, feed shapes) signature to native code and runs it.

The session keeps the state that outlives one run: variable buffers, their initialized flags,
queues (tfc/client/resources.py: private to the session, or shared by the sessions of an
in-process server's target, by resource container), and the streams of random ops. Every
compiled program of the session binds the same buffers, so `sess.run(init)` and
`sess.run(train_op)` see one set of variables.

Concurrent steps (whitepaper section 7): `run` may be called from several threads at once.
Compiling and the bookkeeping of initialized variables take the session's lock; a host program
runs outside it, each call with an arena of its own, on the shared variables (unsynchronized,
TF1's Hogwild updates, except the updates of ops created with use_locking=True, which hold
their variables' locks). cffi releases the GIL around the call, so the steps run in parallel.
A run's queue ops happen before and after its program (tfc/client/queue_runs.py), outside
the lock: a run blocked on a queue holds up no other run. Programs with GPU stages (their
variables move between host and device memory) or Python stages run one at a time.
"""

from __future__ import annotations

import contextlib
import functools
import os
import threading
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from tfc.backend.cc import build_shared_library, load_library
from tfc.backend.native_queue import clock_ns
from tfc.client.config import compile_options, fetches_on_device, session_thread_request
from tfc.client.profiling import Profile, ProfileBuild, loop_library
from tfc.client.python_stage import PythonStagedProgram
from tfc.client.queue_runs import QueueRuns, make_queue
from tfc.client.request import FeedSources, RunRequest
from tfc.client.resources import (
    SessionState,
    aligned_zeros,
    register_session,
    reset_target,
    state_for_target,
)
from tfc.client.run_plan import MISS, RunPlan, plan_key
from tfc.client.staged import StagedProgram
from tfc.client.targets import check_session_target, cluster_runtime, cluster_task
from tfc.codegen.lower import LoweredProgram, Slot
from tfc.codegen.targets import CUDA, C
from tfc.compiler import Program, compile_program, compile_stages, split_python_stages
from tfc.data.iterator import GRAPHS_WITH_ITERATORS
from tfc.data.runtime import IteratorStates
from tfc.ir import dtypes as _dt
from tfc.ir import errors
from tfc.ir.graph import Graph, get_default_graph, register_session_lookup
from tfc.ir.program import make_program_graph
from tfc.ir.subgraph import find_operation
from tfc.ops.queues import QueueSpec
from tfc.ops.state import GRAPHS_WITH_INIT_FLAGS

# each loaded library's last set_num_threads count: a run sets it only when it changes (the
# libraries are loaded once per process and shared by the sessions' programs)
_THREADS_SET: dict[Any, int] = {}


class _CallFrame:
    """What one call of a program writes: its arena, the pointer tables of its feeds and
    fetches, and its error report. Concurrent calls of one program each take a frame."""

    def __init__(self, ffi: Any, lowered: LoweredProgram) -> None:
        self.arena = aligned_zeros((max(lowered.arena_bytes, 1),), np.uint8)
        self.arena_ptr = ffi.from_buffer(self.arena)
        self.inputs = ffi.new("void *[]", max(len(lowered.feeds), 1))
        self.outputs = ffi.new("void *[]", max(len(lowered.fetches), 1))
        self.errbuf = ffi.new("char[]", 1024)
        self.err = ffi.new("tfc_error *")
        self.err.msg = self.errbuf
        self.err.cap = 1024


class CompiledProgram:
    """One signature's native program: the session's state it binds, and its call frames."""

    def __init__(self, session: Session, lowered: LoweredProgram, source: str) -> None:
        self.lowered = lowered
        self.source = source
        path = build_shared_library(source, name=lowered.name)
        self.ffi, self.lib = load_library(path, lowered.prefix)
        self._run = getattr(self.lib, f"{lowered.prefix}run")
        self._set_threads = getattr(self.lib, f"{lowered.prefix}set_num_threads")
        self._config = session.config
        ffi = self.ffi
        self._keep = [session._slot_buffer(slot) for slot in lowered.slots] + list(
            lowered.external_consts
        )
        self.state = ffi.new(
            "void *[]", [ffi.from_buffer(b) for b in self._keep[: len(lowered.slots)]] or 1
        )
        self.consts = ffi.new(
            "void *[]", [ffi.from_buffer(c) for c in lowered.external_consts] or 1
        )
        self._frames = [_CallFrame(ffi, lowered)]  # free frames; more are made when needed
        self._fetch_specs = [(f.shape, f.dtype.np) for f in lowered.fetches]
        self._failure = threading.local()  # this thread's last failed call: (message, node)

    on_device = False  # runs on the host (CudaProgram runs on the GPU)

    def _use_threads(self) -> None:
        """Set the library's thread count to the session's (its programs share the library)."""
        threads = session_thread_request(self._config)
        self._set_threads(threads)
        _THREADS_SET[self.lib] = threads

    def _take_frame(self) -> _CallFrame:
        try:  # list.pop and append are atomic: concurrent calls never share a frame
            return self._frames.pop()
        except IndexError:
            return _CallFrame(self.ffi, self.lowered)

    @contextlib.contextmanager
    def _frame(self) -> Iterator[_CallFrame]:
        frame = self._take_frame()
        try:
            yield frame
        finally:
            self._frames.append(frame)

    def _failed(self, frame: _CallFrame) -> None:
        ffi = self.ffi
        node = ffi.string(frame.err.node).decode() if frame.err.node != ffi.NULL else None
        frame.err.node = ffi.NULL  # the program sets it only when it fails
        self._failure.report = (ffi.string(frame.errbuf).decode(errors="replace"), node)

    def __call__(self, feeds: list[np.ndarray]) -> tuple[int, list[np.ndarray]]:
        return self.call_contiguous([np.ascontiguousarray(v) for v in feeds])

    def call_contiguous(self, feeds: list[np.ndarray]) -> tuple[int, list[np.ndarray]]:
        """Call the program on C-contiguous feeds, read in place: (its status, a new array per
        fetch, written in place by the program)."""
        try:  # _take_frame, inline: this is every run's path
            frame = self._frames.pop()
        except IndexError:
            frame = _CallFrame(self.ffi, self.lowered)
        try:
            held, results = self._point(frame, feeds)  # held: alive until the call returns
            threads = session_thread_request(self._config)
            if _THREADS_SET.get(self.lib) != threads:
                self._use_threads()
            rc = self._run(
                self.state, frame.inputs, frame.outputs, self.consts, frame.arena_ptr, frame.err
            )
            if rc != 0:
                self._failed(frame)
        finally:
            self._frames.append(frame)
        return rc, results

    def _point(self, frame: _CallFrame, feeds: list[np.ndarray]) -> tuple[list, list[np.ndarray]]:
        """Point `frame`'s tables at the C-contiguous `feeds` and at a new array per fetch:
        (the cffi views, which must stay alive through the call; the fetches' arrays)."""
        from_buffer = self.ffi.from_buffer
        held = []
        inputs, outputs = frame.inputs, frame.outputs
        for i, value in enumerate(feeds):
            inputs[i] = pointer = from_buffer(value)
            held.append(pointer)
        results = []
        for j, (shape, dtype) in enumerate(self._fetch_specs):
            value = np.empty(shape, dtype)
            outputs[j] = pointer = from_buffer(value)
            held.append(pointer)
            results.append(value)
        return held, results

    def bind(self, feeds: list[np.ndarray]) -> tuple[Callable[[], int], list[np.ndarray]]:
        """The C entry point bound to `feeds` and to a new array per fetch, with a call frame of
        its own: (a function calling it, returning its status; the fetches' arrays, which each
        call overwrites). Only the cffi call is left per call: benchmarks measure with it
        what the Python side of a run cannot go below."""
        frame = _CallFrame(self.ffi, self.lowered)
        feeds = [np.ascontiguousarray(v) for v in feeds]
        held, results = self._point(frame, feeds)
        self._use_threads()
        call = functools.partial(
            self._run, self.state, frame.inputs, frame.outputs, self.consts, frame.arena_ptr,
            frame.err,
        )  # fmt: skip
        call.keep = (frame, feeds, held)  # type: ignore[attr-defined]  # alive with the call
        return call, results

    def time_loop(self, feeds: list[np.ndarray], runs: int) -> tuple[int, float]:
        """Call the program `runs` times on `feeds` from the timing loop in C: (its status,
        seconds per run)."""
        loop_ffi, loop = loop_library()
        ffi = self.ffi
        with self._frame() as frame:
            feeds = [np.ascontiguousarray(v) for v in feeds]
            held, _ = self._point(frame, feeds)  # alive until the loop returns
            self._use_threads()

            def address(cdata: Any) -> int:
                return int(ffi.cast("uintptr_t", cdata))

            ns = loop_ffi.new("int64_t *")
            rc = loop.tfc_time_runs(
                address(self._run),
                address(self.state),
                address(frame.inputs),
                address(frame.outputs),
                address(self.consts),
                address(frame.arena_ptr),
                address(frame.err),
                runs,
                ns,
            )
            if rc != 0:
                self._failed(frame)
        return rc, ns[0] / runs * 1e-9

    def error(self, rc: int, graph: Graph) -> errors.OpError:
        """The error of this thread's last failed call."""
        message, node = self._failure.report
        op = find_operation(graph, node) if node else None  # in a loop body or branch, maybe
        return errors.error_for_code(rc)(None, op, message)


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
                initialized = self._session._state.initialized
                feed_values.append(np.array(self._session._var_key(var) in initialized))
                continue
            stack += [src for src, out in graph.input_edges(name) if (src, out) not in fed]
            stack += graph.control_input_names(name)


class _PythonHeldVariables:
    """The variables Python stages read and assign (tf.string ones: native code holds no
    strings), kept in the session's state beside its native buffers, so that initialization,
    IsVariableInitialized and Session.reset treat them alike."""

    def __init__(self, session: Session) -> None:
        self._session = session

    def variable(self, name: str) -> np.ndarray | None:
        """Its value; None until it is first assigned (only an assignment may take it then)."""
        session = self._session
        key = session._var_key(name)
        with session._state.lock:
            if key not in session._state.initialized:
                return None
            return session._state.vars.get(key)

    def assign(self, name: str, value: np.ndarray) -> np.ndarray:
        session = self._session
        key = session._var_key(name)
        with session._state.lock:
            held = session._state.vars[key] = np.array(value, copy=True)
            session._state.initialized.add(key)
            session._state.bump_epoch()
        return held


class Session:
    """`tf.Session`: runs fetches of a graph, compiled ahead of time per feed/fetch signature."""

    def __new__(cls, target: str = "", graph: Graph | None = None, config: Any = None) -> Any:
        # a task of a cluster of several: the worker session of the compiled cluster runtime
        server_def = cluster_task(target)
        if server_def is not None:
            return cluster_runtime().session(server_def, graph or get_default_graph(), config)
        return super().__new__(cls)

    def __init__(self, target: str = "", graph: Graph | None = None, config: Any = None) -> None:
        check_session_target(target)  # "" or an in-process tf.train.Server's
        self.graph = graph or get_default_graph()
        self.config = config
        self._target = target or ""
        self._allow_tf32 = compile_options(config).allow_tf32
        self._mixed_precision = compile_options(config).mixed_precision
        self._passes = compile_options(config).pipeline()
        self._closed = False
        self._closed_by_reset: errors.OpError | None = None
        self._lock = threading.RLock()
        self._programs: dict[tuple, CompiledProgram] = {}
        self._plans: dict[tuple, RunPlan] = {}  # repeat runs' plans, by plan_key
        self._profiled: dict[tuple, ProfileBuild] = {}  # profile builds, as _programs
        # variables, update locks and queues: the session's own, or its server target's
        self._state: SessionState = state_for_target(self._target)
        self._rng: dict[str, np.ndarray] = {}
        # tf.data iterators' positions are per session; map functions run in sessions of their own
        self._iterators = IteratorStates(lambda graph: Session(graph=graph, config=config))
        self._feed_sources = FeedSources(self._iterators, _InitializedFlags(self))
        self._queue_runs = QueueRuns(self._queue)
        self._verify = bool(os.environ.get("TFC_VERIFY"))
        self._default_cm: Any = None
        self._gpu: Any = None  # device_memory.DeviceState once a program ran on the GPU
        register_session(self._target, self)

    # -- running ---------------------------------------------------------------------------------
    def run(
        self, fetches: Any, feed_dict: Any = None, options: Any = None, run_metadata: Any = None
    ) -> Any:
        """Evaluate `fetches` (a tensor, an op, a name, or nested lists/tuples/dicts of them).

        May be called from several threads at once (see the module's docstring). A run that
        waits on a queue waits until RunOptions(timeout_in_ms) (or the ConfigProto's
        operation_timeout_in_ms) has passed, then fails with DeadlineExceededError.

        A run repeating an earlier one (the same fetches and feed keys, NumPy feeds of the
        same shapes and dtypes) takes its plan (tfc/client/run_plan.py): the feeds go to the
        program in place, nothing is resolved again."""
        if options is None and run_metadata is None and type(feed_dict) in _PLAIN_FEEDS:
            try:
                plan = self._plans.get(plan_key(fetches, feed_dict))
            except TypeError:  # unhashable fetches: no plan
                plan = None
            if plan is not None:
                result = self._run_plan(plan, feed_dict.values() if feed_dict else ())
                if result is not MISS:
                    return result
        return self._run_request(fetches, feed_dict, options)

    def _run_plan(self, plan: RunPlan, values: Any) -> Any:
        """Run `plan` on feed values in its feed keys' order; MISS where the generic path must
        run instead (the graph changed, values of other shapes or dtypes, uninitialized
        variables to report, the GPU in use)."""
        if plan.version != self.graph.version or self._gpu is not None:
            return MISS
        feeds = plan.feeds(values)
        if feeds is MISS or (plan.reads and not plan.reads <= self._state.initialized):
            return MISS
        rc, results = plan.program.call_contiguous(feeds)
        if rc != 0:
            raise plan.program.error(rc, self.graph)
        if plan.writes:
            with self._state.lock:
                self._state.initialized.update(plan.writes)
        return plan.results(results)

    def _run_request(self, fetches: Any, feed_dict: Any, options: Any) -> Any:
        """`run` resolving its fetches and feeds; it leaves a plan for the next such run."""
        self._check_open()
        request = RunRequest(
            self.graph, fetches, feed_dict, self._feed_sources, self._queue_runs,
            self._deadline(options),
        )  # fmt: skip
        with self._lock:
            self._check_open()
            program = self._program(request)
            self._check_initialized(program.lowered)
        if isinstance(program, CompiledProgram) and self._gpu is None:
            rc, results = program([_host_value(v) for v in request.feed_values])
        else:  # GPU stages move variables between host and device: one program at a time
            with self._lock:
                rc, results = self._call_program(program, request.feed_values, options)
        if rc != 0:
            raise program.error(rc, self.graph)
        with self._lock:
            self._mark_initialized(program.lowered.vars_written)
        request.finish(results)
        self._keep_plan(fetches, feed_dict, request, program)
        return request.results(results)

    def _keep_plan(self, fetches: Any, feed_dict: Any, request: RunRequest, program: Any) -> None:
        """Keep the plan of a run that repeats the same way: a host program in one piece, fed
        only by the caller (no queues or initialized-flags), with NumPy values, of a graph
        without tf.data iterators (a run of one may restart them without feeding them)."""
        if (
            type(program) is not CompiledProgram
            or self.graph in GRAPHS_WITH_ITERATORS
            or self._gpu is not None
            or type(feed_dict) not in _PLAIN_FEEDS
            or request.queued
            or len(request.feeds) != request.n_fed
            or len(feed_dict or ()) != request.n_fed  # two keys of one tensor
            or any(spec.dtype.is_string for spec in request.feeds)
            or not all(type(v) is np.ndarray for v in request.feed_values)
        ):
            return
        try:
            key = plan_key(fetches, feed_dict)
            hash(key)
        except TypeError:
            return
        lowered = program.lowered
        plan = RunPlan(
            program,
            self.graph.version,
            request.feeds,
            request.result_layout(),
            frozenset(self._var_key(v) for v in lowered.vars_read_first),
            [self._var_key(v) for v in lowered.vars_written],
            bare=not isinstance(fetches, (list, tuple, dict)),
        )
        with self._lock:
            if self._closed:
                return
            if len(self._plans) > 1000:  # fetches made anew for every run: keep only new plans
                self._plans.clear()
            self._plans[key] = plan

    def make_callable(
        self, fetches: Any, feed_list: Any = None, accept_options: bool = False
    ) -> RunCallable:
        """`tf.Session.make_callable`: a function taking the values of `feed_list`'s feeds
        positionally and returning what `run(fetches, feed_dict)` returns, in the structure of
        `fetches`. Its repeat calls take the run's plan directly (the lowest overhead a run
        has). With `accept_options`, it also takes `options` and `run_metadata` keywords."""
        if feed_list is None:
            feed_list = []
        elif not isinstance(feed_list, (list, tuple)):
            raise TypeError(
                f"Argument `feed_list` must be a list or tuple. Received: feed_list={feed_list}"
            )
        self._check_open()
        RunRequest(self.graph, fetches)  # bad fetches fail now, as in TF
        for key in feed_list:
            # a SparseTensor is fed through its three tensors
            parts = key.components() if hasattr(key, "feed_components") else [key]
            try:
                for part in parts:
                    self.graph.as_graph_element(part)
            except (KeyError, TypeError, ValueError) as e:
                raise TypeError(f"Cannot interpret feed_list key as Tensor: {e}") from None
        return RunCallable(self, fetches, list(feed_list), accept_options)

    def _deadline(self, options: Any) -> int:
        """The clock_ns() deadline of a run's queue waits: RunOptions(timeout_in_ms), else the
        ConfigProto's operation_timeout_in_ms; 0 (none) when neither is positive."""
        ms = int(getattr(options, "timeout_in_ms", 0) or 0)
        if ms <= 0:
            ms = int(getattr(self.config, "operation_timeout_in_ms", 0) or 0)
        return clock_ns() + ms * 1_000_000 if ms > 0 else 0

    def _check_open(self) -> None:
        if self._closed_by_reset is not None:
            raise self._closed_by_reset
        if self._closed:
            raise RuntimeError("Attempted to use a closed Session.")

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
        self._check_open()
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
        self._check_open()
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
                self._mark_initialized(lowered.vars_written)
            return build.profile(runs)

    def _profile_build(self, request: RunRequest) -> ProfileBuild:
        key = (request.signature(), self.graph.version)
        build = self._profiled.get(key)
        if build is None:
            fetches, targets = request.fetch_keys, request.targets
            graph = make_program_graph(self.graph, fetches, targets, request.feeds)
            compiled = compile_program(
                graph, self._passes, C, name=program_name(fetches, targets), profile=True,
                verify=self._verify, lock_updates=True, mixed_precision=self._mixed_precision,
                prepack_weights=True,
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
        self._check_open()
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
            self._mark_initialized(program.lowered.vars_written)
        return seconds

    def _program(self, request: RunRequest) -> Any:
        key = (request.signature(), self.graph.version)
        program = self._programs.get(key)
        if program is None:
            fetches, targets = request.fetch_keys, request.targets
            graph = make_program_graph(self.graph, fetches, targets, request.feeds)
            graph.graph_attrs["session_side_ops"] = True  # run() runs the queue ops around it
            name = program_name(fetches, targets)
            stages = split_python_stages(graph, verify=self._verify)
            if stages:  # ops only Python runs: native stages compiled per shape, in turn
                program = PythonStagedProgram(
                    name, stages, len(fetches), self._compile, self._run_stage, self.graph,
                    _PythonHeldVariables(self),
                )  # fmt: skip
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
            self._mark_initialized(program.lowered.vars_written)
        return rc, results

    def _compile(self, graph: Graph, name: str) -> Any:
        """A program graph compiled: for the host, or in host and GPU stages when it has ops
        on a GPU."""
        if _placed_on_gpu(graph):
            return self._placed_program(graph, name, len(graph.graph_attrs["fetches"]))
        compiled = compile_program(
            graph, self._passes, C, name=name, verify=self._verify, lock_updates=True,
            mixed_precision=self._mixed_precision, prepack_weights=True,
        )  # fmt: skip
        return CompiledProgram(self, compiled.lowered, compiled.source)

    def _placed_program(self, graph: Graph, name: str, n_fetches: int) -> Any:
        """A program with ops on a GPU, cut into host and GPU stages (tfc/client/staged.py).
        One stage is one program, with one host call; several run as a StagedProgram."""
        from tfc.passes.place import PlacementError

        soft = bool(getattr(self.config, "allow_soft_placement", False))
        try:
            compiled = compile_stages(
                graph, self._passes, name, soft, verify=self._verify, allow_tf32=self._allow_tf32,
                mixed_precision=self._mixed_precision, prepack_weights=True,
            )  # fmt: skip
        except PlacementError as e:  # TF1 reports placement failures as InvalidArgumentError
            op = self.graph.get_operation_by_name(e.node) if e.node in self.graph.nx else None
            raise errors.InvalidArgumentError(None, op, str(e)) from None
        programs = [self._stage_program(program) for _, program in compiled]
        if len(programs) == 1:
            return programs[0]
        return StagedProgram(self, name, [stage for stage, _ in compiled], programs, n_fetches)

    def _stage_program(self, program: Program) -> Any:
        """A compiled stage (or a whole program) loaded where it runs: the GPU or the host."""
        if program.target.name == CUDA.name:  # CUDA or CUDA_TF32
            from tfc.backend.cuda import CudaProgram

            return CudaProgram(self, program.lowered, program.source)
        return CompiledProgram(self, program.lowered, program.source)

    def _device_state(self) -> Any:
        """The GPU copies of this session's variables and random streams (made on first use)."""
        if self._gpu is None:
            from tfc.backend.device_memory import DeviceState

            self._gpu = DeviceState(self._slot_buffer, self._state.bump_epoch)
        return self._gpu

    # -- state (tfc/client/resources.py) ---------------------------------------------------------
    def _var_key(self, name: str) -> tuple[str, str]:
        """Variable `name`'s key in the state: (its container, its name)."""
        node = self.graph.node(name) if name in self.graph.nx else None
        return ((node["attrs"].get("container", "") if node else ""), name)

    def _check_initialized(self, lowered: LoweredProgram) -> None:
        for var in lowered.vars_read_first:
            if self._var_key(var) not in self._state.initialized:
                op = self.graph.get_operation_by_name(var) if var in self.graph.nx else None
                raise errors.FailedPreconditionError(
                    None, op, f"Attempting to use uninitialized value {var}"
                )

    def _mark_initialized(self, names: list[str]) -> None:
        if names:
            with self._state.lock:
                self._state.initialized.update(self._var_key(n) for n in names)

    def _slot_buffer(self, slot: Any) -> np.ndarray:
        """The session's buffer for a variable, a variable's update lock or a random op's
        stream, made on first use; the state epoch; a new zeroed buffer for a product's packed
        weights (each program its own)."""
        if slot.kind == "pack":
            return aligned_zeros(slot.shape, np.uint8)
        if slot.kind == "epoch":
            return self._state.epoch
        if slot.kind == "var":
            dtype = None if slot.dtype is None else slot.dtype.np  # None: the existing buffer
            return self._state.variable(self._var_key(slot.name), dtype, slot.shape)
        if slot.kind == "lock":
            return self._state.update_lock(self._var_key(slot.name))
        state = self._rng.get(slot.name)
        if state is None:
            seed, seed2 = slot.seed, slot.seed2  # the op may be in a loop body
            if seed == 0 and seed2 == 0:  # unseeded: fresh numbers every session, as in TF
                seed, seed2 = _fresh_seeds()
            state = self._rng[slot.name] = np.array([seed, seed2, 0], dtype=np.uint64)
        return state

    def _queue(self, spec: QueueSpec) -> Any:
        """The native queue of `spec` in this session's state (made on first use): shared by
        its container and shared_name, or private to this session without a shared_name."""
        owner = "shared" if spec.shared_name else id(self)
        key = (spec.container, owner, spec.shared_name or spec.op)
        return self._state.queue(key, lambda: make_queue(spec, _fresh_seeds))

    # -- variables' values (checkpoints read and write them here) ------------------------------
    def read_variable(self, name: str) -> np.ndarray:
        """A copy of variable `name`'s current value (the VariableV2 node's name)."""
        self._check_open()
        key = self._var_key(name)
        if key not in self._state.initialized:
            op = self.graph.get_operation_by_name(name) if name in self.graph.nx else None
            raise errors.FailedPreconditionError(
                None, op, f"Attempting to use uninitialized value {name}"
            )
        if self._gpu is not None:
            self._gpu.to_host("var", name)
        return np.array(self._state.vars[key], copy=True)

    def write_variable(self, name: str, value: Any) -> None:
        """Set variable `name` to `value` (converted to its dtype; the shape must match)."""
        self._check_open()
        node = self.graph.node(name) if name in self.graph.nx else None
        if node is None or node["op"] != "VariableV2":
            raise ValueError(f"'{name}' is not a variable of this session's graph")
        dtype, shape = node["dtypes"][0], tuple(node["shapes"][0])
        array = _dt.as_numpy(value, dtype)
        if array.shape != shape:
            raise ValueError(
                f"Cannot assign a value of shape {array.shape} to variable '{name}' of shape "
                f"{shape}"
            )
        with self._lock:
            self._slot_buffer(Slot("var", name, dtype, shape))[...] = array
            self._state.bump_epoch()
            if self._gpu is not None:
                self._gpu.host_wrote("var", name)
            self._mark_initialized([name])

    def initialized_variables(self) -> set[str]:
        """The names of the initialized variables of this session's state."""
        with self._state.lock:
            return {name for _, name in self._state.initialized}

    # -- lifetime --------------------------------------------------------------------------------
    def close(self) -> None:
        """Free the native state: variables, random streams, queues and compiled programs'
        arenas. Runs waiting on this session's queues fail with CancelledError; a shared
        state (a server target's) stays for its other sessions."""
        with self._lock:
            self._closed = True
            self._programs.clear()
            self._plans.clear()
            self._profiled.clear()
            self._gpu = None
            self._rng.clear()
            self._iterators.close()
            if self._target:
                self._state.cancel_queues(owner=id(self))
            else:
                self._state.cancel_queues()
                self._state = SessionState()  # the private state goes with the session

    @staticmethod
    def reset(target: str, containers: list[str] | None = None, config: Any = None) -> None:
        """`tf.Session.reset`: clear `containers` (None: all) of `target`'s state and close
        every session on the target, as TF1 does. On "" (this process) every session has its
        own state, so closing them is all there is; on an in-process server's target the
        shared variables and queues of those containers are dropped. A closed session's next
        run fails with CancelledError ("") or AbortedError (a server's target)."""
        check_session_target(target)
        if containers is not None and (
            isinstance(containers, str) or not all(isinstance(c, str) for c in containers)
        ):
            raise TypeError(f"containers must be a list of strings, got {containers!r}")
        for session in reset_target(target, None if containers is None else list(containers)):
            if target:
                why = errors.AbortedError(
                    None, None, f"Session on {target} was closed by Session.reset: create a new "
                    "session on the target (its variables outside the reset containers remain)",
                )  # fmt: skip
            else:
                why = errors.CancelledError(None, None, "Session has been closed.")
            session.close()
            session._closed_by_reset = why

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


class RunCallable:
    """What Session.make_callable returns: `run(fetches, dict(zip(feed_list, args)))` as a
    function of the feed values, holding on to the run's plan between calls."""

    def __init__(
        self, session: Session, fetches: Any, feed_list: list, accept_options: bool
    ) -> None:
        self._session = session
        self._fetches = fetches
        self._feed_list = feed_list
        self._accept_options = accept_options
        try:
            self._key: tuple | None = plan_key(fetches, feed_list)
            hash(self._key)
        except TypeError:  # unhashable fetches: every call takes the generic path
            self._key = None
        self._plan: RunPlan | None = None

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if len(args) != len(self._feed_list):
            raise TypeError(
                f"The callable takes {len(self._feed_list)} feed values (one per element of "
                f"feed_list), got {len(args)}"
            )
        if kwargs:
            options, run_metadata = self._options(**kwargs)
            if options is not None or run_metadata is not None:
                feed_dict = dict(zip(self._feed_list, args))
                return self._session.run(self._fetches, feed_dict, options, run_metadata)
        session, plan = self._session, self._plan
        if plan is not None and not session._closed:
            result = session._run_plan(plan, args)
            if result is not MISS:
                return result
        result = session._run_request(self._fetches, dict(zip(self._feed_list, args)), None)
        if self._key is not None:
            self._plan = session._plans.get(self._key)
        return result

    def _options(self, options: Any = None, run_metadata: Any = None) -> tuple[Any, Any]:
        if not self._accept_options:
            raise TypeError(
                "This callable takes no options or run_metadata: make it with "
                "make_callable(..., accept_options=True)"
            )
        return options, run_metadata

    @property
    def program(self) -> Any:
        """The compiled program the last call ran by its plan (None before a planned call):
        for benchmarks that call its C entry point directly."""
        return None if self._plan is None else self._plan.program


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


_PLAIN_FEEDS = (dict, type(None))  # feed_dict types whose keys key a plan


# -- helpers ------------------------------------------------------------------------------------
def program_name(fetches: list, targets: list) -> str:
    """The name of a run signature's program (in its source and its build)."""
    names = [f"{n}_{i}" for n, i in fetches] + list(targets)
    text = "+".join(names) or "empty"
    return (text[:60] + "...") if len(text) > 63 else text


def _fresh_seeds() -> tuple[int, int]:
    return int.from_bytes(os.urandom(8), "little"), int.from_bytes(os.urandom(8), "little")


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
