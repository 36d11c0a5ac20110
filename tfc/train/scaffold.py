"""`tf.train.Scaffold`: what a monitored training session needs from the graph to start (the
init ops, the readiness checks, the Saver), built once and taken from the graph's collections
where the model put its own."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from tfc.ir.graph import GraphKeys, get_default_graph
from tfc.ops.control import group
from tfc.summary.summary import merge_all
from tfc.train.saver import Saver
from tfc.variables import (
    global_variables,
    global_variables_initializer,
    local_variables_initializer,
)

__all__ = ["Scaffold"]  # and UninitializedVariables, tfc's own readiness check


class UninitializedVariables:
    """The readiness check of a Scaffold that was given no ready_op: the variables of
    `var_list` (default: all global and local variables when checked) that a session has not
    initialized.

    TF1 builds `report_uninitialized_variables()` ops for this; a tfc Session keeps the record
    itself (`Session.initialized_variables()`), so the check reads it there instead of running
    a graph.
    """

    def __init__(self, var_list: Sequence[Any] | None = None, name: str = "ready") -> None:
        self._var_list = None if var_list is None else list(var_list)
        self.name = name

    def names(self, session: Any) -> list[str]:
        """The op names of the variables `session` has not initialized, in graph order."""
        graph = session.graph
        if self._var_list is None:
            variables = graph.get_collection(GraphKeys.GLOBAL_VARIABLES)
            variables += graph.get_collection(GraphKeys.LOCAL_VARIABLES)
        else:
            variables = self._var_list
        done = session.initialized_variables()
        names = dict.fromkeys(v.op.name for v in variables)
        return [n for n in names if n not in done]

    def __repr__(self) -> str:
        return f"<UninitializedVariables {self.name}>"


class Scaffold:
    """The pieces a session creator (ChiefSessionCreator, WorkerSessionCreator) uses to make a
    model ready: `init_op` (run when no checkpoint is restored; default: the graph's INIT_OP or
    every global variable's initializer), `init_fn(scaffold, session)` after it, `ready_op`
    (a tensor that is empty once the model is ready, or an UninitializedVariables check:
    the default, over every variable), `ready_for_local_init_op` (default: the global
    variables' check), `local_init_op` (default: the local variables' initializers, run on
    every session), `summary_op` and `saver` (default: the graph's SAVERS, else a Saver of
    every global variable, added there). Each default is taken from the graph's collection
    of that name when the model put one there; finalize() makes the missing ones.
    """

    def __init__(
        self,
        init_op: Any = None,
        init_feed_dict: dict | None = None,
        init_fn: Callable[[Scaffold, Any], Any] | None = None,
        ready_op: Any = None,
        ready_for_local_init_op: Any = None,
        local_init_op: Any = None,
        summary_op: Any = None,
        saver: Saver | None = None,
        copy_from_scaffold: Scaffold | None = None,
        local_init_feed_dict: dict | None = None,
    ) -> None:
        if copy_from_scaffold is not None:
            if not isinstance(copy_from_scaffold, Scaffold):
                raise TypeError("copy_from_scaffold is not a Scaffold instance.")
            base = copy_from_scaffold

            def pick(given: Any, inherited: Any) -> Any:
                return given if given is not None else inherited

            init_op = pick(init_op, base.init_op)
            init_feed_dict = pick(init_feed_dict, base.init_feed_dict)
            init_fn = pick(init_fn, base._user_init_fn)
            ready_op = pick(ready_op, base.ready_op)
            ready_for_local_init_op = pick(ready_for_local_init_op, base.ready_for_local_init_op)
            local_init_op = pick(local_init_op, base.local_init_op)
            local_init_feed_dict = pick(local_init_feed_dict, base.local_init_feed_dict)
            summary_op = pick(summary_op, base.summary_op)
            saver = pick(saver, base.saver)
        self._user_init_fn = init_fn
        self._init_op = init_op
        self._init_feed_dict = init_feed_dict
        self._ready_op = ready_op
        self._ready_for_local_init_op = ready_for_local_init_op
        self._local_init_op = local_init_op
        self._local_init_feed_dict = local_init_feed_dict
        self._summary_op = summary_op
        self._saver = saver

    def finalize(self) -> Scaffold:
        """Make the pieces that were not given (idempotent)."""
        if self._init_op is None:
            self._init_op = Scaffold.get_or_default(
                "init_op", GraphKeys.INIT_OP, lambda: group(global_variables_initializer())
            )
        if self._ready_op is None:
            self._ready_op = Scaffold.get_or_default(
                "ready_op", GraphKeys.READY_OP, lambda: UninitializedVariables()
            )
        if self._ready_for_local_init_op is None:
            self._ready_for_local_init_op = Scaffold.get_or_default(
                "ready_for_local_init_op",
                GraphKeys.READY_FOR_LOCAL_INIT_OP,
                lambda: UninitializedVariables(global_variables(), "ready_for_local_init"),
            )
        if self._local_init_op is None:
            self._local_init_op = Scaffold.get_or_default(
                "local_init_op", GraphKeys.LOCAL_INIT_OP, Scaffold.default_local_init_op
            )
        if self._summary_op is None:
            self._summary_op = Scaffold.get_or_default(
                "summary_op", GraphKeys.SUMMARY_OP, merge_all
            )
        if self._saver is None:
            self._saver = Scaffold.get_or_default(
                "saver", GraphKeys.SAVERS, lambda: Saver(sharded=True, allow_empty=True)
            )
        self._saver.build()
        return self

    @property
    def init_fn(self) -> Callable[[Any], Any] | None:
        """init_fn bound to this scaffold: a function of the session."""
        user_init_fn = self._user_init_fn
        if user_init_fn is None:
            return None
        return lambda session: user_init_fn(self, session)

    @property
    def init_op(self) -> Any:
        return self._init_op

    @property
    def init_feed_dict(self) -> dict | None:
        return self._init_feed_dict

    @property
    def ready_op(self) -> Any:
        return self._ready_op

    @property
    def ready_for_local_init_op(self) -> Any:
        return self._ready_for_local_init_op

    @property
    def local_init_op(self) -> Any:
        return self._local_init_op

    @property
    def local_init_feed_dict(self) -> dict | None:
        return self._local_init_feed_dict

    @property
    def summary_op(self) -> Any:
        return self._summary_op

    @property
    def saver(self) -> Saver | None:
        return self._saver

    @staticmethod
    def get_or_default(arg_name: str, collection_key: str, default_constructor: Callable) -> Any:
        """The one item of the default graph's collection `collection_key`, or
        `default_constructor()` added to it (a None result is not added)."""
        elements = get_default_graph().get_collection(collection_key)
        if elements:
            if len(elements) > 1:
                raise RuntimeError(
                    f'More than one item in the collection "{collection_key}". Please indicate '
                    f"which one to use by passing it to the tf.Scaffold constructor as:  "
                    f"tf.Scaffold({arg_name}=item to use)"
                )
            return elements[0]
        made = default_constructor()
        if made is not None:
            get_default_graph().add_to_collection(collection_key, made)
        return made

    @staticmethod
    def default_local_init_op() -> Any:
        """The local variables' initializers, grouped (TF1 also initializes lookup tables,
        which tfc does not have)."""
        return group(local_variables_initializer())
