"""`tf.estimator.Estimator`: train, evaluate, predict and export with a model_fn, checkpoints in
model_dir.

Each call builds a fresh graph from the input_fn and the model_fn, restores the latest
checkpoint of model_dir (or initializes the variables), and runs compiled steps with the
session-run hooks around them, as TF1's MonitoredSession does.
"""

from __future__ import annotations

import copy
import functools
import inspect
import os
import re
import tempfile
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from typing import Any, NamedTuple

import numpy as np

import tfc.logging as tf_logging
from tfc.client.session import Session
from tfc.data.dataset import Dataset
from tfc.estimator.export import ServingInputReceiver
from tfc.estimator.export_output import ClassificationOutput
from tfc.estimator.exported_model import single_features_input, write_exported_model
from tfc.estimator.model_fn import DEFAULT_SERVING_SIGNATURE_DEF_KEY, EstimatorSpec, ModeKeys
from tfc.estimator.run_config import RunConfig
from tfc.ir import errors
from tfc.ir.graph import Graph, GraphKeys, Tensor
from tfc.metrics import mean
from tfc.train.basic_session_run_hooks import (
    CheckpointSaverHook,
    CheckpointSaverListener,
    LoggingTensorHook,
    NanTensorHook,
    StepCounterHook,
    StopAtStepHook,
)
from tfc.train.saver import Saver, latest_checkpoint, list_variables, load_variable
from tfc.train.session_run_hook import (
    HookedSession,
    SessionRunArgs,
    SessionRunContext,
    SessionRunHook,
    SessionRunValues,
)
from tfc.train.training_util import get_or_create_global_step
from tfc.variables import global_variables_initializer, local_variables_initializer

__all__ = ["Estimator", "WarmStartSettings"]

_VALID_MODEL_FN_ARGS = {"features", "labels", "mode", "params", "self", "config"}
_LOSS_KEY = "loss"


def fn_args(fn: Callable[..., Any]) -> tuple[str, ...]:
    """The names of the positional-or-keyword parameters `fn` takes (TF1's fn_args): those a
    functools.partial binds are left out, and so is `self` of a bound method."""
    if isinstance(fn, functools.partial):
        names = fn_args(fn.func)[len(fn.args) :]
        return tuple(a for a in names if a not in (fn.keywords or {}))
    params = inspect.signature(fn).parameters.values()
    kinds = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    return tuple(p.name for p in params if p.kind in kinds)


def _verify_model_fn_args(model_fn: Callable[..., Any], params: dict | None) -> None:
    args = set(fn_args(model_fn))
    if "features" not in args:
        raise ValueError(f"model_fn ({model_fn}) must include features argument.")
    if params is not None and "params" not in args:
        raise ValueError(
            f"model_fn ({model_fn}) does not include params argument, but params ({params}) "
            "is passed to Estimator."
        )
    if params is None and "params" in args:
        tf_logging.warning(
            "Estimator's model_fn (%s) includes params argument, but params are not passed to "
            "Estimator.",
            model_fn,
        )
    unexpected = sorted(args - _VALID_MODEL_FN_ARGS)
    if unexpected:
        raise ValueError(f"model_fn ({model_fn}) has following not expected args: {unexpected}")


def _check_hooks(hooks: Any) -> list[SessionRunHook]:
    hooks = list(hooks or [])
    for hook in hooks:
        if not isinstance(hook, SessionRunHook):
            raise TypeError(f"All hooks must be SessionRunHook instances, given: {hook!r}")
    return hooks


class WarmStartSettings(NamedTuple):
    """Start training from another checkpoint's values: the variables `vars_to_warm_start`
    chooses (a regular expression over the trainable variables, a list of expressions over the
    global ones, or a list of Variables), read under their own names or those
    `var_name_to_prev_var_name` gives."""

    ckpt_to_initialize_from: str
    vars_to_warm_start: Any = ".*"
    var_name_to_vocab_info: dict | None = None
    var_name_to_prev_var_name: dict | None = None


