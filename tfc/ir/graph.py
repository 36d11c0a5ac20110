"""The dataflow graph: a networkx.MultiDiGraph of operations, with TF1's Graph/Operation/Tensor API.

Node attributes (one node per operation, keyed by its unique name):
    op       the op type, e.g. "MatMul" (a key of the op registry)
    attrs    dict of attribute values (ints, floats, strings, DTypes, shapes, NumPy arrays)
    device   device string ("" when unconstrained)
    dtypes   list of output DTypes
    shapes   list of output shapes: tuple of int|None, or None for unknown rank
    id       creation order, for deterministic iteration
Edges: a data edge u->v has key = the input index of v and attribute out = the output index
of u; a control edge u->v has key CONTROL. Attribute values are treated as immutable: a pass
that changes one replaces it, so copies of a graph may share them.
"""

from __future__ import annotations

import contextlib
import dataclasses
import threading
from collections.abc import Callable, Iterator
from typing import Any

import networkx as nx

from tfc.ir import dtypes as _dtypes
from tfc.ir.device import DeviceSpec, merge_device
from tfc.ir.tensor_shape import Shape, TensorShape, merge_shapes

CONTROL = "ctrl"


class GraphKeys:
    GLOBAL_VARIABLES = "variables"
    TRAINABLE_VARIABLES = "trainable_variables"
    LOCAL_VARIABLES = "local_variables"
    METRIC_VARIABLES = "metric_variables"
    MODEL_VARIABLES = "model_variables"
    MOVING_AVERAGE_VARIABLES = "moving_average_variables"
    GLOBAL_STEP = "global_step"
    TRAIN_OP = "train_op"
    LOSSES = "losses"
    REGULARIZATION_LOSSES = "regularization_losses"
    UPDATE_OPS = "update_ops"
    WEIGHTS = "weights"
    BIASES = "biases"
    SUMMARIES = "summaries"
    INIT_OP = "init_op"
    TABLE_INITIALIZERS = "table_initializer"
    VARIABLES = GLOBAL_VARIABLES
    # what a tf.train.Scaffold takes from the graph when not given
    LOCAL_INIT_OP = "local_init_op"
    READY_OP = "ready_op"
    READY_FOR_LOCAL_INIT_OP = "ready_for_local_init_op"
    SUMMARY_OP = "summary_op"
    SAVERS = "savers"
    QUEUE_RUNNERS = "queue_runners"


