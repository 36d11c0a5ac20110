"""`tf.estimator.Estimator`: train, evaluate and predict with a model_fn, checkpoints in model_dir.

Each call builds a fresh graph from the model_fn, restores the latest checkpoint of model_dir
(or initializes the variables), and runs compiled steps fed by the input_fn's dataset.
"""

from __future__ import annotations

import os
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np

import tfc.logging as tf_logging
from tfc.client.session import Session
from tfc.ir import errors
from tfc.ir.graph import Graph, GraphKeys, Operation, Tensor
from tfc.ops.array import shape
from tfc.train.saver import Saver, latest_checkpoint
from tfc.train.training_util import get_or_create_global_step
from tfc.variables import global_variables_initializer, local_variables_initializer

__all__ = ["ModeKeys", "EstimatorSpec", "RunConfig", "Estimator"]

DEFAULT_SEED = 42  # tfc estimators are reproducible unless RunConfig(tf_random_seed=...) says so


class ModeKeys:
    TRAIN = "train"
    EVAL = "eval"
    PREDICT = "infer"


@dataclass
class EstimatorSpec:
    """What a model_fn returns for one mode."""

    mode: str
    predictions: Any = None
    loss: Tensor | None = None
    train_op: Operation | Tensor | None = None
    eval_metric_ops: dict = field(default_factory=dict)  # name -> (value, update_op)


@dataclass
class RunConfig:
    model_dir: str | None = None
    tf_random_seed: int | None = DEFAULT_SEED
    save_checkpoints_steps: int | None = None
    keep_checkpoint_max: int = 5
    log_step_count_steps: int = 100


