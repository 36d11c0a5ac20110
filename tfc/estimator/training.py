"""`tf.estimator.train_and_evaluate` with TrainSpec and EvalSpec, and the exporters it runs.

Locally, as TF1 does it: training runs once to max_steps, and each checkpoint it saves (but
the first) is evaluated when `throttle_secs` have passed since the last evaluation; the last
checkpoint is always evaluated. Exporters then write serving models of evaluated checkpoints.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable
from typing import Any, NamedTuple

import tfc.logging as tf_logging
from tfc.estimator.estimator import Estimator
from tfc.estimator.export import ServingInputReceiver
from tfc.ir.graph import GraphKeys
from tfc.train.basic_session_run_hooks import CheckpointSaverListener, SecondOrStepTimer
from tfc.train.session_run_hook import SessionRunHook

__all__ = [
    "EvalSpec",
    "Exporter",
    "FinalExporter",
    "LatestExporter",
    "TrainSpec",
    "train_and_evaluate",
]


def _check_input_fn(input_fn: Any) -> None:
    if not callable(input_fn):
        raise TypeError(f"`input_fn` must be callable, given: {input_fn}")


def _check_spec_hooks(hooks: Any) -> tuple:
    hooks = tuple(hooks or ())
    for hook in hooks:
        if not isinstance(hook, SessionRunHook):
            raise TypeError(f"All hooks must be SessionRunHook instances, given: {hook}")
    return hooks


class TrainSpec(
    NamedTuple(
        "TrainSpec", [("input_fn", Callable[..., Any]), ("max_steps", Any), ("hooks", tuple)]
    )
):
    """What train_and_evaluate trains on: input_fn, up to global step max_steps, with hooks."""

    def __new__(
        cls, input_fn: Callable[..., Any], max_steps: int | None = None, hooks: Any = None
    ) -> TrainSpec:
        _check_input_fn(input_fn)
        if max_steps is not None and max_steps <= 0:
            raise ValueError(f"Must specify max_steps > 0, given: {max_steps}")
        return super().__new__(cls, input_fn, max_steps, _check_spec_hooks(hooks))


class Exporter:
    """Writes a serving model of an evaluated checkpoint (see FinalExporter, LatestExporter)."""

    @property
    def name(self) -> str:
        raise NotImplementedError

    def export(
        self,
        estimator: Estimator,
        export_path: str,
        checkpoint_path: str,
        eval_result: dict,
        is_the_final_export: bool,
    ) -> bytes | None:
        raise NotImplementedError


class _SavedModelExporter(Exporter):
    def __init__(
        self,
        name: str,
        serving_input_receiver_fn: Callable[[], ServingInputReceiver],
        assets_extra: dict | None = None,
        as_text: bool = False,
    ) -> None:
        if not name:
            raise ValueError("An exporter needs a name")
        self._name = name
        self._serving_input_receiver_fn = serving_input_receiver_fn
        self._assets_extra = assets_extra
        self._as_text = as_text

    @property
    def name(self) -> str:
        return self._name

    def _export(self, estimator: Estimator, export_path: str, checkpoint_path: str) -> bytes:
        return estimator.export_saved_model(
            export_path,
            self._serving_input_receiver_fn,
            assets_extra=self._assets_extra,
            as_text=self._as_text,
            checkpoint_path=checkpoint_path,
        )


class FinalExporter(_SavedModelExporter):
    """Exports once, after the evaluation of the final checkpoint."""

    def export(
        self,
        estimator: Estimator,
        export_path: str,
        checkpoint_path: str,
        eval_result: dict,
        is_the_final_export: bool,
    ) -> bytes | None:
        if not is_the_final_export:
            return None
        tf_logging.info("Performing the final export in the end of training.")
        return self._export(estimator, export_path, checkpoint_path)


class LatestExporter(_SavedModelExporter):
    """Exports after every evaluation, keeping the newest `exports_to_keep` exports."""

    def __init__(
        self,
        name: str,
        serving_input_receiver_fn: Callable[[], ServingInputReceiver],
        assets_extra: dict | None = None,
        as_text: bool = False,
        exports_to_keep: int | None = 5,
    ) -> None:
        super().__init__(name, serving_input_receiver_fn, assets_extra, as_text)
        if exports_to_keep is not None and exports_to_keep <= 0:
            raise ValueError(
                f"`exports_to_keep`, if provided, must be a positive number. Got {exports_to_keep}"
            )
        self._exports_to_keep = exports_to_keep

    def export(
        self,
        estimator: Estimator,
        export_path: str,
        checkpoint_path: str,
        eval_result: dict,
        is_the_final_export: bool,
    ) -> bytes:
        path = self._export(estimator, export_path, checkpoint_path)
        if self._exports_to_keep is not None:
            exports = sorted((int(d) for d in os.listdir(export_path) if d.isdigit()), reverse=True)
            for stale in exports[self._exports_to_keep :]:
                shutil.rmtree(os.path.join(export_path, str(stale)))
        return path


class EvalSpec(
    NamedTuple(
        "EvalSpec",
        [
            ("input_fn", Callable[..., Any]),
            ("steps", Any),
            ("name", Any),
            ("hooks", tuple),
            ("exporters", tuple),
            ("start_delay_secs", int),
            ("throttle_secs", int),
        ],
    )
):
    """How train_and_evaluate evaluates: input_fn for `steps` batches (None: all of it), at
    most once every `throttle_secs`, then the exporters. `start_delay_secs` only matters to
    distributed evaluation, which tfc's Estimator does not run."""

    def __new__(
        cls,
        input_fn: Callable[..., Any],
        steps: int | None = 100,
        name: str | None = None,
        hooks: Any = None,
        exporters: Any = None,
        start_delay_secs: int = 120,
        throttle_secs: int = 600,
    ) -> EvalSpec:
        _check_input_fn(input_fn)
        if steps is not None and steps <= 0:
            raise ValueError(f"Must specify steps > 0, given: {steps}")
        if name is not None and not isinstance(name, str):
            raise TypeError(f"`name` must be string, given: {name}")
        if exporters is None:
            exporters = ()
        elif isinstance(exporters, Exporter):
            exporters = (exporters,)
        exporters = tuple(exporters)
        names = set()
        for exporter in exporters:
            if not isinstance(exporter, Exporter):
                raise TypeError(f"`exporters` must be an Exporter, given {exporter}")
            if exporter.name in names:
                raise ValueError(f"`exporters` must have unique names. Given: {exporter.name}")
            names.add(exporter.name)
        if start_delay_secs < 0:
            raise ValueError(f"Must specify start_delay_secs >= 0, given: {start_delay_secs}")
        if throttle_secs < 0:
            raise ValueError(f"Must specify throttle_secs >= 0, given: {throttle_secs}")
        return super().__new__(
            cls,
            input_fn,
            steps,
            name,
            _check_spec_hooks(hooks),
            exporters,
            start_delay_secs,
            throttle_secs,
        )