class Graph:
    """A TensorFlow-1-style graph. Ops are added by the functions of `tfc` (tf.add, ...)."""

    # the graph this one is nested in (a branch or loop body: tfc.ir.subgraph.Subgraph), or None
    outer: Graph | None = None

    def __init__(self) -> None:
        self.nx = nx.MultiDiGraph()
        self._names_in_use: dict[str, int] = {}
        self._name_stack = ""
        self._control_stack: list[list[str] | None] = []
        self._device_stack: list[Any] = []
        self._colocation_stack: list[str] = []
        self._container = ""  # tf.container's name for the stateful ops created now
        self._gradient_overrides: dict[str, str] = {}
        self._collections: dict[str, list] = {}
        self._handles: dict[str, Operation] = {}
        self._next_id = 0
        self.seed: int | None = None
        self.version = 0  # bumped on every change; caches key on it
        self.graph_attrs: dict[str, Any] = {}  # pass-level data: feeds, fetches, schedule, plan
        self._const_memo: dict = {}
        self._const_memo_version = -1

    # -- nodes and edges -------------------------------------------------------------------------
    def add_node(
        self,
        name: str,
        op: str,
        inputs: list[tuple[str, int]],
        attrs: dict,
        dtypes: list,
        shapes: list[Shape],
        device: str = "",
        control_inputs: list[str] = (),
    ) -> str:
        """Add one operation node with its data and control in-edges. Returns its name."""
        if name in self.nx:
            raise ValueError(f"Duplicate node name in graph: '{name}'")
        self.nx.add_node(
            name,
            op=op,
            attrs=attrs,
            device=device,
            dtypes=list(dtypes),
            shapes=list(shapes),
            id=self._next_id,
        )
        self._next_id += 1
        self._names_in_use.setdefault(name.lower(), 1)
        for index, (src, out) in enumerate(inputs):
            self.nx.add_edge(src, name, key=index, out=out)
        for src in control_inputs:
            self.nx.add_edge(src, name, key=CONTROL)
        self.version += 1
        return name

    def remove_node(self, name: str) -> None:
        self.nx.remove_node(name)
        self._handles.pop(name, None)
        self.version += 1

    # The accessors below read networkx's own dicts of a MultiDiGraph (`_node`: name ->
    # attributes; `_pred`/`_succ`: node -> neighbour -> edge key -> edge data) rather than its
    # views, which are built anew on every call: these are the compiler's hottest calls, several
    # times faster this way. Changes still go through networkx's methods.
    def node(self, name: str) -> dict:
        return self.nx._node[name]

    def op_type(self, name: str) -> str:
        return self.nx._node[name]["op"]

    def input_edges(self, name: str) -> list[tuple[str, int]]:
        """The (producer, output index) of each data input of `name`, in input order."""
        edges = [
            (k, u, d["out"])
            for u, keys in self.nx._pred[name].items()
            for k, d in keys.items()
            if k != CONTROL
        ]
        edges.sort()
        return [(u, out) for _, u, out in edges]

    def control_input_names(self, name: str) -> list[str]:
        nodes = self.nx._node
        srcs = [u for u, keys in self.nx._pred[name].items() if CONTROL in keys]
        return sorted(srcs, key=lambda n: nodes[n]["id"])

    def consumers(self, name: str, out: int | None = None) -> list[tuple[str, int]]:
        """The (consumer, input index) of each data edge leaving `name` (output `out` if given)."""
        nodes = self.nx._node
        result = [
            (nodes[v]["id"], k, v)
            for v, keys in self.nx._succ[name].items()
            for k, d in keys.items()
            if k != CONTROL and (out is None or d["out"] == out)
        ]
        result.sort()
        return [(v, k) for _, k, v in result]

    def control_output_names(self, name: str) -> list[str]:
        return [v for v, keys in self.nx._succ[name].items() if CONTROL in keys]

    def set_input(self, dst: str, index: int, src: tuple[str, int]) -> None:
        """Point input `index` of `dst` at output src[1] of node src[0]."""
        old = [u for u, _, k in self.nx.in_edges(dst, keys=True) if k == index]
        for u in old:
            self.nx.remove_edge(u, dst, key=index)
        self.nx.add_edge(src[0], dst, key=index, out=src[1])
        self.version += 1

    def add_control_edge(self, src: str, dst: str) -> None:
        if not self.nx.has_edge(src, dst, key=CONTROL):
            self.nx.add_edge(src, dst, key=CONTROL)
            self.version += 1

    def node_names(self) -> list[str]:
        """All node names in creation order."""
        nodes = self.nx._node
        return sorted(nodes, key=lambda n: nodes[n]["id"])

    def copy(self) -> Graph:
        """An independent graph with the same nodes (attribute values shared, containers not)."""
        g = Graph()
        g.nx = nx.MultiDiGraph()
        for name, data in self.nx.nodes(data=True):
            node = dict(data)
            node["attrs"] = dict(data["attrs"])
            node["dtypes"] = list(data["dtypes"])
            node["shapes"] = list(data["shapes"])
            g.nx.add_node(name, **node)
        g.nx.add_edges_from(self.nx.edges(keys=True, data=True))
        g._names_in_use = dict(self._names_in_use)
        g._next_id = self._next_id
        g.seed = self.seed
        g.graph_attrs = dict(self.graph_attrs)
        return g

    @property
    def root(self) -> Graph:
        """The outermost graph: this one, or the one a nested graph is (transitively) inside."""
        graph = self
        while graph.outer is not None:
            graph = graph.outer
        return graph

    def capture(self, tensor: Tensor) -> Tensor:
        """`tensor` as a value of this graph. A plain graph holds only its own tensors; a nested
        graph (tfc.ir.subgraph.Subgraph) makes tensors of the graphs around it its inputs."""
        if tensor.graph is self:
            return tensor
        raise ValueError(f"Tensor {tensor.name} must be from the same graph as the op using it.")

    # -- names -----------------------------------------------------------------------------------
    def unique_name(self, name: str, mark_as_used: bool = True) -> str:
        """`name` inside the current name scope, suffixed _1, _2... if already taken."""
        if self._name_stack:
            name = self._name_stack + "/" + name
        key = name.lower()
        i = self._names_in_use.get(key, 0)
        if mark_as_used:
            self._names_in_use[key] = i + 1
        if i > 0:
            base = key
            while key in self._names_in_use:
                key = f"{base}_{i}"
                i += 1
            if mark_as_used:
                self._names_in_use[key] = 1
            name = f"{name}_{i - 1}"
        return name

    def get_name_scope(self) -> str:
        return self._name_stack

    @contextlib.contextmanager
    def name_scope(self, name: str | None) -> Iterator[str]:
        """Open a scope: ops created inside are named "scope/op". Yields "scope/"."""
        old = self._name_stack
        if name is None or name == "":
            new = ""
        elif name.endswith("/"):
            new = name[:-1]
        else:
            new = self.unique_name(name)
        self._name_stack = new
        try:
            yield new + "/" if new else ""
        finally:
            self._name_stack = old

    # -- control dependencies, devices -----------------------------------------------------------
    @contextlib.contextmanager
    def control_dependencies(self, control_inputs: Any) -> Iterator[None]:
        """Ops created inside run only after every op in `control_inputs` (None clears)."""
        if control_inputs is None:
            self._control_stack.append(None)
        else:
            names = []
            for c in control_inputs:
                op = as_operation(c)
                if op.graph is not self:
                    raise ValueError(f"Control input {c} must be from the same graph as the ops")
                names.append(op.name)
            self._control_stack.append(names)
        try:
            yield
        finally:
            self._control_stack.pop()

    def current_control_inputs(self) -> list[str]:
        names: list[str] = []
        for frame in reversed(self._control_stack):
            if frame is None:
                break
            names.extend(n for n in frame if n not in names)
        return names

    @contextlib.contextmanager
    def device(self, spec: Any) -> Iterator[None]:
        """`tf.device`: a device string or DeviceSpec (merged with the enclosing scope) or a
        function of op."""
        if isinstance(spec, DeviceSpec):
            spec = spec.to_string()
        self._device_stack.append(spec)
        try:
            yield
        finally:
            self._device_stack.pop()

    def current_device(self, node_name: str | None = None) -> str:
        """The device of an op created now: as TF1, the innermost scope first; an enclosing
        string scope fills only the fields left open inside it, and a device function gets the
        op with the device found so far and returns its new device."""
        device = ""
        for spec in reversed(self._device_stack):
            if callable(spec):
                if node_name is None:
                    continue
                self.nx.nodes[node_name]["device"] = device
                spec = spec(self.get_operation_by_name(node_name))
                if spec is not None and not isinstance(spec, str):
                    spec = spec.to_string()
                device = merge_device("", spec) if spec else ""
            elif spec is None:  # tf.device(None): the enclosing scopes no longer apply
                break
            else:
                device = merge_device(spec, device)
        return device

    @contextlib.contextmanager
    def colocate_with(self, op: Any, ignore_existing: bool = False) -> Iterator[None]:
        """Ops created inside go where `op` goes: as in TF1, the device scopes are set aside
        (the placer puts the whole colocation group on one device); None clears."""
        name = None if op is None else as_operation(op).name
        devices, self._device_stack = self._device_stack, []
        self._colocation_stack.append(name)
        try:
            yield
        finally:
            self._colocation_stack.pop()
            self._device_stack = devices

    @contextlib.contextmanager
    def container(self, container_name: str) -> Iterator[str]:
        """`tf.container`: the stateful ops created inside (variables, queues) keep their state
        in the resource container `container_name` ("" the default), which
        Session.reset(target, containers) clears."""
        if not isinstance(container_name, str):
            raise TypeError(f"container name must be a string, got {container_name!r}")
        old, self._container = self._container, container_name
        try:
            yield container_name
        finally:
            self._container = old

    @property
    def current_container(self) -> str:
        return self._container

    @contextlib.contextmanager
    def gradient_override_map(self, op_type_map: dict[str, str]) -> Iterator[None]:
        """Ops of the mapped types created inside take their gradient from the function
        registered (tf.RegisterGradient) under the mapped name: TF1's `_gradient_op_type`."""
        if not isinstance(op_type_map, dict):
            raise TypeError("op_type_map must be a dictionary mapping strings to strings")
        for op_type, mapped in op_type_map.items():
            if not isinstance(op_type, str) or not isinstance(mapped, str):
                raise TypeError("op_type_map must be a dictionary mapping strings to strings")
        saved = dict(self._gradient_overrides)
        self._gradient_overrides.update(op_type_map)
        try:
            yield
        finally:
            self._gradient_overrides = saved

    def gradient_override(self, op_type: str) -> str | None:
        """The gradient name an op of `op_type` created now gets, if a map gives one."""
        return self._gradient_overrides.get(op_type)

    # -- lookup ----------------------------------------------------------------------------------
    def get_operation_by_name(self, name: str) -> Operation:
        if not isinstance(name, str):
            raise TypeError(f"Operation names are strings, got {name!r}")
        if name not in self.nx:
            raise KeyError(f"The name '{name}' refers to an Operation not in the graph.")
        handle = self._handles.get(name)
        if handle is None:
            handle = self._handles[name] = Operation(self, name)
        return handle

    def get_tensor_by_name(self, name: str) -> Tensor:
        if not isinstance(name, str) or ":" not in name:
            raise ValueError(
                f"The name {name!r} looks like an Operation name, not a Tensor name; "
                'Tensor names must be of the form "<op_name>:<output_index>".'
            )
        op_name, _, index = name.rpartition(":")
        try:
            i = int(index)
        except ValueError:
            raise ValueError(f"The name {name!r} has a bad output index") from None
        if op_name not in self.nx:
            raise KeyError(
                f"The name '{name}' refers to a Tensor which does not exist. "
                f"The operation, '{op_name}', does not exist in the graph."
            )
        op = self.get_operation_by_name(op_name)
        if not 0 <= i < len(op.outputs):
            raise KeyError(
                f"The name '{name}' refers to a Tensor which does not exist. The operation, "
                f"'{op_name}', exists but only has {len(op.outputs)} outputs."
            )
        return op.outputs[i]

    def as_graph_element(self, obj: Any) -> Tensor | Operation:
        """Resolve a fetch: a Tensor, an Operation, or a name of either, in this graph."""
        if isinstance(obj, str):
            return self.get_tensor_by_name(obj) if ":" in obj else self.get_operation_by_name(obj)
        if isinstance(obj, (Tensor, Operation)):
            if obj.graph is not self:
                raise ValueError(f"{type(obj).__name__} {obj} is not an element of this graph.")
            return obj
        conv = getattr(obj, "_as_graph_element", None)
        if conv is not None:
            return self.as_graph_element(conv())
        raise TypeError(
            f"Can not convert a {type(obj).__name__} into a Tensor or Operation: {obj!r}"
        )

    def get_operations(self) -> list[Operation]:
        return [self.get_operation_by_name(n) for n in self.node_names()]

    # -- collections -----------------------------------------------------------------------------
    def add_to_collection(self, name: str, value: Any) -> None:
        self._collections.setdefault(name, []).append(value)

    def add_to_collections(self, names: Any, value: Any) -> None:
        for n in [names] if isinstance(names, str) else names:
            self.add_to_collection(n, value)

    def get_collection(self, name: str, scope: str | None = None) -> list:
        items = list(self._collections.get(name, []))
        if scope is None:
            return items
        return [x for x in items if getattr(x, "name", "").startswith(scope)]

    def get_collection_ref(self, name: str) -> list:
        return self._collections.setdefault(name, [])

    def get_all_collection_keys(self) -> list[str]:
        return list(self._collections)

    # -- default graph ---------------------------------------------------------------------------
    @contextlib.contextmanager
    def as_default(self) -> Iterator[Graph]:
        _stack().append(self)
        try:
            yield self
        finally:
            _stack().pop()

    def as_graph_def(self, from_version: int | None = None, add_shapes: bool = False) -> Any:
        """`Graph.as_graph_def`: the graph as TensorFlow's GraphDef message (tfc.graphdef);
        with `add_shapes`, each node's output shapes in its `_output_shapes` attribute."""
        if _graph_def_writer is None:
            raise RuntimeError("Graph.as_graph_def needs tfc.graphdef: import tfc")
        return _graph_def_writer(self, add_shapes=add_shapes)

    def __repr__(self) -> str:
        return f"<tfc.Graph with {self.nx.number_of_nodes()} ops>"