class Estimator:
    """Wraps a model_fn(features, labels, mode, params[, config]) -> EstimatorSpec."""

    def __init__(
        self,
        model_fn: Callable[..., EstimatorSpec],
        model_dir: str | None = None,
        config: RunConfig | None = None,
        params: dict | None = None,
    ) -> None:
        self._model_fn = model_fn
        self._config = config or RunConfig()
        model_dir = model_dir or self._config.model_dir
        if model_dir is None:
            model_dir = tempfile.mkdtemp(prefix="tfc_estimator_")
            tf_logging.warning("Using temporary folder as model directory: %s", model_dir)
        self._model_dir = str(model_dir)
        self.params = dict(params or {})

    @property
    def model_dir(self) -> str:
        return self._model_dir

    @property
    def config(self) -> RunConfig:
        return self._config

    def latest_checkpoint(self) -> str | None:
        return latest_checkpoint(self._model_dir)

    # -- train -----------------------------------------------------------------------------------
    def train(
        self,
        input_fn: Callable[[], Any],
        hooks: Any = None,
        steps: int | None = None,
        max_steps: int | None = None,
        saving_listeners: Any = None,
    ) -> Estimator:
        """Train `steps` more steps (or up to global step `max_steps`, or until the data ends)."""
        if steps is not None and max_steps is not None:
            raise ValueError("Can not provide both steps and max_steps.")
        if steps is not None and steps <= 0 or max_steps is not None and max_steps <= 0:
            raise ValueError(
                f"Must specify steps > 0 and max_steps > 0, given: {steps}, {max_steps}"
            )
        graph = Graph()
        with graph.as_default():
            graph.seed = self._config.tf_random_seed
            get_or_create_global_step()
            features, labels = _read_input(input_fn)
            spec = self._call_model_fn(features, labels, ModeKeys.TRAIN)
            if spec.loss is None or spec.train_op is None:
                raise ValueError(
                    "model_fn must return an EstimatorSpec with loss and train_op in TRAIN mode"
                )
            batch = shape(_first_tensor(features))[0]
            saver = Saver(max_to_keep=self._config.keep_checkpoint_max)
            with Session(graph=graph) as sess:
                start = self._restore_or_initialize(sess, saver)
                if max_steps is not None and start >= max_steps:
                    tf_logging.info("Skipping training since max_steps has already saved.")
                    return self
                last = (
                    max_steps
                    if max_steps is not None
                    else (start + steps if steps is not None else None)
                )
                self._train_loop(sess, spec, batch, saver, start, last)
        return self

    def _train_loop(
        self,
        sess: Session,
        spec: EstimatorSpec,
        batch: Tensor,
        saver: Saver,
        step: int,
        last: int | None,
    ) -> None:
        every = self._config.log_step_count_steps
        save_every = self._config.save_checkpoints_steps
        fetches = [spec.train_op, spec.loss, batch]
        window_start, window_examples = time.perf_counter(), 0
        loss = float("nan")
        os.makedirs(self._model_dir, exist_ok=True)
        while last is None or step < last:
            try:
                _, loss, n = sess.run(fetches)
            except errors.OutOfRangeError:
                break
            step += 1
            window_examples += int(n)
            if not np.isfinite(loss):
                raise errors.InvalidArgumentError(
                    None, None, f"Model diverged with loss = {loss} at step {step}"
                )
            if every and step % every == 0:
                elapsed = time.perf_counter() - window_start
                tf_logging.info(
                    "loss = %g, step = %d (%.1f examples/sec)",
                    loss,
                    step,
                    window_examples / max(elapsed, 1e-9),
                )
                window_start, window_examples = time.perf_counter(), 0
            if save_every and step % save_every == 0:
                saver.save(sess, os.path.join(self._model_dir, "model.ckpt"), global_step=step)
        path = saver.save(sess, os.path.join(self._model_dir, "model.ckpt"), global_step=step)
        tf_logging.info("Saving checkpoints for %d into %s.", step, path)
        tf_logging.info("Loss for final step: %g.", loss)

    # -- evaluate --------------------------------------------------------------------------------
    def evaluate(
        self,
        input_fn: Callable[[], Any],
        steps: int | None = None,
        hooks: Any = None,
        checkpoint_path: str | None = None,
        name: str | None = None,
    ) -> dict:
        """Run the eval metrics over the input (or `steps` batches) on the latest checkpoint."""
        checkpoint = checkpoint_path or self._require_checkpoint()
        graph = Graph()
        with graph.as_default():
            graph.seed = self._config.tf_random_seed
            global_step = get_or_create_global_step()
            features, labels = _read_input(input_fn)
            spec = self._call_model_fn(features, labels, ModeKeys.EVAL)
            metrics = dict(spec.eval_metric_ops)
            if spec.loss is not None and "loss" not in metrics:
                from tfc.metrics import mean

                metrics["loss"] = mean(spec.loss)
            updates = [update for _, update in metrics.values()]
            values = {k: v for k, (v, _) in metrics.items()}
            saver = Saver()
            with Session(graph=graph) as sess:
                sess.run(local_variables_initializer())
                saver.restore(sess, checkpoint)
                done = 0
                while steps is None or done < steps:
                    try:
                        sess.run(updates)
                    except errors.OutOfRangeError:
                        break
                    done += 1
                result = {k: float(v) for k, v in sess.run(values).items()}
                result["global_step"] = int(sess.run(global_step))
        tf_logging.info("Evaluation: %s", ", ".join(f"{k} = {v:g}" for k, v in result.items()))
        return result

    # -- predict ---------------------------------------------------------------------------------
    def predict(
        self,
        input_fn: Callable[[], Any],
        predict_keys: Any = None,
        hooks: Any = None,
        checkpoint_path: str | None = None,
        yield_single_examples: bool = True,
    ) -> Iterator[dict]:
        """Yield the model's predictions, one dict per example (or per batch)."""
        checkpoint = checkpoint_path or self._require_checkpoint()
        graph = Graph()
        with graph.as_default():
            graph.seed = self._config.tf_random_seed
            features, _ = _read_input(input_fn)
            spec = self._call_model_fn(features, None, ModeKeys.PREDICT)
            predictions = spec.predictions
            if not isinstance(predictions, dict):
                predictions = {"predictions": predictions}
            if predict_keys is not None:
                predictions = {k: predictions[k] for k in predict_keys}
            with Session(graph=graph) as sess:
                Saver().restore(sess, checkpoint)
                while True:
                    try:
                        batch = sess.run(predictions)
                    except errors.OutOfRangeError:
                        return
                    batch = self._postprocess(batch)
                    if not yield_single_examples:
                        yield batch
                        continue
                    n = len(next(iter(batch.values())))
                    for i in range(n):
                        yield {k: v[i] for k, v in batch.items()}

    def _postprocess(self, batch: dict) -> dict:
        """A hook for subclasses to add derived, non-tensor predictions (class names)."""
        return batch

    # -- helpers ---------------------------------------------------------------------------------
    def _call_model_fn(self, features: Any, labels: Any, mode: str) -> EstimatorSpec:
        spec = self._model_fn(features=features, labels=labels, mode=mode, params=self.params)
        if not isinstance(spec, EstimatorSpec):
            raise ValueError(f"model_fn should return an EstimatorSpec, got {type(spec).__name__}")
        return spec

    def _require_checkpoint(self) -> str:
        checkpoint = latest_checkpoint(self._model_dir)
        if checkpoint is None:
            raise ValueError(
                f"Could not find trained model in model_dir: {self._model_dir}. Train first."
            )
        return checkpoint

    def _restore_or_initialize(self, sess: Session, saver: Saver) -> int:
        """Resume from the latest checkpoint of model_dir if there is one; returns the step."""
        sess.run(local_variables_initializer())
        checkpoint = latest_checkpoint(self._model_dir)
        if checkpoint is None:
            sess.run(global_variables_initializer())
            return 0
        saver.restore(sess, checkpoint)
        tf_logging.info("Restoring parameters from %s", checkpoint)
        return int(sess.read_variable(sess.graph.get_collection(GraphKeys.GLOBAL_STEP)[0].op.name))


def _read_input(input_fn: Callable[[], Any]) -> tuple[Any, Any]:
    """(features, labels) from what an input_fn returns: a Dataset of (features, labels) or of
    features, or a (features, labels) tuple of tensors."""
    result = input_fn()
    if hasattr(result, "make_one_shot_iterator"):
        result = result.make_one_shot_iterator().get_next()
    if isinstance(result, tuple) and len(result) == 2:
        return result
    return result, None


def _first_tensor(features: Any) -> Tensor:
    if isinstance(features, dict):
        return features[sorted(features)[0]]
    return features
