"""tf.Variable, tf.get_variable and variable scopes, as TF1 builds them.

A Variable named W is four nodes: W (VariableV2, the buffer), W/initial_value (when given a
Python value), W/Assign (its initializer) and W/read (the value other ops consume).
"""

from __future__ import annotations

import contextlib
import enum
from collections.abc import Iterator
from typing import Any

import numpy as np

from tfc.ir import dtypes as _dt
from tfc.ir.graph import (
    Graph,
    GraphKeys,
    Operation,
    Tensor,
    colocate_with,
    control_dependencies,
    default_session,
    get_default_graph,
    init_scope,
    name_scope,
)
from tfc.ir.tensor_shape import TensorShape
from tfc.ops.array import rank, stack
from tfc.ops.array_dynamic import boolean_mask
from tfc.ops.constant import constant, convert_to_tensor
from tfc.ops.control import group, no_op
from tfc.ops.logging_ops import Assert
from tfc.ops.logic import logical_not
from tfc.ops.reduce import reduce_all
from tfc.ops.registry import apply_op
from tfc.ops.state import assign, assign_add, assign_sub, count_up_to, is_variable_initialized

__all__ = [
    "Variable",
    "global_variables",
    "trainable_variables",
    "local_variables",
    "all_variables",
    "variables_initializer",
    "global_variables_initializer",
    "local_variables_initializer",
    "initialize_all_variables",
    "get_variable",
    "variable_scope",
    "get_variable_scope",
    "VariableScope",
    "AUTO_REUSE",
    "get_local_variable",
    "model_variables",
    "initialize_variables",
    "initialize_local_variables",
    "tables_initializer",
    "initialize_all_tables",
    "make_template",
    "VariableAggregation",
    "VariableSynchronization",
    "create_partitioned_variables",
    "variable_op_scope",
    "op_scope",
    "report_uninitialized_variables",
    "assert_variables_initialized",
    "no_regularizer",
]


class VariableSynchronization(enum.Enum):
    """When a distributed variable's copies agree; tfc's variables have one copy, and ON_READ
    (a copy per replica, aggregated when read) makes a variable non-trainable, as in TF."""

    AUTO = 0
    NONE = 1
    ON_WRITE = 2
    ON_READ = 3


class VariableAggregation(enum.Enum):
    """How a distributed variable's updates from several replicas combine; tfc's variables
    have one copy, so the aggregation is checked and kept, never applied."""

    NONE = 0
    SUM = 1
    MEAN = 2
    ONLY_FIRST_REPLICA = 3


def trainable_for_synchronization(synchronization: Any, trainable: bool | None, name: Any) -> bool:
    """TF's rule: ON_READ variables cannot be trained; otherwise trainable defaults to True."""
    if synchronization is None:
        synchronization = VariableSynchronization.AUTO
    if not isinstance(synchronization, VariableSynchronization):
        raise ValueError(
            f"Invalid variable synchronization mode: {synchronization} for variable: {name}"
        )
    if synchronization is VariableSynchronization.ON_READ:
        if trainable:
            raise ValueError(
                "Synchronization value can be set to VariableSynchronization.ON_READ only for "
                "non-trainable variables. You have specified trainable=True and "
                "synchronization=VariableSynchronization.ON_READ."
            )
        return False
    return True if trainable is None else bool(trainable)


def check_aggregation(aggregation: Any, name: Any) -> None:
    if aggregation is not None and not isinstance(aggregation, VariableAggregation):
        raise ValueError(f"Invalid variable aggregation mode: {aggregation} for variable: {name}")