# How Tensor.eval, Operation.run and Variable.load find the default session. The client layer
# (tfc/client/session.py) registers its lookup when it is imported, so the graph IR imports
# nothing above it.
_session_lookup: Callable[[str], Any] | None = None


def register_session_lookup(lookup: Callable[[str], Any]) -> None:
    """Install `lookup(what) -> Session`, which raises naming `what` when there is none."""
    global _session_lookup
    _session_lookup = lookup


# How Graph.as_graph_def finds the GraphDef writer: tfc.graphdef (a frontend above the IR)
# registers it when it is imported, as the client registers the session lookup.
_graph_def_writer: Callable[..., Any] | None = None


def register_graph_def_writer(writer: Callable[..., Any]) -> None:
    """Install `writer(graph, add_shapes) -> GraphDef`, which Graph.as_graph_def calls."""
    global _graph_def_writer
    _graph_def_writer = writer


def default_session(what: str) -> Any:
    """The default session, to `what` (e.g. "evaluate a Tensor") with it."""
    if _session_lookup is None:
        raise ValueError(f"Cannot {what}: no session type is loaded (import tfc)")
    return _session_lookup(what)


@dataclasses.dataclass(frozen=True)
class NodeDefView:
    """An operation's NodeDef fields, read-only; attr holds the attribute values themselves
    (not AttrValue protos)."""

    name: str
    op: str
    input: list[str]
    device: str
    attr: dict[str, Any]