class _EvaluateAfterSaves(CheckpointSaverListener):
    """Evaluates (then exports) checkpoints as training saves them, throttled."""

    def __init__(self, estimator: Estimator, eval_spec: EvalSpec, max_steps: int | None) -> None:
        self._estimator = estimator
        self._eval_spec = eval_spec
        self._max_steps = max_steps
        self.eval_result: dict | None = None
        self.export_results: list = []
        self._evaluated_checkpoint: str | None = None

    def begin(self) -> None:
        self._timer = SecondOrStepTimer(every_secs=self._eval_spec.throttle_secs)
        self._first_save = True

    def after_save(self, session: Any, global_step_value: int) -> None:
        if self._first_save:  # the checkpoint of the starting point: nothing trained yet
            self._first_save = False
            return
        if self._timer.should_trigger_for_step(global_step_value):
            self._evaluate(global_step_value)
        else:
            tf_logging.info(
                "Skip the current checkpoint eval due to throttle secs (%s secs).",
                self._eval_spec.throttle_secs,
            )

    def end(self, session: Any, global_step_value: int) -> None:
        if global_step_value != self._timer.last_triggered_step():
            self._evaluate(global_step_value)

    def _evaluate(self, global_step_value: int) -> None:
        self._timer.update_last_triggered_step(global_step_value)
        checkpoint = self._estimator.latest_checkpoint()
        if checkpoint is None or checkpoint == self._evaluated_checkpoint:
            return
        spec = self._eval_spec
        self.eval_result = self._estimator.evaluate(
            spec.input_fn, steps=spec.steps, hooks=spec.hooks, checkpoint_path=checkpoint,
            name=spec.name,
        )  # fmt: skip
        self._evaluated_checkpoint = checkpoint
        final = bool(self._max_steps) and self.eval_result[GraphKeys.GLOBAL_STEP] >= self._max_steps
        base = os.path.join(self._estimator.model_dir, "export")
        self.export_results = [
            exporter.export(
                self._estimator,
                os.path.join(base, exporter.name),
                checkpoint,
                self.eval_result,
                final,
            )
            for exporter in spec.exporters
        ]


def train_and_evaluate(
    estimator: Estimator, train_spec: TrainSpec, eval_spec: EvalSpec
) -> tuple[dict | None, list]:
    """Train `estimator` as train_spec says, evaluating and exporting along the way as eval_spec
    says; returns the last evaluation's metrics and the last exports' paths."""
    if not isinstance(estimator, Estimator):
        raise TypeError(f"`estimator` must have type `tf.estimator.Estimator`. Got: {estimator}")
    if not isinstance(train_spec, TrainSpec):
        raise TypeError(f"`train_spec` must have type `tf.estimator.TrainSpec`. Got: {train_spec}")
    if not isinstance(eval_spec, EvalSpec):
        raise TypeError(f"`eval_spec` must have type `tf.estimator.EvalSpec`. Got: {eval_spec}")
    config = estimator.config
    tf_logging.info(
        "Start train and evaluate loop. The evaluate will happen after every checkpoint. "
        "Checkpoint frequency is determined based on RunConfig arguments: "
        "save_checkpoints_steps %s or save_checkpoints_secs %s.",
        config.save_checkpoints_steps,
        config.save_checkpoints_secs,
    )
    listener = _EvaluateAfterSaves(estimator, eval_spec, train_spec.max_steps)
    estimator.train(
        train_spec.input_fn,
        hooks=list(train_spec.hooks),
        max_steps=train_spec.max_steps,
        saving_listeners=[listener],
    )
    return listener.eval_result, listener.export_results