class Variable:
    """`tf.Variable`: state that persists across `Session.run` calls."""

    def __init__(
        self,
        initial_value: Any = None,
        trainable: bool | None = None,
        collections: Any = None,
        validate_shape: bool = True,
        caching_device: Any = None,
        name: str | None = None,
        variable_def: Any = None,
        dtype: Any = None,
        expected_shape: Any = None,
        import_scope: Any = None,
        constraint: Any = None,
        use_resource: Any = None,
        synchronization: Any = None,
        aggregation: Any = None,
    ) -> None:
        trainable = trainable_for_synchronization(synchronization, trainable, name)
        check_aggregation(aggregation, name)
        if variable_def is not None:
            if initial_value is not None:
                raise ValueError("variable_def and initial_value are mutually exclusive.")
            self._init_from_variable_def(variable_def, import_scope)
            return
        if initial_value is None:
            raise ValueError("initial_value must be specified.")
        dtype = None if dtype is None else _dt.as_dtype(dtype)
        from_fn = callable(initial_value)
        # made in the outermost graph even inside a branch or loop body (TF1 lifts variable
        # initializers out of control flow the same way)
        with (
            _outside_control_flow(),
            name_scope(name, "Variable", [] if from_fn else [initial_value]) as scope,
        ):
            if from_fn:
                with name_scope("Initializer"):
                    initial_value = initial_value()
            self._initial_value = convert_to_tensor(
                initial_value, name="initial_value", dtype=dtype
            )
            shape = self._initial_value._shape_tuple
            if validate_shape and not TensorShape(shape).is_fully_defined():
                raise ValueError(
                    f"initial_value must have a shape specified: {self._initial_value}"
                )
            attrs = {"shape": shape, "dtype": self._initial_value.dtype}
            container = self._initial_value.graph.current_container
            if container:  # tf.container: Session.reset(target, [container]) clears it
                attrs["container"] = container
            self._variable = apply_op("VariableV2", [], attrs, name=scope).outputs[0]
            with colocate_with(self._variable.op):
                self._initializer_op = assign(
                    self._variable,
                    self._initial_value,
                    validate_shape=validate_shape,
                    name="Assign",
                ).op
                self._snapshot = apply_op("Identity", [self._variable], name="read").outputs[0]
        self._trainable = trainable
        if collections is None:
            collections = [GraphKeys.GLOBAL_VARIABLES]
        collections = list(collections)
        if trainable and GraphKeys.TRAINABLE_VARIABLES not in collections:
            collections.append(GraphKeys.TRAINABLE_VARIABLES)
        self.graph.add_to_collections(collections, self)

    def _init_from_variable_def(self, variable_def: Any, import_scope: str | None) -> None:
        """Wrap nodes already in the default graph (an imported meta graph): `variable_def` is a
        tfc.io.meta_graph.VariableDef, its names relative to `import_scope`. As in TF, the
        variable joins no collection: the importer restores those."""
        graph = get_default_graph()

        def scoped(name: str) -> str:
            return f"{import_scope}/{name}" if import_scope else name

        self._variable = graph.get_tensor_by_name(scoped(variable_def.variable_name))
        if self._variable.op.type != "VariableV2":
            raise ValueError(
                f"variable_def names {self._variable.name}, an output of a "
                f"{self._variable.op.type} op, not of a VariableV2"
            )
        self._initializer_op = graph.get_operation_by_name(scoped(variable_def.initializer_name))
        self._snapshot = graph.get_tensor_by_name(scoped(variable_def.snapshot_name))
        initial = variable_def.initial_value_name
        self._initial_value = graph.get_tensor_by_name(scoped(initial)) if initial else None
        self._trainable = bool(variable_def.trainable)

    # -- what TF1 code reads off a Variable ------------------------------------------------------
    @property
    def name(self) -> str:
        return self._variable.name

    @property
    def op(self) -> Operation:
        return self._variable.op

    @property
    def graph(self) -> Graph:
        return self._variable.graph

    @property
    def dtype(self) -> _dt.DType:
        return self._variable.dtype

    @property
    def shape(self) -> TensorShape:
        return self._variable.shape

    def get_shape(self) -> TensorShape:
        return self.shape

    @property
    def device(self) -> str:
        return self._variable.device

    @property
    def trainable(self) -> bool:
        return self._trainable

    @property
    def initializer(self) -> Operation:
        return self._initializer_op

    @property
    def initial_value(self) -> Tensor:
        return self._initial_value

    def initialized_value(self) -> Tensor:
        """The value this variable is initialized with (to initialize another one from it)."""
        return self._initial_value

    def value(self) -> Tensor:
        return self._snapshot

    def use_initial_value(self, value: Any, name: str = "Assign") -> None:
        """Initialize from `value` from now on: its initializer becomes an assignment of
        `value` (tf.train.init_from_checkpoint does this, as TF's does), so an initializer op
        made later, e.g. by global_variables_initializer(), runs the new one."""
        with colocate_with(self.op), name_scope(self.op.name + "/"):
            value = convert_to_tensor(value, name="checkpoint_value", dtype=self.dtype)
            if not value.shape.is_compatible_with(self.shape):
                raise ValueError(
                    f"Cannot initialize variable {self.op.name} of shape {self.shape} from a "
                    f"value of shape {value.shape}"
                )
            self._initializer_op = assign(self._variable, value, name=name).op
        self._initial_value = value

    def read_value(self) -> Tensor:
        """A fresh read: ordered after any control dependencies active where it is created."""
        with name_scope(self.op.name + "/"):
            return apply_op("Identity", [self._variable], name="read").outputs[0]

    def assign(
        self,
        value: Any,
        use_locking: bool = False,
        name: str | None = None,
        read_value: bool = True,
    ) -> Any:
        result = assign(self._variable, value, use_locking=use_locking, name=name)
        return result if read_value else result.op

    def assign_add(
        self,
        delta: Any,
        use_locking: bool = False,
        name: str | None = None,
        read_value: bool = True,
    ) -> Any:
        result = assign_add(self._variable, delta, use_locking=use_locking, name=name)
        return result if read_value else result.op

    def count_up_to(self, limit: int) -> Tensor:
        """`Variable.count_up_to`: the value, incremented; OutOfRangeError at `limit`."""
        return count_up_to(self._variable, limit)

    def assign_sub(
        self,
        delta: Any,
        use_locking: bool = False,
        name: str | None = None,
        read_value: bool = True,
    ) -> Any:
        result = assign_sub(self._variable, delta, use_locking=use_locking, name=name)
        return result if read_value else result.op

    def eval(self, session: Any = None) -> Any:
        return self._variable.eval(session=session)

    def load(self, value: Any, session: Any = None) -> None:
        """Write `value` into the variable (through a fed assignment)."""
        session = session or default_session("load a Variable")
        if not hasattr(self, "_load_placeholder"):
            from tfc.ops.constant import placeholder

            with name_scope(self.op.name + "/"):
                self._load_placeholder = placeholder(self.dtype, self.shape, name="load_value")
                self._load_op = assign(self._variable, self._load_placeholder, name="load").op
        session.run(self._load_op, {self._load_placeholder: value})

    def _as_graph_element(self) -> Tensor:
        return self._variable

    def _as_tensor(self, dtype: Any = None) -> Tensor:
        if dtype is not None and _dt.as_dtype(dtype) != self.dtype:
            raise ValueError(
                f"Incompatible type conversion requested to type '{_dt.as_dtype(dtype).name}' "
                f"for variable of type '{self.dtype.name}'"
            )
        return self._snapshot

    def __repr__(self) -> str:
        return f"<tf.Variable '{self.name}' shape={self.shape} dtype={self.dtype.name}_ref>"

    def __hash__(self) -> int:
        return id(self)

    def __eq__(self, other: Any) -> bool:
        return self is other