class Operation:
    """A node of the graph, as TF1 shows it: name, type, inputs, outputs, attributes."""

    def __init__(self, graph: Graph, name: str) -> None:
        self.graph = graph
        self.name = name
        self._outputs: list[Tensor] | None = None

    @property
    def _node(self) -> dict:
        return self.graph.nx.nodes[self.name]

    @property
    def type(self) -> str:
        return self._node["op"]

    @property
    def device(self) -> str:
        return self._node["device"]

    @property
    def inputs(self) -> list[Tensor]:
        return [
            self.graph.get_operation_by_name(src).outputs[out]
            for src, out in self.graph.input_edges(self.name)
        ]

    @property
    def outputs(self) -> list[Tensor]:
        if self._outputs is None or len(self._outputs) != len(self._node["dtypes"]):
            self._outputs = [Tensor(self, i) for i in range(len(self._node["dtypes"]))]
        return self._outputs

    @property
    def control_inputs(self) -> list[Operation]:
        return [
            self.graph.get_operation_by_name(n) for n in self.graph.control_input_names(self.name)
        ]

    def values(self) -> tuple:
        return tuple(self.outputs)

    def get_attr(self, name: str) -> Any:
        attrs = self._node["attrs"]
        if name not in attrs:
            raise ValueError(f"Operation '{self.name}' ({self.type}) has no attr named '{name}'.")
        return attrs[name]

    @property
    def node_def(self) -> NodeDefView:
        """The op's NodeDef fields as TF's proto names them (`node_def.op`, `.attr`): device
        functions of TF1 programs read `op.node_def.op` to place variables."""
        return NodeDefView(
            name=self.name,
            op=self.type,
            input=[t._as_node_def_input() for t in self.inputs]
            + [f"^{c.name}" for c in self.control_inputs],
            device=self.device,
            attr=dict(self._node["attrs"]),
        )

    def run(self, feed_dict: Any = None, session: Any = None) -> None:
        """Run this operation in `session` (default: the default session)."""
        (session or default_session("run an Operation")).run(self, feed_dict)

    def _add_control_input(self, op: Operation) -> None:
        self.graph.add_control_edge(op.name, self.name)

    def __repr__(self) -> str:
        return f"<tf.Operation '{self.name}' type={self.type}>"


