"""3-D convolutions and pools over NDHWC volumes, composed from the 2-D ops along the depth.

A volume [N, D, H, W, C] is N*D images [H, W, C]. A 3-D window is a 2-D window over each depth
tap: conv3d sums, for each filter depth tap kd, conv2d(images, filter[kd]) read at the input
depths od*s_d + kd*d_d - pad_front of each output depth od; max_pool3d and avg_pool3d take the
maximum (or the count-weighted mean) of the 2-D pools over the depth window. The depth window
follows TF's arithmetic (SAME: the odd padding at the back). Each depth tap is a Pad and a
strided slice of the 2-D result, so the gradients are those ops' own; conv3d_transpose and
conv3d_backprop_filter put dy back at those depths and call the 2-D gradient ops. Every
dimension but the batch must be known when the graph is built; NCDHW goes through transposes.
extract_volume_patches is ExtractImagePatches of each depth, taken at each depth tap likewise.
"""

from __future__ import annotations

from typing import Any

import numpy as np

import tfc.ops.array as _array
from tfc.ir import dtypes as _dt
from tfc.ir.graph import Tensor, name_scope
from tfc.ops.constant import constant, convert_to_tensor
from tfc.ops.conv_args import channels_first_via_last, check_data_format, check_padding
from tfc.ops.math import add_n, maximum
from tfc.ops.patches import extract_image_patches
from tfc.ops.registry import apply_op
from tfc.ops.space_batch import known_dims, static_value

__all__ = [
    "conv3d",
    "conv3d_transpose",
    "conv3d_backprop_filter",
    "conv3d_backprop_filter_v2",
    "max_pool3d",
    "avg_pool3d",
]  # and extract_volume_patches, which TF has at the top level only

_FORMATS = ("NDHWC", "NCDHW")


# -- arguments and the depth window -------------------------------------------------------------
def _five(value: Any, what: str, fmt: str) -> list:
    """strides/ksize/dilations (an int, 3 or 5 values in the data format's order) as NDHWC's
    5 values, with TF's checks."""
    if value is None:
        raise ValueError(f"{what} must be given")
    if isinstance(value, (int, np.integer)):
        value = [value] * 3
    values = [int(v) for v in value]
    if len(values) == 3:
        values = [1, *values, 1] if fmt == "NDHWC" else [1, 1, *values]
    if len(values) != 5:
        raise ValueError(f"{what} should be of length 1, 3 or 5 but was {len(values)}")
    if fmt == "NCDHW":
        values = [values[0], *values[2:], values[1]]
    if values[0] != 1 or values[4] != 1:
        if what == "ksize":
            raise ValueError("Pooling is not yet supported on the batch dimension.")
        raise ValueError(
            f"Current implementation does not yet support {what} in the batch and depth dimensions."
        )
    if min(values) < 1:
        raise ValueError(f"{what} must be positive, got {values}")
    return values