def _warm_start_settings(warm_start_from: Any) -> WarmStartSettings | None:
    if warm_start_from is None:
        return None
    if isinstance(warm_start_from, (str, os.PathLike)):
        return WarmStartSettings(os.fspath(warm_start_from))
    if isinstance(warm_start_from, WarmStartSettings):
        if warm_start_from.var_name_to_vocab_info:
            raise NotImplementedError(
                "WarmStartSettings(var_name_to_vocab_info=...): tfc has "
                "no vocabulary feature columns"
            )
        return warm_start_from
    raise ValueError(
        f"warm_start_from must be a string or a WarmStartSettings, instead got "
        f"{type(warm_start_from)}"
    )


class _StopIfGlobalStepIsStuck(SessionRunHook):
    """With a step limit, a train_op that never advances the global step would run forever:
    fail after the first step instead."""

    def begin(self) -> None:
        self._step = get_or_create_global_step()
        self._checked = False

    def after_create_session(self, session: Any, coord: Any) -> None:
        self._start = int(session.run(self._step))

    def after_run(self, run_context: SessionRunContext, run_values: SessionRunValues) -> None:
        if self._checked:
            return
        self._checked = True
        if int(run_context.session.run(self._step)) == self._start:
            raise RuntimeError(
                "The model_fn's train_op does not advance the global step, so training would "
                "never reach its steps/max_steps: pass global_step=tf.train.get_global_step() "
                "to optimizer.minimize()"
            )


class _FinalLossHook(SessionRunHook):
    """Remembers the loss of the last step, to log it as TF1 does."""

    def __init__(self, loss: Tensor) -> None:
        self._loss = loss
        self.value: Any = None

    def before_run(self, run_context: SessionRunContext) -> SessionRunArgs:
        return SessionRunArgs(self._loss)

    def after_run(self, run_context: SessionRunContext, run_values: SessionRunValues) -> None:
        self.value = run_values.results