class Tensor:
    """One output of an operation: a symbolic value with a dtype and a (partial) shape."""

    __array_priority__ = 100  # so `ndarray + tensor` defers to Tensor.__radd__

    def __init__(self, op: Operation, value_index: int) -> None:
        self.op = op
        self.value_index = value_index

    @property
    def graph(self) -> Graph:
        return self.op.graph

    @property
    def name(self) -> str:
        return f"{self.op.name}:{self.value_index}"

    @property
    def dtype(self) -> _dtypes.DType:
        return self.op._node["dtypes"][self.value_index]

    @property
    def shape(self) -> TensorShape:
        return TensorShape(self.op._node["shapes"][self.value_index])

    def get_shape(self) -> TensorShape:
        return self.shape

    @property
    def _shape_tuple(self) -> Shape:
        return self.op._node["shapes"][self.value_index]

    def set_shape(self, shape: Any) -> None:
        """Refine the static shape; raises ValueError if it contradicts what is known."""
        merged = merge_shapes(self._shape_tuple, TensorShape(shape).as_tuple())
        if merged is False:
            raise ValueError(
                f"Tensor {self.name} has shape {self.shape}, which is not compatible with "
                f"{TensorShape(shape)}"
            )
        shapes = list(self.op._node["shapes"])
        shapes[self.value_index] = merged
        self.op._node["shapes"] = shapes
        self.graph.version += 1

    @property
    def device(self) -> str:
        return self.op.device

    def consumers(self) -> list[Operation]:
        g = self.graph
        return [g.get_operation_by_name(n) for n, _ in g.consumers(self.op.name, self.value_index)]

    def eval(self, feed_dict: Any = None, session: Any = None) -> Any:
        """The value of this tensor in `session` (default: the default session)."""
        return (session or default_session("evaluate a Tensor")).run(self, feed_dict)

    def _as_node_def_input(self) -> str:
        return self.op.name if self.value_index == 0 else self.name

    def __repr__(self) -> str:
        shape = self._shape_tuple
        shape_part = "" if shape is None else f", shape={self.shape}"
        return f'Tensor("{self.name}"{shape_part}, dtype={self.dtype.name})'

    __str__ = __repr__

    def __hash__(self) -> int:
        return id(self)

    def __eq__(self, other: Any) -> bool:
        return self is other

    def __bool__(self) -> bool:
        raise TypeError(
            "Using a `tf.Tensor` as a Python `bool` is not allowed. Use `if t is not None:` "
            "instead of `if t:` to test if a tensor is defined, and use TensorFlow ops such "
            "as tf.cond to execute subgraphs conditioned on the value of a tensor."
        )

    def __iter__(self) -> Iterator:
        shape = self._shape_tuple
        if shape is None or not shape or shape[0] is None:
            raise TypeError(
                f"Tensor {self.name} is not iterable: its first dimension is not known "
                "at graph construction time."
            )
        return iter([self[i] for i in range(shape[0])])

    def __len__(self) -> int:
        raise TypeError(
            f"len is not well defined for symbolic Tensors ({self.name}). "
            "Use tf.shape(t) or t.shape instead."
        )