# -- collections and initializers ---------------------------------------------------------------
def _outside_control_flow() -> Any:
    """tf.init_scope inside a branch or loop body being built; nothing otherwise."""
    return init_scope() if get_default_graph().outer is not None else contextlib.nullcontext()


def global_variables(scope: str | None = None) -> list[Variable]:
    return get_default_graph().get_collection(GraphKeys.GLOBAL_VARIABLES, scope)


all_variables = global_variables


def trainable_variables(scope: str | None = None) -> list[Variable]:
    return get_default_graph().get_collection(GraphKeys.TRAINABLE_VARIABLES, scope)


def local_variables(scope: str | None = None) -> list[Variable]:
    return get_default_graph().get_collection(GraphKeys.LOCAL_VARIABLES, scope)


def variables_initializer(var_list: Any, name: str = "init") -> Operation:
    """An op that runs the initializers of `var_list`."""
    if var_list:
        return group(*[v.initializer for v in var_list], name=name)
    return no_op(name=name)


def global_variables_initializer() -> Operation:
    return variables_initializer(global_variables(), name="init")


def local_variables_initializer() -> Operation:
    return variables_initializer(local_variables(), name="init")


initialize_all_variables = global_variables_initializer


# -- get_variable and variable scopes -----------------------------------------------------------
class _AutoReuse:
    def __repr__(self) -> str:
        return "AUTO_REUSE"