class Estimator:
    """Wraps a model_fn(features, labels, mode, params, config) -> EstimatorSpec.

    The model_fn may take any of labels, mode, params and config (only `features` is required);
    it gets those it names. Checkpoints go to model_dir (a temporary directory when none is
    given), and every call resumes from the latest one there.
    """

    def __init__(
        self,
        model_fn: Callable[..., EstimatorSpec],
        model_dir: str | None = None,
        config: RunConfig | None = None,
        params: dict | None = None,
        warm_start_from: Any = None,
    ) -> None:
        if config is None:
            config = RunConfig()
        elif not isinstance(config, RunConfig):
            raise ValueError(f"config must be an instance of `RunConfig`, but provided {config}.")
        if model_dir is not None and config.model_dir is not None:
            if os.fspath(model_dir) != config.model_dir:
                raise ValueError(
                    "`model_dir` are set both in constructor and `RunConfig`, but with different "
                    f"values. In constructor: '{model_dir}', in `RunConfig`: "
                    f"'{config.model_dir}' "
                )
        model_dir = model_dir if model_dir is not None else config.model_dir
        if model_dir is None:
            model_dir = tempfile.mkdtemp(prefix="tfc_estimator_")
            tf_logging.warning("Using temporary folder as model directory: %s", model_dir)
        self._config = config.replace(model_dir=os.fspath(model_dir))
        _verify_model_fn_args(model_fn, params)
        self._model_fn = model_fn
        self._params = copy.deepcopy(params or {})
        self._warm_start_settings = _warm_start_settings(warm_start_from)

    @property
    def model_dir(self) -> str:
        return self._config.model_dir

    @property
    def config(self) -> RunConfig:
        return self._config

    @property
    def params(self) -> dict:
        return copy.deepcopy(self._params)

    @property
    def model_fn(self) -> Callable[..., EstimatorSpec]:
        """The model_fn, called with (features, labels, mode, config) as Estimator calls it."""

        def public_model_fn(features: Any, labels: Any, mode: str, config: RunConfig) -> Any:
            return self._call_model_fn(features, labels, mode, config)

        return public_model_fn

    def latest_checkpoint(self) -> str | None:
        return latest_checkpoint(self.model_dir)

    def get_variable_names(self) -> list[str]:
        """The names of the variables in the latest checkpoint."""
        return [name for name, _ in list_variables(self._require_checkpoint())]

    def get_variable_value(self, name: str) -> np.ndarray:
        """A variable's value in the latest checkpoint."""
        return load_variable(self._require_checkpoint(), name)

    # -- train -----------------------------------------------------------------------------------
    def train(
        self,
        input_fn: Callable[..., Any],
        hooks: Any = None,
        steps: int | None = None,
        max_steps: int | None = None,
        saving_listeners: Any = None,
    ) -> Estimator:
        """Train `steps` more steps, or up to global step `max_steps`, or until the input ends."""
        if steps is not None and max_steps is not None:
            raise ValueError("Can not provide both steps and max_steps.")
        if steps is not None and steps <= 0:
            raise ValueError(f"Must specify steps > 0, given: {steps}")
        if max_steps is not None and max_steps <= 0:
            raise ValueError(f"Must specify max_steps > 0, given: {max_steps}")
        hooks = _check_hooks(hooks)
        listeners = list(saving_listeners or [])
        for listener in listeners:
            if not isinstance(listener, CheckpointSaverListener):
                raise TypeError(
                    f"saving_listeners must be a list of CheckpointSaverListener, given: "
                    f"{listener!r}"
                )
        if max_steps is not None:
            checkpoint = self.latest_checkpoint()
            start = int(load_variable(checkpoint, GraphKeys.GLOBAL_STEP)) if checkpoint else 0
            if start >= max_steps:
                tf_logging.info("Skipping training since max_steps has already saved.")
                return self
        graph = Graph()
        with self._building(graph):
            global_step = get_or_create_global_step()
            features, labels = self._get_features_and_labels(input_fn, ModeKeys.TRAIN)
            spec = self._call_model_fn(features, labels, ModeKeys.TRAIN, self._config)
            all_hooks = self._training_hooks(spec, global_step, hooks, steps, max_steps, listeners)
            final_loss = _FinalLossHook(spec.loss)
            all_hooks.append(final_loss)
            with ExitStack() as stack:
                sess = self._start_session(graph, all_hooks, stack)
                self._restore_or_initialize(sess)
                hooked = self._after_create(sess, all_hooks)
                while not hooked.should_stop():
                    try:
                        hooked.run(spec.train_op)
                    except errors.OutOfRangeError:
                        break
                for hook in all_hooks:
                    hook.end(sess)
        tf_logging.info("Loss for final step: %s.", final_loss.value)
        return self

    def _training_hooks(
        self,
        spec: EstimatorSpec,
        global_step: Tensor,
        hooks: list,
        steps: int | None,
        max_steps: int | None,
        listeners: list,
    ) -> list[SessionRunHook]:
        """The hooks of one train call, in TF1's order: the chief's (checkpoints, step rate),
        then the caller's, the spec's, and the NaN, logging and stop hooks."""
        config = self._config
        chief = list(spec.training_chief_hooks)
        worker = [*hooks, *spec.training_hooks, NanTensorHook(spec.loss)]
        if config.log_step_count_steps:
            worker.append(
                LoggingTensorHook(
                    {"loss": spec.loss, "step": global_step},
                    every_n_iter=config.log_step_count_steps,
                )
            )
            chief.append(StepCounterHook(every_n_steps=config.log_step_count_steps))
        if steps is not None or max_steps is not None:
            worker += [StopAtStepHook(steps, max_steps), _StopIfGlobalStepIsStuck()]
        savers = [h for h in [*chief, *worker] if isinstance(h, CheckpointSaverHook)]
        if not savers and (config.save_checkpoints_secs or config.save_checkpoints_steps):
            saver = Saver(
                max_to_keep=config.keep_checkpoint_max,
                keep_checkpoint_every_n_hours=config.keep_checkpoint_every_n_hours,
            )
            savers = [
                CheckpointSaverHook(
                    self.model_dir,
                    save_secs=config.save_checkpoints_secs,
                    save_steps=config.save_checkpoints_steps,
                    saver=saver,
                )
            ]
            chief.insert(0, savers[0])
        if listeners:
            if not savers:
                raise ValueError(
                    "There should be a CheckpointSaverHook to use saving_listeners. Please set "
                    "one of the RunConfig.save_checkpoints_steps or "
                    "RunConfig.save_checkpoints_secs."
                )
            savers[0].add_listeners(listeners)
        return chief + worker

    # -- evaluate --------------------------------------------------------------------------------
    def evaluate(
        self,
        input_fn: Callable[..., Any],
        steps: int | None = None,
        hooks: Any = None,
        checkpoint_path: str | None = None,
        name: str | None = None,
    ) -> dict:
        """The eval_metric_ops' values (and the mean loss and the global step) over the input,
        or its first `steps` batches, on the latest checkpoint (or `checkpoint_path`)."""
        hooks = _check_hooks(hooks)
        if steps is not None and steps <= 0:
            raise ValueError(f"Must specify steps > 0, given: {steps}")
        checkpoint = checkpoint_path or self._require_checkpoint()
        graph = Graph()
        with self._building(graph):
            global_step = get_or_create_global_step()
            features, labels = self._get_features_and_labels(input_fn, ModeKeys.EVAL)
            spec = self._call_model_fn(features, labels, ModeKeys.EVAL, self._config)
            metrics = dict(spec.eval_metric_ops)
            for reserved in (_LOSS_KEY, GraphKeys.GLOBAL_STEP):
                if reserved in metrics:
                    raise ValueError(
                        f'Metric with name "{reserved}" is not allowed, because Estimator '
                        "already defines a default metric with the same name."
                    )
            metrics[_LOSS_KEY] = mean(spec.loss)
            updates = [update for _, update in metrics.values()]
            values = {k: v for k, (v, _) in metrics.items()}
            values[GraphKeys.GLOBAL_STEP] = global_step
            all_hooks = [*hooks, *spec.evaluation_hooks]
            saver = Saver()
            with ExitStack() as stack:
                sess = self._start_session(graph, all_hooks, stack)
                sess.run(local_variables_initializer())
                saver.restore(sess, checkpoint)
                hooked = self._after_create(sess, all_hooks)
                done = 0
                while (steps is None or done < steps) and not hooked.should_stop():
                    try:
                        hooked.run(updates)
                    except errors.OutOfRangeError:
                        break
                    done += 1
                result = sess.run(values)
                for hook in all_hooks:
                    hook.end(sess)
        tf_logging.info(
            "Saving dict for global step %d: %s",
            result[GraphKeys.GLOBAL_STEP],
            ", ".join(f"{k} = {v!s}" for k, v in sorted(result.items())),
        )
        return result

    # -- predict ---------------------------------------------------------------------------------
    def predict(
        self,
        input_fn: Callable[..., Any],
        predict_keys: Any = None,
        hooks: Any = None,
        checkpoint_path: str | None = None,
        yield_single_examples: bool = True,
    ) -> Iterator[Any]:
        """Yield the model's predictions: one dict (or value, when the model_fn predicts a single
        tensor) per example, or per batch without yield_single_examples."""
        hooks = _check_hooks(hooks)
        checkpoint = checkpoint_path or self._require_checkpoint()
        graph = Graph()
        with self._building(graph):
            get_or_create_global_step()
            features, _ = self._get_features_and_labels(input_fn, ModeKeys.PREDICT)
            spec = self._call_model_fn(features, None, ModeKeys.PREDICT, self._config)
            predictions = _extract_keys(spec.predictions, predict_keys)
            all_hooks = [*hooks, *spec.prediction_hooks]
            with ExitStack() as stack:
                sess = self._start_session(graph, all_hooks, stack)
                Saver().restore(sess, checkpoint)
                hooked = self._after_create(sess, all_hooks)
                while not hooked.should_stop():
                    try:
                        batch = hooked.run(predictions)
                    except errors.OutOfRangeError:
                        break
                    if isinstance(batch, dict):
                        batch = self._postprocess(batch)
                    if not yield_single_examples:
                        yield batch
                        continue
                    yield from _single_examples(batch)
                for hook in all_hooks:
                    hook.end(sess)

    def _postprocess(self, batch: dict) -> dict:
        """A hook for subclasses to add derived, non-tensor predictions (class names)."""
        return batch

    # -- export ----------------------------------------------------------------------------------
    def export_saved_model(
        self,
        export_dir_base: str,
        serving_input_receiver_fn: Callable[[], ServingInputReceiver],
        assets_extra: dict | None = None,
        as_text: bool = False,
        checkpoint_path: str | None = None,
        experimental_mode: str = ModeKeys.PREDICT,
    ) -> bytes:
        """Export the PREDICT graph with the latest checkpoint's variables into a new directory
        export_dir_base/<timestamp>, which `tfc compile` takes as a model (see
        tfc.estimator.exported_model); returns its path, as bytes like TF1.

        The default serving signature's outputs are the predict executable's outputs. The
        graph is written as text whatever `as_text` says.
        """
        if experimental_mode != ModeKeys.PREDICT:
            raise NotImplementedError(
                "export_saved_model exports the PREDICT graph only (tfc compile builds training "
                "from a model file's train signature)"
            )
        if serving_input_receiver_fn is None:
            raise ValueError("An input_receiver_fn must be defined.")
        checkpoint = checkpoint_path or self.latest_checkpoint()
        if checkpoint is None:
            raise ValueError(f"Couldn't find trained model at {self.model_dir}.")
        graph = Graph()
        with self._building(graph):
            get_or_create_global_step()
            receiver = serving_input_receiver_fn()
            if not isinstance(receiver, ServingInputReceiver):
                raise TypeError(
                    "serving_input_receiver_fn must return a ServingInputReceiver, got "
                    f"{type(receiver).__name__}"
                )
            spec = self._call_model_fn(receiver.features, None, ModeKeys.PREDICT, self._config)
            export_output = spec.export_outputs[DEFAULT_SERVING_SIGNATURE_DEF_KEY]
            features, layout, replaced = single_features_input(graph, receiver)
            outputs = {k: replaced.get(t, t) for k, t in export_output.outputs.items()}
            label_output = "scores" if isinstance(export_output, ClassificationOutput) else None
        path = write_exported_model(
            os.fspath(export_dir_base),
            graph,
            features,
            layout,
            outputs,
            label_output,
            checkpoint,
            session_config=self._config.session_config,
            assets_extra=assets_extra,
        )
        return os.fsencode(path)

    def export_savedmodel(
        self,
        export_dir_base: str,
        serving_input_receiver_fn: Callable[[], ServingInputReceiver],
        assets_extra: dict | None = None,
        as_text: bool = False,
        checkpoint_path: str | None = None,
        strip_default_attrs: bool = False,
    ) -> bytes:
        """TF1's older name of export_saved_model."""
        return self.export_saved_model(
            export_dir_base, serving_input_receiver_fn, assets_extra, as_text, checkpoint_path
        )

    # -- helpers ---------------------------------------------------------------------------------
    def _building(self, graph: Graph) -> ExitStack:
        """The context a call builds its graph in: `graph` as the default, the config's seed and
        device function."""
        stack = ExitStack()
        stack.enter_context(graph.as_default())
        graph.seed = self._config.tf_random_seed
        if self._config.device_fn is not None:
            stack.enter_context(graph.device(self._config.device_fn))
        return stack

    def _call_input_fn(self, input_fn: Callable[..., Any], mode: str) -> Any:
        args = fn_args(input_fn)
        kwargs: dict[str, Any] = {}
        if "mode" in args:
            kwargs["mode"] = mode
        if "params" in args:
            kwargs["params"] = self.params
        if "config" in args:
            kwargs["config"] = self._config
        return input_fn(**kwargs)

    def _get_features_and_labels(self, input_fn: Callable[..., Any], mode: str) -> tuple:
        """(features, labels) from what the input_fn returns: a Dataset of (features, labels)
        or of features, or a (features, labels) tuple; labels are dropped in PREDICT mode."""
        result = self._call_input_fn(input_fn, mode)
        if isinstance(result, Dataset):
            result = result.make_one_shot_iterator().get_next()
        if isinstance(result, (list, tuple)):
            if mode == ModeKeys.PREDICT:
                return result[0], None
            if len(result) != 2:
                raise ValueError("input_fn should return (features, labels) as a len 2 tuple.")
            return result[0], result[1]
        return result, None

    def _call_model_fn(self, features: Any, labels: Any, mode: str, config: RunConfig) -> Any:
        args = fn_args(self._model_fn)
        kwargs: dict[str, Any] = {}
        if "labels" in args:
            kwargs["labels"] = labels
        elif labels is not None:
            raise ValueError("model_fn does not take labels, but input_fn returns labels.")
        if "mode" in args:
            kwargs["mode"] = mode
        if "params" in args:
            kwargs["params"] = self.params
        if "config" in args:
            kwargs["config"] = config
        spec = self._model_fn(features=features, **kwargs)
        if not isinstance(spec, EstimatorSpec):
            raise ValueError(f"model_fn should return an EstimatorSpec, got {type(spec).__name__}")
        return spec

    def _start_session(self, graph: Graph, hooks: list, stack: ExitStack) -> Session:
        """Begin the hooks (the graph is complete but for what they add), then open a session."""
        for hook in hooks:
            hook.begin()
        return stack.enter_context(Session(graph=graph, config=self._config.session_config))

    @staticmethod
    def _after_create(sess: Session, hooks: list) -> HookedSession:
        for hook in hooks:
            hook.after_create_session(sess, None)
        return HookedSession(sess, hooks)

    def _require_checkpoint(self) -> str:
        checkpoint = self.latest_checkpoint()
        if checkpoint is None:
            raise ValueError(
                f"Could not find trained model in model_dir: {self.model_dir}. Train first."
            )
        return checkpoint

    def _restore_or_initialize(self, sess: Session) -> None:
        """Resume from the latest checkpoint of model_dir, or initialize the variables (and
        warm-start them when asked)."""
        sess.run(local_variables_initializer())
        checkpoint = self.latest_checkpoint()
        if checkpoint is not None:
            tf_logging.info("Restoring parameters from %s", checkpoint)
            Saver().restore(sess, checkpoint)
            return
        sess.run(global_variables_initializer())
        if self._warm_start_settings is not None:
            _warm_start(sess, self._warm_start_settings)