def as_operation(x: Any) -> Operation:
    """`x` (an Operation, a Tensor, or an object with an `op`) as the Operation it names."""
    if isinstance(x, Operation):
        return x
    if isinstance(x, Tensor):
        return x.op
    op = getattr(x, "op", None)
    if isinstance(op, Operation):
        return op
    raise TypeError(f"Can not convert {x!r} to an Operation")


# -- the default graph --------------------------------------------------------------------------
_global_default = Graph()
_local = threading.local()


def _stack() -> list[Graph]:
    if not hasattr(_local, "stack"):
        _local.stack = []
    return _local.stack


def get_default_graph() -> Graph:
    stack = _stack()
    return stack[-1] if stack else _global_default


def reset_default_graph() -> None:
    """Replace the global default graph with an empty one."""
    global _global_default
    if _stack():
        raise AssertionError(
            "Do not use tf.reset_default_graph() to clear nested graphs. If you need a "
            "cleared graph, exit the nesting and create a new graph."
        )
    _global_default = Graph()


def name_scope(name: str | None, default_name: str | None = None, values: Any = None) -> Any:
    """`tf.name_scope(name, default_name, values)` in the graph of `values` or the default one."""
    graph = _graph_of(values) if values else get_default_graph()
    return graph.name_scope(name if name is not None else default_name)


