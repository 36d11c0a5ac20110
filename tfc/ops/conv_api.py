"""tf.nn's other entry points to convolution and pooling: convolution, pool (and its dilated
form through with_space_to_batch), the v2/1-D/2-D pools, atrous convolutions, and the names of
Conv2D's gradient ops; channels-first images by transposes around the NHWC ops.

All build the ops of conv.py, conv_grad.py and conv_depthwise.py; 1-D windows are 2-D ones over
an image of height 1, as TF computes them, 3-D ones conv3d.py's compositions.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

import tfc.ops.array as _array
from tfc.ir import dtypes as _dt
from tfc.ir.graph import Tensor, name_scope
from tfc.ops.constant import convert_to_tensor
from tfc.ops.conv3d import avg_pool3d, conv3d, max_pool3d
from tfc.ops.conv_args import (
    channels_first_via_last,
    channels_last,
    check_data_format,
    check_padding,
    spatial_values,
    window_sequence,
)
from tfc.ops.registry import apply_op
from tfc.ops.space_batch import (
    batch_to_space_nd,
    known_dims,
    required_space_to_batch_paddings,
    space_to_batch_nd,
    static_value,
)

__all__ = [
    "convolution",
    "pool",
    "with_space_to_batch",
    "max_pool_v2",
    "max_pool1d",
    "max_pool2d",
    "avg_pool_v2",
    "avg_pool1d",
    "avg_pool2d",
    "atrous_conv2d",
    "atrous_conv2d_transpose",
    "conv2d_backprop_input",
    "conv2d_backprop_filter",
]


_FORMATS = {1: ("NWC", "NCW"), 2: ("NHWC", "NCHW"), 3: ("NDHWC", "NCDHW")}


def _last_order(values: list, data_format: str) -> list:
    """A strides/ksize/dilations list of `data_format` in channels-last order."""
    return values if channels_last(data_format) else [values[0], *values[2:], values[1]]


def _rank(x: Tensor, what: str) -> int:
    if x.shape.ndims is None:
        raise ValueError(f"{what}: the rank of {x.name} must be known")
    return x.shape.ndims


# -- pooling ------------------------------------------------------------------------------------
def _pool2d(op_type: str, x: Tensor, ksize: Any, strides: Any, padding: Any, fmt: str, scope: str):
    """MaxPool/AvgPool of a 4-D image of format fmt (ksize, strides in any TF spelling)."""
    attrs = {
        "ksize": _last_order(window_sequence(ksize, "ksize", fmt), fmt),
        "strides": _last_order(window_sequence(strides, "strides", fmt), fmt),
        "padding": check_padding(padding),
        "data_format": "NHWC",
    }
    return channels_first_via_last(
        x, fmt, lambda t: apply_op(op_type, [t], attrs, name=scope).outputs[0]
    )


def _pool1d(op_type: str, x: Tensor, ksize: Any, strides: Any, padding: Any, fmt: str, scope: str):
    """A pool over [N, W, C] (or [N, C, W]): the 2-D pool of the image of height 1."""
    image = _array.expand_dims(x, 1 if fmt == "NWC" else 2)
    fmt2 = "NHWC" if fmt == "NWC" else "NCHW"
    k = window_sequence(ksize, "ksize", fmt, spatial=1)
    s = window_sequence(strides, "strides", fmt, spatial=1)
    k2 = [1, 1, *k[1:]] if fmt == "NWC" else [1, 1, 1, k[2]]
    s2 = [1, 1, *s[1:]] if fmt == "NWC" else [1, 1, 1, s[2]]
    pooled = _pool2d(op_type, image, k2, s2, padding, fmt2, scope)
    return _array.squeeze(pooled, [1 if fmt == "NWC" else 2])


def _pool3d(op_type: str, x: Tensor, ksize: Any, strides: Any, padding: Any, fmt: str, scope: str):
    pool = max_pool3d if op_type == "MaxPool" else avg_pool3d
    return pool(x, ksize, strides, padding, fmt, name=scope)


def _pool_nd(
    op_type: str, value: Any, ksize: Any, strides: Any, padding: Any, fmt: Any, name: Any, n: int
) -> Tensor:
    """The n-D pool (n from the data format or the input's rank when n is None)."""
    with name_scope(name, op_type, [value]) as scope:
        x = convert_to_tensor(value, name="input")
        if n is None:
            n = _rank(x, op_type) - 2
        if n not in (1, 2, 3):
            raise ValueError(f"Input tensor must be of rank 3, 4 or 5 but was {n + 2}.")
        if n == 3:
            fmt = check_data_format(fmt, ("NDHWC", "NCDHW"))
            return _pool3d(op_type, x, ksize, strides, padding, fmt, scope)
        if n == 1:
            fmt = check_data_format(fmt, ("NWC", "NCW"))
            return _pool1d(op_type, x, ksize, strides, padding, fmt, scope)
        fmt = check_data_format(fmt, ("NHWC", "NCHW"))
        return _pool2d(op_type, x, ksize, strides, padding, fmt, scope)


def max_pool_v2(
    input: Any,  # noqa: A002 (TF's argument names)
    ksize: Any,
    strides: Any,
    padding: Any,
    data_format: str | None = None,
    name: str | None = None,
) -> Tensor:
    """`tf.nn.max_pool_v2`: max pooling over the spatial dims of a 3-D, 4-D or 5-D input."""
    return _pool_nd("MaxPool", input, ksize, strides, padding, data_format, name, None)


def max_pool1d(
    input: Any,  # noqa: A002
    ksize: Any,
    strides: Any,
    padding: Any,
    data_format: str = "NWC",
    name: str | None = None,
) -> Tensor:
    """`tf.nn.max_pool1d`: max pooling over the width of [N, W, C] (NWC) or [N, C, W]."""
    return _pool_nd("MaxPool", input, ksize, strides, padding, data_format, name, 1)


def max_pool2d(
    input: Any,  # noqa: A002
    ksize: Any,
    strides: Any,
    padding: Any,
    data_format: str = "NHWC",
    name: str | None = None,
) -> Tensor:
    """`tf.nn.max_pool2d`: max_pool of an NHWC or NCHW image."""
    return _pool_nd("MaxPool", input, ksize, strides, padding, data_format, name, 2)


def avg_pool_v2(
    input: Any,  # noqa: A002
    ksize: Any,
    strides: Any,
    padding: Any,
    data_format: str | None = None,
    name: str | None = None,
) -> Tensor:
    """`tf.nn.avg_pool_v2`: average pooling (padding not counted) of a 3-D, 4-D or 5-D input."""
    return _pool_nd("AvgPool", input, ksize, strides, padding, data_format, name, None)


def avg_pool1d(
    input: Any,  # noqa: A002
    ksize: Any,
    strides: Any,
    padding: Any,
    data_format: str = "NWC",
    name: str | None = None,
) -> Tensor:
    """`tf.nn.avg_pool1d`: average pooling over the width of [N, W, C] (NWC) or [N, C, W]."""
    return _pool_nd("AvgPool", input, ksize, strides, padding, data_format, name, 1)


def avg_pool2d(
    input: Any,  # noqa: A002
    ksize: Any,
    strides: Any,
    padding: Any,
    data_format: str = "NHWC",
    name: str | None = None,
) -> Tensor:
    """`tf.nn.avg_pool2d`: avg_pool of an NHWC or NCHW image."""
    return _pool_nd("AvgPool", input, ksize, strides, padding, data_format, name, 2)


# -- with_space_to_batch, pool --------------------------------------------------------------------
def with_space_to_batch(
    input: Any,  # noqa: A002
    dilation_rate: Any,
    padding: Any,
    op: Callable[[Tensor, int, str], Tensor],
    filter_shape: Any = None,
    spatial_dims: Any = None,
    data_format: str | None = None,
) -> Tensor:
    """`tf.nn.with_space_to_batch`: op(x, num_spatial_dims, padding) computed with the given
    dilation by moving each phase of the dilated grid into a batch of its own: space_to_batch_nd
    by the rate (padded so that SAME windows keep their size), op with VALID padding, then
    batch_to_space_nd. The spatial dims and the input's shape must be known."""
    x = convert_to_tensor(input, name="input")
    rate = [int(v) for v in static_value(dilation_rate, "dilation_rate").reshape(-1)]
    n = len(rate)
    padding = check_padding(padding)
    if any(r < 1 for r in rate):
        raise ValueError("dilation_rate must be positive")
    if all(r == 1 for r in rate):
        return op(x, n, padding)
    if spatial_dims is None:
        first = 1 if data_format is None or channels_last(data_format) else 2
        spatial_dims = list(range(first, first + n))
    spatial_dims = [int(d) for d in spatial_dims]
    if sorted(set(spatial_dims)) != spatial_dims or len(spatial_dims) != n:
        raise ValueError("spatial_dims must be a strictly increasing list, one per dilation")
    dims = known_dims(x, "with_space_to_batch")
    if padding == "SAME":
        if filter_shape is None:
            raise ValueError("filter_shape must be specified for SAME padding")
        window = [int(v) for v in static_value(filter_shape, "filter_shape").reshape(-1)][:n]
        extra = [(k - 1) * r for k, r in zip(window, rate)]
        base = [[e // 2, e - e // 2] for e in extra]
    else:
        base = [[0, 0]] * n
    # the block covers dims 1..last spatial dim: 1 for the dims between (e.g. NCHW's channels)
    lead = list(range(1, spatial_dims[0]))
    block = [1] * len(lead) + rate
    base = [[0, 0]] * len(lead) + base
    shape = [dims[d] for d in lead + spatial_dims]
    paddings, crops = required_space_to_batch_paddings(shape, block, base)
    converted = space_to_batch_nd(x, block, paddings)
    result = op(converted, n, "VALID")
    return batch_to_space_nd(result, block, crops)


def pool(
    input: Any,  # noqa: A002
    window_shape: Any,
    pooling_type: str,
    padding: Any,
    dilation_rate: Any = None,
    strides: Any = None,
    name: str | None = None,
    data_format: str | None = None,
    dilations: Any = None,
) -> Tensor:
    """`tf.nn.pool`: N-D max or average pooling with optional dilation (N = 1, 2 or 3)."""
    window = [int(v) for v in np.asarray(window_shape).reshape(-1)]
    n = len(window)
    if dilation_rate is not None and dilations is not None:
        raise ValueError("Cannot specify both 'dilation_rate' and 'dilations'.")
    rate = spatial_values(dilations if dilation_rate is None else dilation_rate, "dilation_rate", n)
    stride = spatial_values(strides, "strides", n)
    if pooling_type not in ("MAX", "AVG"):
        raise ValueError(f"Invalid pooling_type: {pooling_type}")
    if any(r > 1 for r in rate) and any(s > 1 for s in stride):
        raise ValueError("strides > 1 not supported in conjunction with dilation_rate > 1")
    padding = check_padding(padding)
    if padding == "SAME" and any(r > 1 for r in rate):
        raise ValueError(
            "pooling with 'SAME' padding is not implemented for `dilation_rate` > 1. Received: "
            f"padding={padding} and dilation_rate={rate}"
        )
    op_type = "MaxPool" if pooling_type == "MAX" else "AvgPool"
    if n not in (1, 2, 3):
        raise ValueError(
            f"`len(window_shape)` must be 1, 2, or 3. Received: window_shape={window} of length {n}"
        )
    fmt = check_data_format(data_format, _FORMATS[n])
    with name_scope(name, f"{pooling_type.lower()}_pool", [input]) as scope:
        x = convert_to_tensor(input, name="input")
        if _rank(x, "pool") != n + 2:
            raise ValueError(f"Input must have rank {n + 2} but has rank {_rank(x, 'pool')}")

        def pool_op(t: Tensor, num_spatial_dims: int, pad: str) -> Tensor:
            pool_fn = {1: _pool1d, 2: _pool2d, 3: _pool3d}[n]
            return pool_fn(op_type, t, window, stride, pad, fmt, scope)

        return with_space_to_batch(x, rate, padding, pool_op, window, None, fmt)


# -- convolutions ---------------------------------------------------------------------------------
def _conv2d_nhwc(x: Tensor, f: Tensor, strides: list, dilations: list, padding: str, scope: Any):
    attrs = {"strides": strides, "padding": padding, "data_format": "NHWC", "dilations": dilations}
    return apply_op("Conv2D", [x, f], attrs, name=scope).outputs[0]


def convolution(
    input: Any,  # noqa: A002
    filter: Any = None,  # noqa: A002
    padding: Any = None,
    strides: Any = None,
    dilation_rate: Any = None,
    name: str | None = None,
    data_format: str | None = None,
    filters: Any = None,
    dilations: Any = None,
) -> Tensor:
    """`tf.nn.convolution`: the N-D convolution (N = 1, 2 or 3) of input [N, spatial..., C]
    (channels last, or first with data_format NCW/NCHW/NCDHW) with filter [spatial..., C,
    out]."""
    if filter is not None and filters is not None:
        raise ValueError("filter and filters arguments cannot both be specified")
    filter = filters if filter is None else filter  # noqa: A001
    if dilation_rate is not None and dilations is not None:
        raise ValueError("Cannot specify both 'dilation_rate' and 'dilations'.")
    with name_scope(name, "convolution", [input, filter]) as scope:
        x = convert_to_tensor(input, name="input")
        f = convert_to_tensor(filter, dtype=x.dtype, name="filter")
        n = (f.shape.ndims - 2) if f.shape.ndims is not None else _rank(x, "convolution") - 2
        if n not in (1, 2, 3):
            raise ValueError(f"Input tensor must be of rank 3, 4 or 5 but was {n + 2}.")
        rate = spatial_values(dilations if dilation_rate is None else dilation_rate, "dilations", n)
        stride = spatial_values(strides, "strides", n)
        if any(r > 1 for r in rate) and any(s > 1 for s in stride):
            raise ValueError("strides > 1 not supported in conjunction with dilation_rate > 1")
        pad = check_padding(padding)
        if n == 3:
            fmt = check_data_format(data_format, _FORMATS[3])
            return conv3d(x, f, stride, pad, fmt, rate, name=scope)
        if n == 1:
            fmt = check_data_format(data_format, ("NWC", "NCW"))
            image = _array.expand_dims(x, 1 if fmt == "NWC" else 2)
            kernel = _array.expand_dims(f, 0)
            fmt2 = "NHWC" if fmt == "NWC" else "NCHW"
            out = channels_first_via_last(
                image,
                fmt2,
                lambda t: _conv2d_nhwc(t, kernel, [1, 1, *stride, 1], [1, 1, *rate, 1], pad, None),
            )
            return _array.squeeze(out, [1 if fmt == "NWC" else 2], name=scope)
        fmt = check_data_format(data_format, ("NHWC", "NCHW"))
        return channels_first_via_last(
            x, fmt, lambda t: _conv2d_nhwc(t, f, [1, *stride, 1], [1, *rate, 1], pad, scope)
        )


def atrous_conv2d(
    value: Any, filters: Any, rate: int, padding: Any, name: str | None = None
) -> Tensor:
    """`tf.nn.atrous_conv2d`: conv2d of an NHWC image with the filter's taps `rate` pixels apart
    (the op's dilations; TF computes the same values through space_to_batch)."""
    r = int(rate)
    if r < 1:
        raise ValueError(f"rate {r} cannot be less than one")
    with name_scope(name, "atrous_conv2d", [value, filters]) as scope:
        x = convert_to_tensor(value, name="value")
        f = convert_to_tensor(filters, dtype=x.dtype, name="filters")
        xs, fs = x.shape.as_list(), f.shape.as_list()
        if x.shape.ndims == 4 and f.shape.ndims == 4 and None not in (xs[3], fs[2]):
            if xs[3] != fs[2]:
                raise ValueError(f"Dimensions must be equal, but are {xs[3]} and {fs[2]}")
        return _conv2d_nhwc(x, f, [1, 1, 1, 1], [1, r, r, 1], check_padding(padding), scope)


def atrous_conv2d_transpose(
    value: Any,
    filters: Any,
    output_shape: Any,
    rate: int,
    padding: Any,
    name: str | None = None,
) -> Tensor:
    """`tf.nn.atrous_conv2d_transpose`: the transpose (gradient by the input) of atrous_conv2d,
    an NHWC image of `output_shape` from value [N, H, W, out channels] and filters
    [k_h, k_w, out channels, in channels]."""
    r = int(rate)
    if r < 1:
        raise ValueError(f"rate {r} cannot be less than one")
    with name_scope(name, "atrous_conv2d_transpose", [value, filters, output_shape]) as scope:
        dy = convert_to_tensor(value, name="value")
        f = convert_to_tensor(filters, dtype=dy.dtype, name="filters")
        fs = f.shape.as_list() if f.shape.ndims is not None else [None] * 4
        if dy.shape.ndims == 4 and None not in (dy.shape.as_list()[3], fs[3]):
            if dy.shape.as_list()[3] != fs[3]:
                raise ValueError(
                    "value's input channels does not match filters' input channels, "
                    f"{dy.shape.as_list()[3]} != {fs[3]}"
                )
        sizes = convert_to_tensor(output_shape, dtype=_dt.int32, name="output_shape")
        attrs = {
            "strides": [1, 1, 1, 1],
            "padding": check_padding(padding),
            "data_format": "NHWC",
            "dilations": [1, r, r, 1],
        }
        return apply_op("Conv2DBackpropInput", [sizes, f, dy], attrs, name=scope).outputs[0]


def _backprop_attrs(strides: Any, padding: Any, data_format: str, dilations: Any) -> dict:
    fmt = check_data_format(data_format, ("NHWC", "NCHW"))
    return {
        "strides": _last_order(window_sequence(strides, "strides", fmt), fmt),
        "padding": check_padding(padding),
        "data_format": "NHWC",
        "dilations": _last_order(window_sequence(dilations, "dilations", fmt), fmt),
    }


def conv2d_backprop_input(
    input_sizes: Any,
    filter: Any = None,  # noqa: A002
    out_backprop: Any = None,
    strides: Any = None,
    padding: Any = None,
    use_cudnn_on_gpu: bool = True,
    data_format: str = "NHWC",
    dilations: Any = (1, 1, 1, 1),
    name: str | None = None,
    filters: Any = None,
) -> Tensor:
    """`tf.nn.conv2d_backprop_input`: the gradient of conv2d by its input, of shape
    `input_sizes` (Conv2DBackpropInput)."""
    if filter is not None and filters is not None:
        raise ValueError("filter and filters arguments cannot both be specified")
    filter = filters if filter is None else filter  # noqa: A001
    attrs = _backprop_attrs(strides, padding, data_format, dilations)
    fmt = check_data_format(data_format, ("NHWC", "NCHW"))
    with name_scope(name, "Conv2DBackpropInput", [input_sizes, filter, out_backprop]) as scope:
        sizes = convert_to_tensor(input_sizes, dtype=_dt.int32, name="input_sizes")
        f = convert_to_tensor(filter, name="filter")
        dy = convert_to_tensor(out_backprop, dtype=f.dtype, name="out_backprop")
        if not channels_last(fmt):
            sizes = _array.gather(sizes, [0, 2, 3, 1])
        return channels_first_via_last(
            dy,
            fmt,
            lambda t: apply_op("Conv2DBackpropInput", [sizes, f, t], attrs, name=scope).outputs[0],
        )


def conv2d_backprop_filter(
    input: Any,  # noqa: A002
    filter_sizes: Any,
    out_backprop: Any,
    strides: Any,
    padding: Any,
    use_cudnn_on_gpu: bool = True,
    data_format: str = "NHWC",
    dilations: Any = (1, 1, 1, 1),
    name: str | None = None,
) -> Tensor:
    """`tf.nn.conv2d_backprop_filter`: the gradient of conv2d by its filter, of shape
    `filter_sizes` (Conv2DBackpropFilter)."""
    attrs = _backprop_attrs(strides, padding, data_format, dilations)
    fmt = check_data_format(data_format, ("NHWC", "NCHW"))
    with name_scope(name, "Conv2DBackpropFilter", [input, filter_sizes, out_backprop]) as scope:
        x = convert_to_tensor(input, name="input")
        sizes = convert_to_tensor(filter_sizes, dtype=_dt.int32, name="filter_sizes")
        dy = convert_to_tensor(out_backprop, dtype=x.dtype, name="out_backprop")
        if not channels_last(fmt):
            x, dy = _array.transpose(x, [0, 2, 3, 1]), _array.transpose(dy, [0, 2, 3, 1])
        return apply_op("Conv2DBackpropFilter", [x, sizes, dy], attrs, name=scope).outputs[0]


def _no_explicit_paddings(explicit_paddings: Any) -> None:
    if explicit_paddings:
        raise NotImplementedError(
            f"explicit paddings {list(explicit_paddings)}: tfc computes 'SAME' and 'VALID' "
            "windows only"
        )


def conv2d_backprop_input_v2(
    input: Any,  # noqa: A002
    filter: Any,  # noqa: A002
    out_backprop: Any,
    strides: Any,
    padding: Any,
    use_cudnn_on_gpu: bool = True,
    explicit_paddings: Any = (),
    data_format: str = "NHWC",
    dilations: Any = (1, 1, 1, 1),
    name: str | None = None,
) -> Tensor:
    """`tf.conv2d_backprop_input_v2`: conv2d_backprop_input of the shape of `input`."""
    _no_explicit_paddings(explicit_paddings)
    with name_scope(name, "Conv2DBackpropInputV2", [input, filter, out_backprop]) as scope:
        x = convert_to_tensor(input, name="input")
        return conv2d_backprop_input(
            _array.shape(x),
            filter,
            out_backprop,
            strides,
            padding,
            data_format=data_format,
            dilations=dilations,
            name=scope,
        )


def conv2d_backprop_filter_v2(
    input: Any,  # noqa: A002
    filter: Any,  # noqa: A002
    out_backprop: Any,
    strides: Any,
    padding: Any,
    use_cudnn_on_gpu: bool = True,
    explicit_paddings: Any = (),
    data_format: str = "NHWC",
    dilations: Any = (1, 1, 1, 1),
    name: str | None = None,
) -> Tensor:
    """`tf.conv2d_backprop_filter_v2`: conv2d_backprop_filter of the shape of `filter`."""
    _no_explicit_paddings(explicit_paddings)
    with name_scope(name, "Conv2DBackpropFilterV2", [input, filter, out_backprop]) as scope:
        f = convert_to_tensor(filter, name="filter")
        return conv2d_backprop_filter(
            input,
            _array.shape(f),
            out_backprop,
            strides,
            padding,
            data_format=data_format,
            dilations=dilations,
            name=scope,
        )