def depth_window(size: int, k: int, stride: int, dilation: int, padding: str) -> tuple[int, int]:
    """(output depth, padding before it): TF's windowed output size along the depth."""
    effective = (k - 1) * dilation + 1
    if padding == "SAME":
        out = -(-size // stride)
        return out, max((out - 1) * stride + effective - size, 0) // 2
    numerator = size - effective + stride
    if numerator < 0:
        raise ValueError(
            f"Computed output size would be negative: {-(-numerator // stride)} [input_size: "
            f"{size}, effective_filter_size: {effective}, stride: {stride}]"
        )
    return numerator // stride, 0


def depth_taps(z: Tensor, first: int, stride: int, out: int, fill: Any = 0) -> Tensor:
    """[N, out, ...] from z [N, D, ...]: depth first + o*stride of z at depth o, `fill` where
    that depth is outside z."""
    size = z.shape.as_list()[1]
    if out == 0:
        return _array.slice_helper(z, (slice(None), slice(0, 0)))
    last = first + stride * (out - 1)
    before, after = max(0, -first), max(0, last - (size - 1))
    if before or after:
        pads = [[0, 0], [before, after]] + [[0, 0]] * (z.shape.ndims - 2)
        z = _array.pad(z, pads, constant_values=fill)
    start = first + before
    return _array.slice_helper(
        z, (slice(None), slice(start, start + stride * (out - 1) + 1, stride))
    )


def depth_place(g: Tensor, first: int, stride: int, size: int) -> Tensor:
    """The adjoint of depth_taps: [N, size, ...] with g's depth o at depth first + o*stride
    (the depths outside [0, size) dropped), zeros elsewhere."""
    dims = g.shape.as_list()
    out, rest = dims[1], dims[2:]
    zero_pads = [[0, 0]] * len(rest)
    length = stride * (out - 1) + 1
    if out == 0 or first >= size or first + length <= 0:  # nothing lands inside
        empty = _array.slice_helper(g, (slice(None), slice(0, 0)))
        return _array.pad(empty, [[0, 0], [0, size]] + zero_pads)
    if stride > 1:  # o*stride: each depth followed by stride - 1 zeros, the last ones cut
        spread = _array.pad(_array.expand_dims(g, 2), [[0, 0], [0, 0], [0, stride - 1]] + zero_pads)
        g = _array.reshape(spread, [-1, out * stride, *rest])
        g = _array.slice_helper(g, (slice(None), slice(0, length)))
    crop, after = max(0, -first), size - (first + length)
    if crop or after < 0:
        g = _array.slice_helper(g, (slice(None), slice(crop, length + min(after, 0))))
    if first > 0 or after > 0:
        g = _array.pad(g, [[0, 0], [max(first, 0), max(after, 0)]] + zero_pads)
    return g


def _volume(x: Tensor, what: str) -> list:
    return known_dims(x, what, 5)


def _images(x: Tensor, dims: list) -> Tensor:
    """[N*D, H, W, C] from [N, D, H, W, C]."""
    return _array.reshape(x, [-1, *dims[2:]])


def _volumes(images: Tensor, depth: int) -> Tensor:
    """[N, D, H, W, C] from [N*D, H, W, C]."""
    return _array.reshape(images, [-1, depth, *images.shape.as_list()[1:]])


# -- convolutions -------------------------------------------------------------------------------
def _conv3d_ndhwc(x: Tensor, f: Tensor, strides: list, padding: str, dilations: list) -> Tensor:
    n, d, h, w, c = _volume(x, "conv3d")
    fs = f.shape.as_list() if f.shape.ndims is not None else None
    if fs is None or len(fs) != 5 or None in fs:
        raise ValueError(f"conv3d needs a filter of known 5-D shape, got {f.shape}")
    if fs[3] != c:
        raise ValueError(f"Dimensions must be equal, but are {c} and {fs[3]} (Conv3D)")
    out_d, front = depth_window(d, fs[0], strides[1], dilations[1], padding)
    images = _images(x, [n, d, h, w, c])
    attrs = {
        "strides": [1, *strides[2:4], 1],
        "padding": padding,
        "data_format": "NHWC",
        "dilations": [1, *dilations[2:4], 1],
    }
    terms = []
    for kd in range(fs[0]):
        plane = apply_op("Conv2D", [images, _array.slice_helper(f, kd)], attrs, "Conv2D").outputs[0]
        terms.append(depth_taps(_volumes(plane, d), kd * dilations[1] - front, strides[1], out_d))
    return terms[0] if len(terms) == 1 else add_n(terms)


def conv3d(
    input: Any,  # noqa: A002 (TF's argument names)
    filter: Any = None,  # noqa: A002
    strides: Any = None,
    padding: Any = None,
    data_format: str = "NDHWC",
    dilations: Any = (1, 1, 1, 1, 1),
    name: str | None = None,
    filters: Any = None,
) -> Tensor:
    """`tf.nn.conv3d`: out[n, d, i, j, o] = sum over (a, b, e, c) of input[n, d*s_d + a*r_d -
    pad_front, i*s_h + b*r_h - pad_top, j*s_w + e*r_w - pad_left, c] * filter[a, b, e, c, o]."""
    if filter is not None and filters is not None:
        raise ValueError("filter and filters arguments cannot both be specified")
    filter = filters if filter is None else filter  # noqa: A001
    fmt = check_data_format(data_format, _FORMATS)
    stride = _five(strides, "strides", fmt)
    rate = _five(dilations, "dilations", fmt)
    pad = check_padding(padding)
    with name_scope(name, "Conv3D", [input, filter]):
        x = convert_to_tensor(input, name="input")
        f = convert_to_tensor(filter, dtype=x.dtype, name="filter")
        return channels_first_via_last(x, fmt, lambda t: _conv3d_ndhwc(t, f, stride, pad, rate))


def _backprop_dims(dy: Tensor, f_shape: list, x_shape: list, stride: list, pad: str, rate: list):
    out_d, front = depth_window(x_shape[1], f_shape[0], stride[1], rate[1], pad)
    dys = dy.shape.as_list() if dy.shape.ndims is not None else None
    if dys is None or len(dys) != 5 or None in dys[1:]:
        raise ValueError(f"out_backprop must be 5-D with known dims but the batch: {dy.shape}")
    if dys[1] != out_d:
        raise ValueError(
            f"Conv3DBackprop: Size of out_backprop doesn't match computed: actual = {dys[1]}, "
            f"computed = {out_d} spatial_dim: 1 input: {x_shape[1]} filter: {f_shape[0]} "
            f"output: {dys[1]} stride: {stride[1]} dilation: {rate[1]}"
        )
    return front


def _conv3d_input_ndhwc(
    sizes: list, f: Tensor, dy: Tensor, stride: list, pad: str, rate: list
) -> Tensor:
    n, d, h, w, c = sizes
    fs = f.shape.as_list()
    front = _backprop_dims(dy, fs, sizes, stride, pad, rate)
    _, _, oh, ow, o = dy.shape.as_list()
    attrs = {
        "strides": [1, *stride[2:4], 1],
        "padding": pad,
        "data_format": "NHWC",
        "dilations": [1, *rate[2:4], 1],
    }
    terms = []
    for kd in range(fs[0]):
        placed = depth_place(dy, kd * rate[1] - front, stride[1], d)
        planes = _array.reshape(placed, [-1, oh, ow, o])
        image_shape = _array.concat([_array.slice(_array.shape(planes), [0], [1]), [h, w, c]], 0)
        dx = apply_op(
            "Conv2DBackpropInput",
            [image_shape, _array.slice_helper(f, kd), planes],
            attrs,
            "Conv2DBackpropInput",
        ).outputs[0]
        terms.append(_array.reshape(dx, [-1, d, h, w, c]))
    return terms[0] if len(terms) == 1 else add_n(terms)


def conv3d_transpose(
    value: Any,
    filter: Any = None,  # noqa: A002
    output_shape: Any = None,
    strides: Any = None,
    padding: Any = "SAME",
    data_format: str = "NDHWC",
    name: str | None = None,
    input: Any = None,  # noqa: A002
    filters: Any = None,
    dilations: Any = None,
) -> Tensor:
    """`tf.nn.conv3d_transpose`: the transpose (gradient by the input) of conv3d: a volume of
    `output_shape` from value [N, D', H', W', K] and filter [k_d, k_h, k_w, C, K], C the
    result's channels."""
    if input is not None and value is not None:
        raise ValueError("Cannot specify both 'value' and 'input'.")
    if filter is not None and filters is not None:
        raise ValueError("Cannot specify both 'filter' and 'filters'.")
    value = input if value is None else value
    filter = filters if filter is None else filter  # noqa: A001
    fmt = check_data_format(data_format, _FORMATS)
    stride = _five(strides, "strides", fmt)
    rate = _five(1 if dilations is None else dilations, "dilations", fmt)
    pad = check_padding(padding)
    shape = [int(v) for v in static_value(output_shape, "output_shape").reshape(-1)]
    if len(shape) != 5:
        raise ValueError(f"output_shape must have 5 values, got {shape}")
    if fmt == "NCDHW":
        shape = [shape[0], *shape[2:], shape[1]]
    with name_scope(name, "conv3d_transpose", [value, filter]):
        dy = convert_to_tensor(value, name="value")
        f = convert_to_tensor(filter, dtype=dy.dtype, name="filter")
        fs = f.shape.as_list() if f.shape.ndims is not None else None
        if fs is None or len(fs) != 5 or None in fs:
            raise ValueError(f"conv3d_transpose needs a filter of known 5-D shape, got {f.shape}")
        if fs[3] != shape[4]:
            raise ValueError(
                f"output_shape's channels ({shape[4]}) do not match the filter's ({fs[3]})"
            )
        return channels_first_via_last(
            dy, fmt, lambda t: _conv3d_input_ndhwc(shape, f, t, stride, pad, rate)
        )


def _conv3d_filter_ndhwc(
    x: Tensor, f_shape: list, dy: Tensor, stride: list, pad: str, rate: list
) -> Tensor:
    n, d, h, w, c = _volume(x, "conv3d_backprop_filter")
    front = _backprop_dims(dy, f_shape, [n, d, h, w, c], stride, pad, rate)
    _, _, oh, ow, o = dy.shape.as_list()
    images = _images(x, [n, d, h, w, c])
    attrs = {
        "strides": [1, *stride[2:4], 1],
        "padding": pad,
        "data_format": "NHWC",
        "dilations": [1, *rate[2:4], 1],
    }
    taps = []
    for kd in range(f_shape[0]):
        planes = _array.reshape(
            depth_place(dy, kd * rate[1] - front, stride[1], d), [-1, oh, ow, o]
        )
        taps.append(
            apply_op(
                "Conv2DBackpropFilter",
                [images, constant(np.array(f_shape[1:], np.int32)), planes],
                attrs,
                "Conv2DBackpropFilter",
            ).outputs[0]
        )
    return _array.stack(taps)


def conv3d_backprop_filter(
    input: Any,  # noqa: A002
    filter_sizes: Any,
    out_backprop: Any,
    strides: Any,
    padding: Any,
    data_format: str = "NDHWC",
    dilations: Any = (1, 1, 1, 1, 1),
    name: str | None = None,
) -> Tensor:
    """`tf.nn.conv3d_backprop_filter` (and `_v2`): the gradient of conv3d by its filter, of
    shape `filter_sizes`."""
    fmt = check_data_format(data_format, _FORMATS)
    stride = _five(strides, "strides", fmt)
    rate = _five(dilations, "dilations", fmt)
    pad = check_padding(padding)
    f_shape = [int(v) for v in static_value(filter_sizes, "filter_sizes").reshape(-1)]
    if len(f_shape) != 5:
        raise ValueError(f"filter_sizes must have 5 values, got {f_shape}")
    with name_scope(name, "Conv3DBackpropFilterV2", [input, out_backprop]):
        x = convert_to_tensor(input, name="input")
        dy = convert_to_tensor(out_backprop, dtype=x.dtype, name="out_backprop")
        if fmt == "NCDHW":
            x = _array.transpose(x, [0, 2, 3, 4, 1])
            dy = _array.transpose(dy, [0, 2, 3, 4, 1])
        return _conv3d_filter_ndhwc(x, f_shape, dy, stride, pad, rate)


conv3d_backprop_filter_v2 = conv3d_backprop_filter


# -- pools --------------------------------------------------------------------------------------
def _pool3d_ndhwc(op_type: str, x: Tensor, ksize: list, strides: list, padding: str) -> Tensor:
    n, d, h, w, c = _volume(x, op_type)
    out_d, front = depth_window(d, ksize[1], strides[1], 1, padding)
    attrs = {
        "ksize": [1, *ksize[2:4], 1],
        "strides": [1, *strides[2:4], 1],
        "padding": padding,
        "data_format": "NHWC",
    }
    pooled = _volumes(
        apply_op(op_type, [_images(x, [n, d, h, w, c])], attrs, op_type).outputs[0], d
    )
    firsts = [kd - front for kd in range(ksize[1])]
    if op_type == "MaxPool":
        lowest = np.array(-np.inf, x.dtype.as_numpy_dtype)
        taps = [depth_taps(pooled, k, strides[1], out_d, lowest) for k in firsts]
        result = taps[0]
        for tap in taps[1:]:
            result = maximum(result, tap)
        return result
    # the mean over the window's depths inside the volume, each a mean over its pixels
    total = add_n([depth_taps(pooled, k, strides[1], out_d) for k in firsts])
    counts = np.array(
        [sum(0 <= o * strides[1] + k < d for k in firsts) for o in range(out_d)], np.float64
    )
    scale = constant((1 / counts).reshape(1, out_d, 1, 1, 1).astype(x.dtype.as_numpy_dtype))
    return total * scale


def _pool3d(op_type: str, x: Any, ksize: Any, strides: Any, padding: Any, fmt: str, name: Any):
    fmt = check_data_format(fmt, _FORMATS)
    k = _five(ksize, "ksize", fmt)
    s = _five(strides, "strides", fmt)
    pad = check_padding(padding)
    with name_scope(name, f"{op_type}3D", [x]):
        t = convert_to_tensor(x, name="input")
        if t.dtype not in (_dt.float32, _dt.float64):
            raise TypeError(
                f"Value passed to parameter 'input' has DataType {t.dtype.name} not in list of "
                f"allowed values: float32, float64 ({op_type}3D)"
            )
        return channels_first_via_last(t, fmt, lambda v: _pool3d_ndhwc(op_type, v, k, s, pad))


def max_pool3d(
    input: Any,  # noqa: A002
    ksize: Any,
    strides: Any,
    padding: Any,
    data_format: str = "NDHWC",
    name: str | None = None,
) -> Tensor:
    """`tf.nn.max_pool3d`: the maximum of each ksize window of an NDHWC volume."""
    return _pool3d("MaxPool", input, ksize, strides, padding, data_format, name)


def avg_pool3d(
    input: Any,  # noqa: A002
    ksize: Any,
    strides: Any,
    padding: Any,
    data_format: str = "NDHWC",
    name: str | None = None,
) -> Tensor:
    """`tf.nn.avg_pool3d`: the mean of each ksize window of an NDHWC volume over the voxels
    inside it (SAME padding not counted)."""
    return _pool3d("AvgPool", input, ksize, strides, padding, data_format, name)


# -- patches --------------------------------------------------------------------------------------
def extract_volume_patches(
    input: Any,  # noqa: A002
    ksizes: Any,
    strides: Any,
    padding: Any,
    name: str | None = None,
) -> Tensor:
    """`tf.extract_volume_patches`: the ksizes window of every output voxel of an NDHWC volume,
    flattened in (depth, row, column, channel) order into the channels (0 outside)."""
    k = _five(ksizes, "ksizes", "NDHWC")
    s = _five(strides, "strides", "NDHWC")
    pad = check_padding(padding)
    with name_scope(name, "ExtractVolumePatches", [input]):
        x = convert_to_tensor(input, name="input")
        n, d, h, w, c = _volume(x, "extract_volume_patches")
        out_d, front = depth_window(d, k[1], s[1], 1, pad)
        planes = extract_image_patches(
            _images(x, [n, d, h, w, c]), [1, *k[2:4], 1], [1, *s[2:4], 1], [1, 1, 1, 1], pad
        )
        oh, ow, per_tap = planes.shape.as_list()[1:]
        volumes = _array.reshape(planes, [-1, d, oh, ow, per_tap])
        taps = [depth_taps(volumes, kd - front, s[1], out_d) for kd in range(k[1])]
        return _array.reshape(_array.stack(taps, axis=4), [-1, out_d, oh, ow, k[1] * per_tap])