AUTO_REUSE = _AutoReuse()


class VariableScope:
    def __init__(
        self, name: str, reuse: Any = None, initializer: Any = None, dtype: Any = None
    ) -> None:
        self.name = name
        self.reuse = reuse
        self.initializer = initializer
        self.dtype = dtype
        self.original_name_scope = name + "/" if name else ""

    def reuse_variables(self) -> None:
        self.reuse = True


def _scope_stack(graph: Graph) -> list[VariableScope]:
    graph = graph.root  # a loop body's variables and scopes are the outermost graph's
    if not hasattr(graph, "_variable_scopes"):
        graph._variable_scopes = [VariableScope("")]
        graph._variable_store = {}
        graph._variable_scope_counts = {}
    return graph._variable_scopes


def get_variable_scope() -> VariableScope:
    return _scope_stack(get_default_graph())[-1]


@contextlib.contextmanager
def variable_scope(
    name_or_scope: Any,
    default_name: str | None = None,
    values: Any = None,
    initializer: Any = None,
    reuse: Any = None,
    dtype: Any = None,
    auxiliary_name_scope: bool = True,
    **unused: Any,
) -> Iterator[VariableScope]:
    """`tf.variable_scope`: prefixes get_variable names (and op names) with the scope name.

    With `auxiliary_name_scope=False` no name scope is opened (TF1's switch: a layer re-enters
    its variable scope and names its ops in the name scope it opened the first time)."""
    graph = get_default_graph()
    stack = _scope_stack(graph)
    outer = stack[-1]
    if isinstance(name_or_scope, VariableScope):
        full = name_or_scope.name
    else:
        base = name_or_scope if name_or_scope is not None else default_name
        if base is None:
            raise ValueError("variable_scope needs a name or a default_name")
        full = f"{outer.name}/{base}" if outer.name else base
        if name_or_scope is None:  # default names are made unique, as TF does
            taken = graph.root._variable_scope_counts
            if taken.get(full, 0):
                k = 1
                while taken.get(f"{full}_{k}", 0):
                    k += 1
                full = f"{full}_{k}"
    # As TF1's scope store: opening a scope counts it, so a later default name avoids it, and
    # starts its sub-scope counts afresh, so a model function called again under the same scope
    # with reuse names its layers as the first call did (conv2d, conv2d_1, ... again); leaving
    # it forgets the counts made inside
    counts = graph.root._variable_scope_counts
    counts[full] = counts.get(full, 0) + 1
    saved_counts = dict(counts)
    for key in [k for k in counts if k.startswith(full + "/")]:
        del counts[key]
    # None inherits the reuse of the enclosing scope (of a scope object: its own), AUTO_REUSE
    # included, as in TF1; an enclosing reuse=True holds in every sub-scope
    parent_reuse = name_or_scope.reuse if isinstance(name_or_scope, VariableScope) else outer.reuse
    inherited_reuse = True if outer.reuse is True else (reuse or parent_reuse)
    scope = VariableScope(
        full,
        reuse=inherited_reuse,
        initializer=initializer if initializer is not None else outer.initializer,
        dtype=dtype if dtype is not None else outer.dtype,
    )
    stack.append(scope)
    try:
        if not auxiliary_name_scope:
            yield scope
            return
        with name_scope(full.rsplit("/", 1)[-1]) as opened:
            if not isinstance(name_or_scope, VariableScope):
                scope.original_name_scope = opened  # the name scope it was created in
            yield scope
    finally:
        stack.pop()
        graph.root._variable_scope_counts = saved_counts