def _warm_start(sess: Session, settings: WarmStartSettings) -> None:
    """Load the chosen variables from the warm-start checkpoint, as TF1 chooses them: a regular
    expression matches trainable variables, a list of expressions global ones, a list of
    Variables names them."""
    source = settings.ckpt_to_initialize_from
    if os.path.isdir(source):
        source = latest_checkpoint(source) or source
    wanted = settings.vars_to_warm_start
    graph = sess.graph
    if wanted is None:
        return
    if isinstance(wanted, str):
        candidates, patterns = graph.get_collection(GraphKeys.TRAINABLE_VARIABLES), [wanted]
    elif all(isinstance(w, str) for w in wanted):
        candidates, patterns = graph.get_collection(GraphKeys.GLOBAL_VARIABLES), list(wanted)
    else:
        candidates, patterns = list(wanted), [".*"]
    chosen = [v for v in candidates if any(re.match(p, v.op.name) for p in patterns)]
    renames = settings.var_name_to_prev_var_name or {}
    tf_logging.info("Warm-starting from: %s", source)
    for variable in chosen:
        name = renames.get(variable.op.name, variable.op.name)
        sess.write_variable(variable.op.name, load_variable(source, name))


def _extract_keys(predictions: Any, predict_keys: Any) -> Any:
    if predict_keys is None:
        return predictions
    if not isinstance(predictions, dict):
        raise ValueError("predict_keys argument is not valid in case of non-dict predictions.")
    keys = [predict_keys] if isinstance(predict_keys, str) else list(predict_keys)
    chosen = {k: v for k, v in predictions.items() if k in keys}
    if not chosen:
        raise ValueError(
            f"Expected to run at least one output from {list(predictions)}, provided {keys}."
        )
    return chosen


def _single_examples(batch: Any) -> Iterator[Any]:
    if not isinstance(batch, dict):
        yield from batch
        return
    lengths = {k: len(v) for k, v in batch.items()}
    n = next(iter(lengths.values()))
    for key, length in lengths.items():
        if length != n:
            raise ValueError(
                f"Batch length of predictions should be same. {key} has different batch length "
                "than others."
            )
    for i in range(n):
        yield {k: v[i] for k, v in batch.items()}