def _graph_of(values: Any) -> Graph:
    default = get_default_graph()
    if default.outer is not None:  # inside a branch or loop body: ops belong to it
        return default
    for v in values:
        if isinstance(v, (Tensor, Operation)):
            return v.graph
        g = getattr(v, "graph", None)
        if isinstance(g, Graph):
            return g
    return get_default_graph()


def container(container_name: str) -> Any:
    """`tf.container`: see Graph.container."""
    return get_default_graph().container(container_name)


@contextlib.contextmanager
def init_scope() -> Iterator[None]:
    """`tf.init_scope`: ops created inside go to the outermost graph, outside every branch and
    loop body being built, with no control dependencies (how variables and their initializers
    are created from inside a loop body). The current name scope is kept."""
    graph = get_default_graph()
    root = graph.root
    if root is graph:
        with graph.control_dependencies(None):
            yield
        return
    names = root._name_stack
    root._name_stack = graph._name_stack
    try:
        with root.as_default(), root.control_dependencies(None):
            yield
    finally:
        root._name_stack = names


def control_dependencies(control_inputs: Any) -> Any:
    return get_default_graph().control_dependencies(control_inputs)


def device(spec: Any) -> Any:
    return get_default_graph().device(spec)


def colocate_with(op: Any, ignore_existing: bool = False) -> Any:
    return get_default_graph().colocate_with(op, ignore_existing)


def add_to_collection(name: str, value: Any) -> None:
    get_default_graph().add_to_collection(name, value)


def add_to_collections(names: Any, value: Any) -> None:
    """`tf.add_to_collections`: `value` added to each collection named in `names`."""
    get_default_graph().add_to_collections(names, value)


def get_collection(name: str, scope: str | None = None) -> list:
    return get_default_graph().get_collection(name, scope)


def get_collection_ref(name: str) -> list:
    return get_default_graph().get_collection_ref(name)