def get_variable(
    name: str,
    shape: Any = None,
    dtype: Any = None,
    initializer: Any = None,
    regularizer: Any = None,
    trainable: bool | None = None,
    collections: Any = None,
    **unused: Any,
) -> Variable:
    """`tf.get_variable`: create, or with reuse return, the variable named scope/name."""
    trainable = trainable_for_synchronization(unused.get("synchronization"), trainable, name)
    check_aggregation(unused.get("aggregation"), name)
    graph = get_default_graph()
    scope = _scope_stack(graph)[-1]
    full = f"{scope.name}/{name}" if scope.name else name
    store = graph.root._variable_store
    reuse = scope.reuse
    if full in store:
        if reuse is True or reuse is AUTO_REUSE:
            found = store[full]
            if shape is not None and not found.shape.is_compatible_with(shape):
                raise ValueError(
                    f"Trying to share variable {full}, but specified shape {TensorShape(shape)} "
                    f"and found shape {found.shape}."
                )
            return found
        raise ValueError(
            f"Variable {full} already exists, disallowed. Did you mean to set reuse=True or "
            "reuse=tf.AUTO_REUSE in VarScope?"
        )
    if reuse is True:
        raise ValueError(
            f"Variable {full} does not exist, or was not created with tf.get_variable(). Did "
            "you mean to set reuse=tf.AUTO_REUSE in VarScope?"
        )
    dtype = _dt.as_dtype(dtype or scope.dtype or _dt.float32)
    initializer = initializer if initializer is not None else scope.initializer
    if unused.get("partitioner") is not None:  # shards NAME/part_K (tfc/partitioned_variables.py)
        from tfc.partitioned_variables import create_partitioned_variable

        store[full] = create_partitioned_variable(
            get_variable, full, name, shape, dtype, initializer, unused["partitioner"],
            regularizer=regularizer, trainable=trainable, collections=collections,
        )  # fmt: skip
        return store[full]
    if (
        isinstance(initializer, (Tensor, Variable))
        or not callable(initializer)
        and initializer is not None
    ):
        init_value: Any = initializer
        if shape is not None and isinstance(initializer, Tensor):
            if not initializer.shape.is_compatible_with(shape):
                raise ValueError(
                    f"The initializer's shape {initializer.shape} does not match {shape}"
                )
    else:
        if shape is None:
            raise ValueError(
                f"Shape of a new variable ({full}) must be fully defined, but is None."
            )
        shape = TensorShape(shape)
        if not shape.is_fully_defined():
            raise ValueError(
                f"Shape of a new variable ({full}) must be fully defined, but is {shape}."
            )
        if initializer is None:
            import tfc.init_ops as init_ops

            initializer = (
                init_ops.glorot_uniform_initializer()
                if dtype.is_floating
                else init_ops.zeros_initializer()
            )

        def init_value() -> Tensor:
            return initializer(shape.as_list(), dtype=dtype)

    # the variable is named with its full scope path, whatever the current name scope is
    with name_scope(None):
        variable = Variable(
            init_value, trainable=trainable, collections=collections, name=full, dtype=dtype
        )
    store[full] = variable
    if regularizer is not None:
        with _outside_control_flow(), name_scope(None), name_scope(full + "/Regularizer/"):
            loss = regularizer(variable.value())
        if loss is not None:
            graph.add_to_collection(GraphKeys.REGULARIZATION_LOSSES, loss)
    return variable


# -- TF1's further variable functions -------------------------------------------------------------
def get_local_variable(
    name: str,
    shape: Any = None,
    dtype: Any = None,
    initializer: Any = None,
    regularizer: Any = None,
    trainable: bool = False,
    collections: Any = None,
    **unused: Any,
) -> Variable:
    """`tf.get_local_variable`: get_variable in LOCAL_VARIABLES (not saved, not trained)."""
    collections = list(collections or []) + [GraphKeys.LOCAL_VARIABLES]
    return get_variable(
        name, shape, dtype, initializer, regularizer, trainable, collections, **unused
    )


def model_variables(scope: str | None = None) -> list[Variable]:
    """`tf.model_variables`: the MODEL_VARIABLES collection (layers of tf.contrib add to it)."""
    return get_default_graph().get_collection(GraphKeys.MODEL_VARIABLES, scope)


initialize_variables = variables_initializer
initialize_local_variables = local_variables_initializer


