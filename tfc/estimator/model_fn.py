"""`tf.estimator.ModeKeys` and `EstimatorSpec`: what a model_fn returns, checked as TF1 does."""

from __future__ import annotations

from typing import Any, NamedTuple

from tfc.estimator.export_output import ExportOutput, PredictOutput
from tfc.ir.graph import Operation, Tensor, get_default_graph
from tfc.ops.array import reshape
from tfc.train.session_run_hook import SessionRunHook

__all__ = ["ModeKeys", "EstimatorSpec"]

# the serving signature a PREDICT spec exports when its export_outputs name none
DEFAULT_SERVING_SIGNATURE_DEF_KEY = "serving_default"


class ModeKeys:
    """The mode a model_fn is called in."""

    TRAIN = "train"
    EVAL = "eval"
    PREDICT = "infer"


def _check_graph_element(value: Any, what: str, kinds: tuple = (Tensor, Operation)) -> None:
    if hasattr(value, "_as_graph_element") and not isinstance(value, (Tensor, Operation)):
        value = value._as_graph_element()  # a Variable
    if not isinstance(value, kinds):
        names = " or ".join(k.__name__ for k in kinds)
        raise TypeError(f"{what} must be {names}, given: {value!r}")
    if value.graph is not get_default_graph():
        raise ValueError(
            f"{what} must be from the default graph. Possible causes of this error include: "
            f"1) {what} was created outside the context of the default graph; 2) the object "
            "passed through to EstimatorSpec was not created in the most recent call to "
            "model_fn."
        )


def _check_hooks(hooks: Any, what: str) -> tuple:
    hooks = tuple(hooks or ())
    for hook in hooks:
        if not isinstance(hook, SessionRunHook):
            raise TypeError(f"All hooks must be SessionRunHook instances, given: {hook!r}")
    return hooks


class EstimatorSpec(
    NamedTuple(
        "EstimatorSpec",
        [
            ("mode", str),
            ("predictions", Any),
            ("loss", Any),
            ("train_op", Any),
            ("eval_metric_ops", dict),
            ("export_outputs", Any),
            ("training_chief_hooks", tuple),
            ("training_hooks", tuple),
            ("scaffold", Any),
            ("evaluation_hooks", tuple),
            ("prediction_hooks", tuple),
        ],
    )
):
    """What a model_fn returns for one mode.

    TRAIN needs `loss` and `train_op`, EVAL `loss`, PREDICT `predictions` (a tensor or a dict of
    tensors). `eval_metric_ops` maps names to (value, update_op) pairs as tf.metrics returns
    them. `export_outputs` maps signature names to ExportOutputs (PredictOutput of the
    predictions by default). The hooks are SessionRunHooks run by train, evaluate and
    predict; tfc's Estimator takes no Scaffold, so `scaffold` must be None.
    """

    def __new__(
        cls,
        mode: str,
        predictions: Any = None,
        loss: Any = None,
        train_op: Any = None,
        eval_metric_ops: dict | None = None,
        export_outputs: dict | None = None,
        training_chief_hooks: Any = None,
        training_hooks: Any = None,
        scaffold: Any = None,
        evaluation_hooks: Any = None,
        prediction_hooks: Any = None,
    ) -> EstimatorSpec:
        if mode not in (ModeKeys.TRAIN, ModeKeys.EVAL, ModeKeys.PREDICT):
            raise ValueError(f"mode={mode} unrecognized.")
        if train_op is None:
            if mode == ModeKeys.TRAIN:
                raise ValueError("Missing train_op.")
        else:
            _check_graph_element(train_op, "train_op")
        if loss is None:
            if mode in (ModeKeys.TRAIN, ModeKeys.EVAL):
                raise ValueError("Missing loss.")
        else:
            _check_graph_element(loss, "loss", (Tensor,))
            n = loss.shape.num_elements() if loss.shape.ndims is not None else None
            if n not in (None, 1):
                raise ValueError(f"Loss must be scalar, given: {loss}")
            if loss.shape.ndims != 0:
                loss = reshape(loss, [])
        if predictions is None:
            if mode == ModeKeys.PREDICT:
                raise ValueError("Missing predictions.")
            predictions = {}
        elif isinstance(predictions, dict):
            for key, value in predictions.items():
                _check_graph_element(value, f"predictions[{key}]", (Tensor,))
        else:
            _check_graph_element(predictions, "predictions", (Tensor,))
        eval_metric_ops = {} if eval_metric_ops is None else eval_metric_ops
        if not isinstance(eval_metric_ops, dict):
            raise TypeError(f"eval_metric_ops must be a dict, given: {eval_metric_ops}")
        for key, pair in eval_metric_ops.items():
            if not isinstance(pair, tuple) or len(pair) != 2:
                raise TypeError(
                    "Values of eval_metric_ops must be (metric_value, update_op) tuples, "
                    f"given: {pair} for key: {key}"
                )
            _check_graph_element(pair[0], f"eval_metric_ops[{key}][0]")
            _check_graph_element(pair[1], f"eval_metric_ops[{key}][1]")
        export_outputs = _export_outputs(mode, predictions, export_outputs)
        if scaffold is not None:
            raise NotImplementedError(
                "tfc's Estimator initializes, restores and saves the model itself, without a "
                "tf.train.Scaffold: EstimatorSpec(scaffold=None)"
            )
        return super().__new__(
            cls,
            mode,
            predictions,
            loss,
            train_op,
            eval_metric_ops,
            export_outputs,
            _check_hooks(training_chief_hooks, "training_chief_hooks"),
            _check_hooks(training_hooks, "training_hooks"),
            None,
            _check_hooks(evaluation_hooks, "evaluation_hooks"),
            _check_hooks(prediction_hooks, "prediction_hooks"),
        )


def _export_outputs(mode: str, predictions: Any, export_outputs: Any) -> dict | None:
    """The spec's export outputs: those given (ExportOutputs), or in PREDICT mode a
    PredictOutput of the predictions under the default serving key."""
    if mode != ModeKeys.PREDICT:
        return export_outputs
    if export_outputs is None:
        return {DEFAULT_SERVING_SIGNATURE_DEF_KEY: PredictOutput(predictions)}
    if not isinstance(export_outputs, dict):
        raise TypeError(f"export_outputs must be dict, given: {export_outputs}")
    for key, output in export_outputs.items():
        if not isinstance(output, ExportOutput):
            raise TypeError(
                f"Values in export_outputs must be ExportOutput objects. Given: {key}: {output}"
            )
    if len(export_outputs) > 1 and DEFAULT_SERVING_SIGNATURE_DEF_KEY not in export_outputs:
        raise ValueError(
            "Multiple export_outputs were provided, but none of them is specified as the "
            f"default. Do this by naming one of them with {DEFAULT_SERVING_SIGNATURE_DEF_KEY}."
        )
    if len(export_outputs) == 1:
        (output,) = export_outputs.values()
        export_outputs = {DEFAULT_SERVING_SIGNATURE_DEF_KEY: output, **export_outputs}
    return export_outputs
