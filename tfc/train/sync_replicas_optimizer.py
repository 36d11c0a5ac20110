"""`tf.train.SyncReplicasOptimizer`: synchronous data parallelism, done by the compiled ps.

In TF1 this wrapper builds gradient accumulators on the ps, a token queue and a chief queue
runner that applies the averaged update once `replicas_to_aggregate` gradients have arrived.
In tfc the ps task's compiled driver does exactly that (runtime/src/distributed/tfc_dist_ps.c,
synchronous mode: it waits for the gradients of `replicas_to_aggregate` workers, drops late
ones, averages them and applies one update per step). So the graph this optimizer builds is the
wrapped optimizer's own; what it adds is the record of the aggregation a cluster worker's
session compiles the cluster for (tfc/aot/cluster_session.py). In a single process it trains
as the wrapped optimizer does: one replica, its gradients applied at once.
"""

from __future__ import annotations

import weakref
from typing import Any

from tfc.ir.graph import Operation
from tfc.ops.control import no_op
from tfc.train.optimizer import Optimizer
from tfc.train.session_run_hook import SessionRunHook

__all__ = ["SyncReplicasOptimizer", "sync_replicas_of"]

# train op -> the SyncReplicasOptimizer that made it
_SYNC_TRAIN_OPS: weakref.WeakKeyDictionary[Operation, SyncReplicasOptimizer] = (
    weakref.WeakKeyDictionary()
)


def sync_replicas_of(train_op: Operation) -> SyncReplicasOptimizer | None:
    """The SyncReplicasOptimizer whose apply_gradients made `train_op`, else None."""
    return _SYNC_TRAIN_OPS.get(train_op)


class _SyncReplicasHook(SessionRunHook):
    """TF1's hook starts the chief's queue runner and fills the token queue; the compiled ps
    needs neither, so this hook only checks that it belongs to the optimizer it was made by."""

    def __init__(self, optimizer: SyncReplicasOptimizer, is_chief: bool, num_tokens: int) -> None:
        self._optimizer = optimizer
        self._is_chief = is_chief
        self._num_tokens = num_tokens

    def begin(self) -> None:
        if not self._optimizer._gradients_applied:
            raise ValueError(
                "SyncReplicasOptimizer.apply_gradient should be called before using the hook."
            )


class _NoChiefQueueRunner:
    """get_chief_queue_runner()'s runner: TF1 scripts start it (Supervisor.start_queue_runners,
    tf.train.add_queue_runner); it has no thread to start, as the compiled ps applies the
    aggregated gradients itself."""

    name = "sync_replicas_chief"
    queue = None
    enqueue_ops: list = []
    exceptions_raised: list = []

    def create_threads(
        self, sess: Any, coord: Any = None, daemon: bool = False, start: bool = False
    ) -> list:
        return []


class SyncReplicasOptimizer(Optimizer):
    """Aggregates the gradients of `replicas_to_aggregate` replicas, averages them and applies
    them with `opt` once per step (TF1's `tf.train.SyncReplicasOptimizer`).

    `total_num_replicas` (default: replicas_to_aggregate) is the number of workers; with more
    workers than replicas to aggregate, the late ones are backup workers whose gradients are
    dropped. `variable_averages`/`variables_to_average` are refused (not supported).
    `get_init_tokens_op`, `get_chief_queue_runner` and the hook's token queue are no-ops under
    tfc's compiled ps (see the module docstring): they exist so that TF1 scripts run as written.
    """

    def __init__(
        self,
        opt: Optimizer,
        replicas_to_aggregate: int,
        total_num_replicas: int | None = None,
        variable_averages: Any = None,
        variables_to_average: Any = None,
        use_locking: bool = False,
        name: str = "sync_replicas",
    ) -> None:
        if not isinstance(opt, Optimizer):
            raise TypeError(f"opt must be a tf.train.Optimizer, got {type(opt).__name__}")
        if total_num_replicas is None:
            total_num_replicas = replicas_to_aggregate
        if not isinstance(replicas_to_aggregate, int) or replicas_to_aggregate < 1:
            raise ValueError(
                f"replicas_to_aggregate must be a positive integer, got {replicas_to_aggregate!r}"
            )
        if total_num_replicas < replicas_to_aggregate:
            raise ValueError(
                f"total_num_replicas ({total_num_replicas}) is smaller than "
                f"replicas_to_aggregate ({replicas_to_aggregate}): tfc's compiled ps averages the "
                "gradients of distinct workers, so extra gradients from one worker are not "
                "supported"
            )
        if variable_averages is not None or variables_to_average is not None:
            raise NotImplementedError(
                "SyncReplicasOptimizer(variable_averages=...) is not supported by tfc: keep a "
                "tf.train.ExponentialMovingAverage of the trained variables after training"
            )
        super().__init__(use_locking, name)
        self._opt = opt
        self._replicas_to_aggregate = replicas_to_aggregate
        self._total_num_replicas = total_num_replicas
        self._gradients_applied = False
        self._train_op: Operation | None = None

    @property
    def replicas_to_aggregate(self) -> int:
        return self._replicas_to_aggregate

    @property
    def total_num_replicas(self) -> int:
        return self._total_num_replicas

    def compute_gradients(self, *args: Any, **kwargs: Any) -> list:
        """The wrapped optimizer's gradients of this replica's loss."""
        return self._opt.compute_gradients(*args, **kwargs)

    def apply_gradients(
        self, grads_and_vars: Any, global_step: Any = None, name: str | None = None
    ) -> Operation:
        """The wrapped optimizer's update, marked as this optimizer's synchronous step: a
        cluster worker's session runs it with the ps averaging `replicas_to_aggregate` sets of
        gradients per step."""
        if not grads_and_vars:
            raise ValueError("Must supply at least one variable")
        if global_step is None:
            raise ValueError("Global step is required to check staleness")
        train_op = self._opt.apply_gradients(grads_and_vars, global_step=global_step, name=name)
        _SYNC_TRAIN_OPS[train_op] = self
        self._train_op = train_op
        self._gradients_applied = True
        return train_op

    def get_slot(self, *args: Any, **kwargs: Any) -> Any:
        return self._opt.get_slot(*args, **kwargs)

    def get_slot_names(self, *args: Any, **kwargs: Any) -> list[str]:
        return self._opt.get_slot_names(*args, **kwargs)

    def variables(self) -> list:
        return self._opt.variables()

    def get_chief_queue_runner(self) -> _NoChiefQueueRunner:
        """TF1's chief runs a queue runner that applies the aggregated gradients; tfc's ps
        applies them itself, so this runner starts no thread (scripts may start it as TF1's)."""
        if not self._gradients_applied:
            raise ValueError("Should be called after apply_gradients().")
        return _NoChiefQueueRunner()

    def get_init_tokens_op(self, num_tokens: int = -1) -> Operation:
        """TF1 fills the sync token queue with it; a no-op here (tfc's ps needs no tokens)."""
        if not self._gradients_applied:
            raise ValueError("get_init_tokens_op() should be called after apply_gradients().")
        if num_tokens < -1:
            raise ValueError(f"num_tokens must be >= -1, got {num_tokens}")
        return no_op(name="sync_token_init")

    def make_session_run_hook(self, is_chief: bool, num_tokens: int = -1) -> SessionRunHook:
        """The hook TF1 scripts pass to MonitoredTrainingSession (a no-op here, see above)."""
        return _SyncReplicasHook(self, is_chief, num_tokens)
