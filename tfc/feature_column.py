"""`tf.feature_column`: how raw input features become the dense input layer of a model."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from tfc.init_ops import zeros_initializer
from tfc.ir import dtypes as _dt
from tfc.ir.graph import GraphKeys, Tensor, name_scope
from tfc.ops.array import concat, reshape
from tfc.ops.constant import convert_to_tensor
from tfc.ops.linalg import matmul
from tfc.ops.math import add_n, cast
from tfc.ops.nn import bias_add
from tfc.variables import get_variable, variable_scope

__all__ = ["numeric_column", "input_layer", "linear_model", "NumericColumn"]


@dataclass(frozen=True)
class NumericColumn:
    """A real-valued feature of fixed shape, read from `features[key]`."""

    key: str
    shape: tuple[int, ...] = (1,)
    default_value: Any = None
    dtype: _dt.DType = _dt.float32
    normalizer_fn: Callable[[Tensor], Tensor] | None = None

    @property
    def name(self) -> str:
        return self.key

    @property
    def width(self) -> int:
        n = 1
        for d in self.shape:
            n *= d
        return n

    def dense_tensor(self, features: Mapping[str, Any]) -> Tensor:
        """This column's values as a float32 [batch, width] tensor."""
        if self.key not in features:
            raise KeyError(
                f"The feature column '{self.key}' has no input: the features have keys "
                f"{sorted(features)}"
            )
        x = convert_to_tensor(features[self.key])
        if not (x.dtype.is_floating or x.dtype.is_integer):
            raise ValueError(f"Feature '{self.key}' must be numeric, got {x.dtype.name}")
        x = cast(x, self.dtype)
        if self.normalizer_fn is not None:
            x = self.normalizer_fn(x)
        return cast(reshape(x, [-1, self.width]), _dt.float32)


def numeric_column(
    key: str,
    shape: Any = (1,),
    default_value: Any = None,
    dtype: Any = _dt.float32,
    normalizer_fn: Callable[[Tensor], Tensor] | None = None,
) -> NumericColumn:
    """`tf.feature_column.numeric_column`: a real-valued feature named `key`."""
    if not isinstance(key, str) or not key:
        raise ValueError(f"key must be a non-empty string, got {key!r}")
    shape = (int(shape),) if isinstance(shape, int) else tuple(int(d) for d in shape)
    if any(d <= 0 for d in shape):
        raise ValueError(f"shape dimensions must be positive, got {shape} for '{key}'")
    dtype = _dt.as_dtype(dtype)
    if not (dtype.is_floating or dtype.is_integer):
        raise ValueError(f"dtype must be numeric for numeric_column '{key}', got {dtype.name}")
    return NumericColumn(key, shape, default_value, dtype, normalizer_fn)


def input_layer(features: Mapping[str, Any], feature_columns: Sequence[NumericColumn]) -> Tensor:
    """`tf.feature_column.input_layer`: the columns' values side by side, [batch, total width],
    in the order of the columns sorted by name (as TF orders them)."""
    if not feature_columns:
        raise ValueError("feature_columns must not be empty")
    with name_scope("input_layer"):
        parts = [c.dense_tensor(features) for c in sorted(feature_columns, key=lambda c: c.name)]
        return parts[0] if len(parts) == 1 else concat(parts, axis=1)


def linear_model(
    features: Mapping[str, Any],
    feature_columns: Sequence[NumericColumn],
    units: int = 1,
    sparse_combiner: str = "sum",
    weight_collections: Sequence[str] | None = None,
    trainable: bool = True,
    cols_to_vars: dict | None = None,
) -> Tensor:
    """`tf.feature_column.linear_model`: sum over the columns of column @ weights, plus a bias,
    [batch, units]. Variables (zeros at first) linear_model/<column>/weights [width, units] and
    linear_model/bias_weights [units], in the columns' name order as TF1 makes them;
    `cols_to_vars`, when given, is filled with column -> [weights] and "bias" -> [bias].
    `sparse_combiner` applies to categorical columns, which tfc does not have yet."""
    if not feature_columns:
        raise ValueError("feature_columns must not be empty")
    if sparse_combiner not in ("sum", "mean", "sqrtn"):
        raise ValueError(f"sparse_combiner must be one of sum, mean, sqrtn: {sparse_combiner}")
    collections = [GraphKeys.GLOBAL_VARIABLES, GraphKeys.MODEL_VARIABLES]
    collections += list(weight_collections or [])
    with variable_scope(None, default_name="linear_model"):
        sums = []
        for column in sorted(feature_columns, key=lambda c: c.name):
            with variable_scope(None, default_name=column.name):
                x = column.dense_tensor(features)
                weights = get_variable(
                    "weights",
                    [column.width, units],
                    initializer=zeros_initializer(),
                    trainable=trainable,
                    collections=collections,
                )
                sums.append(matmul(x, weights, name="weighted_sum"))
                if cols_to_vars is not None:
                    cols_to_vars[column] = [weights]
        no_bias = sums[0] if len(sums) == 1 else add_n(sums, name="weighted_sum_no_bias")
        bias = get_variable(
            "bias_weights",
            [units],
            initializer=zeros_initializer(),
            trainable=trainable,
            collections=collections,
        )
        if cols_to_vars is not None:
            cols_to_vars["bias"] = [bias]
        return bias_add(no_bias, bias, name="weighted_sum")
