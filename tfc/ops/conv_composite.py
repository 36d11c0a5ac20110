"""Convolutions TF builds from Conv2D and Conv2DBackpropInput: conv1d (a conv2d over images one
pixel high), conv2d_transpose (the gradient of conv2d with respect to its input) and
conv1d_transpose, with TF1's arguments, names and checks."""

from __future__ import annotations

from typing import Any

import numpy as np

import tfc.ops.array as _array
from tfc.ir.graph import Tensor, name_scope
from tfc.ir.tensor_shape import TensorShape
from tfc.ops.constant import convert_to_tensor
from tfc.ops.conv import conv2d
from tfc.ops.conv3d import conv3d_transpose
from tfc.ops.registry import apply_op

__all__ = ["conv1d", "conv2d_transpose", "conv1d_transpose", "conv_transpose"]


def _spatial(value: Any, n: int, what: str) -> list[int]:
    """A stride or dilation argument as n spatial values: an int, n values, or n + 2 values
    with 1 for the batch and channel dims (TF's _get_sequence, channels last)."""
    if value is None:
        return [1] * n
    if isinstance(value, (int, np.integer)):
        return [int(value)] * n
    values = [int(v) for v in value]
    if len(values) == 1:
        return values * n
    if len(values) == n:
        return values
    if len(values) == n + 2:
        if values[0] != 1 or values[-1] != 1:
            raise ValueError(f"{what} must be 1 in the batch and channel dimensions, got {values}")
        return values[1:-1]
    lengths = " or ".join(str(k) for k in sorted({1, n, n + 2}))
    raise ValueError(f"{what} should be of length {lengths} but was {len(values)}")


def _channels_last(data_format: str | None, allowed: tuple[str, ...], op: str) -> None:
    if data_format is None or data_format in allowed:
        return
    if data_format in ("NCW", "NCHW"):
        raise NotImplementedError(
            f"{op} with data_format {data_format!r}: tfc computes convolutions channels last "
            f"({allowed[0]}); transpose the input"
        )
    raise ValueError(f"data_format must be one of {allowed}, got {data_format!r}")


def conv1d(
    value: Any = None,
    filters: Any = None,
    stride: Any = None,
    padding: Any = None,
    use_cudnn_on_gpu: bool | None = None,
    data_format: str | None = None,
    name: str | None = None,
    input: Any = None,  # noqa: A002  TF's argument name
    dilations: Any = None,
) -> Tensor:
    """`tf.nn.conv1d`: value [batch, width, in] and filters [k, in, out], through conv2d over
    [batch, 1, width, in] images with [1, k, in, out] filters, as TF computes it."""
    if value is not None and input is not None:
        raise ValueError("Cannot specify both 'value' and 'input'.")
    value = input if value is None else value
    if value is None or filters is None:
        raise ValueError("conv1d needs value (or input) and filters")
    if stride is None:
        raise ValueError("conv1d needs a stride")
    _channels_last(data_format, ("NWC", "NHWC"), "conv1d")
    (s,) = _spatial(stride, 1, "stride")
    (d,) = _spatial(dilations, 1, "dilations")
    with name_scope(name, "conv1d", [value, filters]) as scope:
        value = _array.expand_dims(convert_to_tensor(value, name="value"), -3)
        filters = _array.expand_dims(convert_to_tensor(filters, name="filters"), 0)
        result = conv2d(
            value,
            filters,
            strides=[1, 1, s, 1],
            padding=padding,
            use_cudnn_on_gpu=True if use_cudnn_on_gpu is None else use_cudnn_on_gpu,
            dilations=[1, 1, d, 1],
            name=scope,
        )
        return _array.squeeze(result, [-3])