def tables_initializer(name: str = "init_all_tables") -> Operation:
    """`tf.tables_initializer`: an op running the TABLE_INITIALIZERS collection's initializers
    (a no-op when it is empty, as it is until lookup tables exist)."""
    ops = get_default_graph().get_collection(GraphKeys.TABLE_INITIALIZERS)
    return group(*ops, name=name) if ops else no_op(name=name)


initialize_all_tables = tables_initializer


class Template:
    """A function whose variables are created on the first call and reused by later calls, in
    one variable scope (tf.make_template)."""

    def __init__(self, name: str, func: Any, create_scope_now: bool, unique_name: Any) -> None:
        if name is None:
            raise ValueError("name cannot be None.")
        self._name, self._func, self._unique_name = name, func, unique_name
        self._scope: VariableScope | None = None
        self._variables_created = False
        if create_scope_now:
            with self._enter() as scope:
                self._scope = scope

    def _enter(self) -> Any:
        if self._scope is not None:
            return variable_scope(self._scope, reuse=self._variables_created or None)
        if self._unique_name is not None:
            return variable_scope(self._unique_name)
        return variable_scope(None, default_name=self._name)

    @property
    def variable_scope(self) -> VariableScope | None:
        return self._scope

    @property
    def variable_scope_name(self) -> str | None:
        return None if self._scope is None else self._scope.name

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        with self._enter() as scope:
            self._scope = scope
            before = len(trainable_variables())
            result = self._func(*args, **kwargs)
            if self._variables_created and len(trainable_variables()) != before:
                raise ValueError(
                    f"Trainable variable created when calling a template after the first time, "
                    f"perhaps you used tf.Variable when you meant tf.get_variable: {self._name}"
                )
            self._variables_created = True
            return result


def make_template(
    name_: str,
    func_: Any,
    create_scope_now_: bool = False,
    unique_name_: str | None = None,
    custom_getter_: Any = None,
    **kwargs: Any,
) -> Template:
    """`tf.make_template`: `func_` (with `kwargs` bound) wrapped so that its get_variable calls
    create variables under one scope on the first call and reuse them afterwards."""
    if custom_getter_ is not None:
        raise NotImplementedError("tfc's make_template has no custom_getter_")

    def bound(*args: Any, **more: Any) -> Any:
        return func_(*args, **kwargs, **more)

    return Template(name_, bound, create_scope_now_, unique_name_)


# -- TF1's deprecated spellings of partitioned variables and scopes -------------------------------
def create_partitioned_variables(
    shape: Any,
    slicing: Any,
    initializer: Any,
    dtype: Any = _dt.float32,
    trainable: bool = True,
    collections: Any = None,
    name: str | None = None,
    reuse: Any = None,
) -> list[Variable]:
    """`tf.create_partitioned_variables`: the shards of a variable of `shape`, `slicing[k]`
    of them along the one axis k whose slicing is above 1 (the first dim % n shards one row
    longer), named <scope>/part_K in the variable scope `name` (default "PartitionedVariable",
    made unique). An initializer function is called per shard with the shard's shape; an
    array (or a Python value of `shape`) gives each shard its rows."""
    from tfc.partitioned_variables import shard_shapes

    dims = list(shape)
    slices = [int(s) for s in slicing]
    if len(dims) != len(slices):
        raise ValueError(
            "The 'shape' and 'slicing' of a partitioned Variable must have the length: "
            f"shape: {dims}, slicing: {slices}"
        )
    if len(dims) < 1:
        raise ValueError(f"A partitioned Variable must have rank at least 1: shape: {dims}")
    if sum(1 for s in slices if s > 1) > 1:
        raise ValueError(
            "Can only slice a variable along one dimension: "
            f"shape: {tuple(dims)}, partitioning: {slices}"
        )
    if any(s < 1 for s in slices):
        raise ValueError(f"Each slicing must be at least 1, got {slices}")
    full = TensorShape(dims)
    axis, shards = shard_shapes(full, slices)
    with variable_scope(name, default_name="PartitionedVariable", reuse=reuse):
        variables = []
        for k, (shard, offset) in enumerate(shards):
            if initializer is not None and not callable(initializer):
                value = np.asarray(initializer)
                index = [slice(None)] * len(shard)
                index[axis] = slice(offset, offset + shard[axis])
                part_init: Any = value[tuple(index)]
            else:
                part_init = initializer
            variables.append(
                get_variable(
                    f"part_{k}",
                    shape=shard,
                    dtype=dtype,
                    initializer=part_init,
                    trainable=trainable,
                    collections=collections,
                )  # fmt: skip
            )
        return variables