def conv2d_transpose(
    value: Any = None,
    filter: Any = None,  # noqa: A002  TF's argument name
    output_shape: Any = None,
    strides: Any = None,
    padding: str = "SAME",
    data_format: str = "NHWC",
    name: str | None = None,
    input: Any = None,  # noqa: A002
    filters: Any = None,
    dilations: Any = None,
) -> Tensor:
    """`tf.nn.conv2d_transpose`: the gradient of conv2d with respect to its input (a
    "deconvolution"): value [batch, h, w, in] and filter [kh, kw, out, in] give output_shape
    [batch, oh, ow, out], the input shape of the conv2d whose output value would be."""
    if value is not None and input is not None:
        raise ValueError("Cannot specify both 'value' and 'input'.")
    value = input if value is None else value
    if filter is not None and filters is not None:
        raise ValueError("Cannot specify both 'filter' and 'filters'.")
    filter = filters if filter is None else filter  # noqa: A001
    if value is None or filter is None or output_shape is None or strides is None:
        raise ValueError("conv2d_transpose needs value, filter, output_shape and strides")
    _channels_last(data_format, ("NHWC",), "conv2d_transpose")
    padding = padding.upper() if isinstance(padding, str) else padding
    if padding not in ("SAME", "VALID"):
        raise ValueError(f"padding must be either VALID or SAME: {padding!r}")
    with name_scope(name, "conv2d_transpose", [value, filter, output_shape]) as scope:
        value = convert_to_tensor(value, name="value")
        filter = convert_to_tensor(filter, dtype=value.dtype, name="filter")  # noqa: A001
        fshape = filter.shape
        if value.shape.ndims is not None and fshape.ndims is not None:
            if not value.shape[3].is_compatible_with(fshape[3]):
                raise ValueError(
                    "input channels does not match filter's input channels, "
                    f"{value.shape[3]} != {fshape[3]}"
                )
        sizes = convert_to_tensor(output_shape, name="output_shape")
        if not sizes.shape.is_compatible_with(TensorShape([4])):
            raise ValueError(f"output_shape must have shape (4,), got {sizes.shape}")
        if isinstance(output_shape, (list, tuple, np.ndarray)) and fshape.ndims is not None:
            channels = output_shape[3]
            if isinstance(channels, (int, np.integer)) and not fshape[2].is_compatible_with(
                int(channels)
            ):
                raise ValueError(
                    "output_shape does not match filter's output channels, "
                    f"{channels} != {fshape[2]}"
                )
        attrs = {
            "strides": [1, *_spatial(strides, 2, "strides"), 1],
            "padding": padding,
            "data_format": "NHWC",
            "dilations": [1, *_spatial(dilations, 2, "dilations"), 1],
            "use_cudnn_on_gpu": True,
        }
        op = apply_op("Conv2DBackpropInput", [sizes, filter, value], attrs, name=scope)
        return op.outputs[0]


def conv1d_transpose(
    input: Any,  # noqa: A002  TF's argument name
    filters: Any,
    output_shape: Any,
    strides: Any,
    padding: str = "SAME",
    data_format: str = "NWC",
    dilations: Any = None,
    name: str | None = None,
) -> Tensor:
    """`tf.nn.conv1d_transpose`: the gradient of conv1d with respect to its input: input
    [batch, w, in] and filters [k, out, in] give output_shape [batch, ow, out]."""
    _channels_last(data_format, ("NWC",), "conv1d_transpose")
    (s,) = _spatial(strides, 1, "strides")
    (d,) = _spatial(dilations, 1, "dilations")
    with name_scope(name, "conv1d_transpose", [input, filters, output_shape]) as scope:
        value = _array.expand_dims(convert_to_tensor(input, name="input"), 1)
        kernel = _array.expand_dims(convert_to_tensor(filters, name="filters"), 0)
        sizes = convert_to_tensor(output_shape, name="output_shape")
        if not sizes.shape.is_compatible_with(TensorShape([3])):
            raise ValueError(f"output_shape must have shape (3,), got {sizes.shape}")
        sizes = _array.concat([sizes[:1], [1], sizes[1:]], 0)
        result = conv2d_transpose(
            value, kernel, sizes, [1, 1, s, 1], padding, dilations=[1, 1, d, 1], name=scope
        )
        return _array.squeeze(result, [1])


def conv_transpose(
    input: Any,  # noqa: A002  TF's argument name
    filters: Any,
    output_shape: Any,
    strides: Any,
    padding: str = "SAME",
    data_format: str | None = None,
    dilations: Any = None,
    name: str | None = None,
) -> Tensor:
    """`tf.nn.conv_transpose`: conv1d_transpose, conv2d_transpose or conv3d_transpose, by the
    length of output_shape (3, 4 or 5)."""
    if isinstance(output_shape, Tensor):
        length = output_shape.shape.as_list()[0] if output_shape.shape.ndims == 1 else None
    elif hasattr(output_shape, "__len__"):
        length = len(output_shape)
    else:
        raise ValueError("`output_shape` must be a tensor or sized collection")
    if length not in (3, 4, 5):
        raise ValueError(
            f"`output_shape` must be of length 3, 4 or 5. Received: output_shape={output_shape} "
            f"of length {length}."
        )
    with name_scope(name, "conv_transpose", [input, filters, output_shape]) as scope:
        formats = {} if data_format is None else {"data_format": data_format}
        if length == 3:
            return conv1d_transpose(input, filters, output_shape, strides, padding,
                                    dilations=dilations, name=scope, **formats)  # fmt: skip
        transpose = conv2d_transpose if length == 4 else conv3d_transpose
        return transpose(input, filters, output_shape, strides, padding=padding,
                         dilations=dilations, name=scope, **formats)  # fmt: skip