@contextlib.contextmanager
def variable_op_scope(
    values: Any,
    name_or_scope: Any,
    default_name: str | None = None,
    initializer: Any = None,
    regularizer: Any = None,
    caching_device: Any = None,
    partitioner: Any = None,
    custom_getter: Any = None,
    reuse: Any = None,
    dtype: Any = None,
    use_resource: Any = None,
    constraint: Any = None,
) -> Iterator[VariableScope]:
    """`tf.variable_op_scope`: TF1's deprecated spelling of variable_scope, with `values`
    first."""
    with variable_scope(
        name_or_scope, default_name=default_name, values=values, initializer=initializer,
        reuse=reuse, dtype=dtype, regularizer=regularizer, caching_device=caching_device,
        partitioner=partitioner, custom_getter=custom_getter, use_resource=use_resource,
        constraint=constraint,
    ) as scope:  # fmt: skip
        yield scope


@contextlib.contextmanager
def op_scope(values: Any, name: str | None, default_name: str | None = None) -> Iterator[str]:
    """`tf.op_scope`: TF1's deprecated spelling of name_scope(name, default_name, values)."""
    with name_scope(name, default_name, values) as scope:
        yield scope


# -- which variables are initialized --------------------------------------------------------------
def _variables_to_check(var_list: Any) -> list:
    """var_list, else every global and local variable, else every VariableV2 node (TF's
    fallback for graphs built without tf.Variable)."""
    if var_list is not None:
        return list(var_list)
    found = global_variables() + local_variables()
    if not found:
        graph = get_default_graph()
        found = [op.outputs[0] for op in graph.get_operations() if op.type == "VariableV2"]
    return found


def _variable_ref(v: Any) -> Tensor:
    """A Variable's VariableV2 output (or the VariableV2 output given)."""
    return getattr(v, "_variable", v)


def report_uninitialized_variables(
    var_list: Any = None, name: str = "report_uninitialized_variables"
) -> Tensor:
    """`tf.report_uninitialized_variables`: a 1-D string tensor of the names of the variables of
    `var_list` (default: every global and local variable) not yet initialized in the session
    that runs it, in var_list's order (empty when all are)."""
    variables = _variables_to_check(var_list)
    with name_scope(name):
        if not variables:
            return constant(np.array([], dtype=object), dtype=_dt.string)
        initialized = stack(
            [is_variable_initialized(getattr(v, "_variable", v)) for v in variables]
        )
        names = constant(np.array([_variable_ref(v).op.name for v in variables], dtype=object))
        return boolean_mask(names, logical_not(initialized))


def assert_variables_initialized(var_list: Any = None) -> Tensor | None:
    """`tf.assert_variables_initialized`: an op whose run fails, naming the variables, while any
    of `var_list` (default: every global and local variable) is not initialized; its value is
    the variables' ranks, as TF's. TF documents a FailedPreconditionError but its own op
    (the ranks, which its optimizer computes without reading the variables) does not fail;
    tfc's checks the variables as the documentation says, and fails as tf.Assert does, with
    InvalidArgumentError "assertion failed: [Attempting to use uninitialized value] [names]"."""
    variables = _variables_to_check(var_list)
    if not variables:
        return None
    with name_scope("assert_variables_initialized"):
        initialized = stack(
            [is_variable_initialized(getattr(v, "_variable", v)) for v in variables]
        )
        missing = report_uninitialized_variables(variables, name="uninitialized")
        check = Assert(
            reduce_all(initialized), ["Attempting to use uninitialized value", missing],
            summarize=len(variables),
        )  # fmt: skip
        with control_dependencies([check]):
            return stack([rank(_variable_ref(v)) for v in variables])


def no_regularizer(_: Any) -> None:
    """`tf.no_regularizer`: a regularizer that adds no loss (to switch off a scope's default
    regularizer for one variable)."""
    return None
