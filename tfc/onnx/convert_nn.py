"""ONNX neural-network operators: convolutions and pools (computed channels-last), normalizations,
LRN, the softmax family and dropout at inference."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

import tfc.ops.array as _array
import tfc.ops.logic as _logic
import tfc.ops.math as _math
import tfc.ops.nn as _nn
import tfc.ops.reduce as _reduce
from tfc.ir import dtypes as _dt
from tfc.ir.graph import Tensor
from tfc.onnx.node import NodeContext, converter
from tfc.ops.argminmax import argmax
from tfc.ops.constant import constant
from tfc.ops.conv import avg_pool, conv2d, max_pool
from tfc.ops.conv3d import conv3d, conv3d_transpose
from tfc.ops.conv_composite import conv2d_transpose
from tfc.ops.conv_depthwise import depthwise_conv2d
from tfc.ops.linalg import matmul
from tfc.ops.lrn import lrn
from tfc.ops.registry import apply_op, constant_value

Pads = list[tuple[int, int]]


# -- window geometry -----------------------------------------------------------------------------
def _spatial_attr(ctx: NodeContext, name: str, n: int, default: int) -> list[int]:
    value = ctx.attr(name)
    if value is None:
        return [default] * n
    if len(value) != n:
        raise ctx.error(f"'{name}' has {len(value)} values for {n} spatial dimensions")
    return [int(v) for v in value]


def _same_pads(size: int, k: int, stride: int, dilation: int, lower: bool) -> tuple[int, int]:
    effective = (k - 1) * dilation + 1
    out = -(-size // stride)
    total = max((out - 1) * stride + effective - size, 0)
    small, large = total // 2, total - total // 2
    return (large, small) if lower else (small, large)


def window_pads(
    ctx: NodeContext,
    sizes: Sequence[int | None],
    kernel: Sequence[int],
    strides: Sequence[int],
    dilations: Sequence[int],
) -> Pads | str:
    """The padding before and after each spatial dim, or "SAME" where it is TF's SAME (which
    needs no sizes: SAME_UPPER is TF's SAME for any size)."""
    n = len(kernel)
    auto_pad = ctx.attr("auto_pad", "NOTSET")
    if auto_pad == "VALID":
        return [(0, 0)] * n
    if auto_pad == "SAME_UPPER":
        return "SAME"
    if auto_pad == "SAME_LOWER":
        if any(s is None for s in sizes):
            raise ctx.error("auto_pad SAME_LOWER needs the image size when the model is imported")
        return [
            _same_pads(s, k, st, d, True) for s, k, st, d in zip(sizes, kernel, strides, dilations)
        ]  # type: ignore[arg-type]
    if auto_pad not in ("NOTSET", ""):
        raise ctx.error(f"unknown auto_pad {auto_pad!r}")
    pads = ctx.attr("pads") or [0] * (2 * n)
    if len(pads) != 2 * n:
        raise ctx.error(f"'pads' has {len(pads)} values for {n} spatial dimensions")
    if min(pads) < 0:
        raise ctx.error(f"negative pads {pads} are not supported")
    return [(int(pads[i]), int(pads[i + n])) for i in range(n)]


def _is_same(pads: Pads, sizes, kernel, strides, dilations) -> bool:
    if any(s is None for s in sizes):
        return False
    return all(
        p == _same_pads(s, k, st, d, False)
        for p, s, k, st, d in zip(pads, sizes, kernel, strides, dilations)
    )


def _padded(x: Tensor, pads: Pads, value: float = 0.0) -> Tensor:
    """Channels-last `x` padded around its spatial dims."""
    if not any(b or a for b, a in pads):
        return x
    paddings = [[0, 0], *[[b, a] for b, a in pads], [0, 0]]
    return _array.pad(x, paddings, constant_values=value)


def _image_sizes(x: Tensor) -> list[int | None]:
    shape = x._shape_tuple
    return list(shape[1:-1]) if shape is not None else []


def _as_2d(x: Tensor, spatial: int) -> Tensor:
    """A channels-last 1-D image (N, W, C) as a 2-D one (N, 1, W, C)."""
    return _array.expand_dims(x, 1) if spatial == 1 else x


# -- Conv -----------------------------------------------------------------------------------------
def _filter_hwio(w: Tensor, spatial: int) -> Tensor:
    """Filter `w` (O, I, spatial...) as (spatial..., I, O), with a height of 1 in 1-D;
    transposed as the model is imported when its value is known."""
    perm = [*range(2, 2 + spatial), 1, 0]
    value = constant_value(w.graph, (w.op.name, w.value_index))
    if value is not None:
        hwio = np.ascontiguousarray(np.transpose(value, perm))
        if spatial == 1:
            hwio = hwio[None]
        return constant(hwio, dtype=w.dtype, name="filter_hwio")
    fill = _fill_value(w)
    if fill is not None:  # ConstantOfShape weights: the same fill in the other shape
        shape = [w.shape.as_list()[p] for p in perm]
        if spatial == 1:
            shape = [1, *shape]
        return _array.fill(shape, constant(fill, dtype=w.dtype))
    hwio = _array.transpose(w, perm)
    return _array.expand_dims(hwio, 0) if spatial == 1 else hwio


def _fill_value(t: Tensor) -> float | None:
    """The value a Fill with a static shape fills `t` with, when that is how it is computed."""
    op = t.op
    while op.type == "Identity":
        op = op.inputs[0].op
    if op.type != "Fill" or not t.shape.is_fully_defined():
        return None
    value = op.inputs[1]
    v = constant_value(value.graph, (value.op.name, value.value_index))
    return None if v is None else float(np.asarray(v).reshape(()))


def _conv_attrs(ctx: NodeContext, spatial: int, kernel: Sequence[int]):
    strides = _spatial_attr(ctx, "strides", spatial, 1)
    dilations = _spatial_attr(ctx, "dilations", spatial, 1)
    return strides, dilations


@converter("Conv")
def _conv(ctx: NodeContext) -> list:
    return [conv_node(ctx, ctx.input(0), ctx.input(1), ctx.optional(2))]


def conv_node(ctx: NodeContext, x: Tensor, w: Tensor, bias: Tensor | None) -> Tensor:
    """The convolution of image `x` (N, C, spatial...) by filter `w` (M, C/group, kernel...)
    with the node's attributes (Conv's, and the quantized convolutions')."""
    if x._shape_tuple is None:
        raise ctx.error("the rank of the image must be known when the model is imported")
    rank = len(x._shape_tuple)
    spatial = rank - 2
    if spatial not in (1, 2, 3):
        raise ctx.error(
            f"tfc convolves 1-D, 2-D and 3-D images; this input has {spatial} spatial dimensions"
        )
    w_shape = w._shape_tuple
    if w_shape is None or any(d is None for d in w_shape):
        raise ctx.error("the filter's shape must be known when the model is imported")
    kernel = ctx.attr("kernel_shape") or list(w_shape[2:])
    if list(kernel) != list(w_shape[2:]):
        raise ctx.error(f"kernel_shape {kernel} does not match the filter's {list(w_shape[2:])}")
    strides, dilations = _conv_attrs(ctx, spatial, kernel)
    group = int(ctx.attr("group", 1))
    xl = ctx.channels_last(x)
    sizes = _image_sizes(xl)
    pads = window_pads(ctx, sizes, kernel, strides, dilations)
    f = _filter_hwio(w, spatial)
    xl = _as_2d(xl, spatial)
    if spatial == 1:
        strides, dilations = [1, *strides], [1, *dilations]
        if pads != "SAME":
            pads = [(0, 0), *pads]
        sizes = [1, *sizes]
        kernel = [1, *kernel]
    padding = "SAME"
    if pads != "SAME":
        if not any(b or a for b, a in pads):
            padding = "VALID"
        elif _is_same(pads, sizes, kernel, strides, dilations):
            padding = "SAME"
        else:
            xl, padding = _padded(xl, pads), "VALID"
    in_channels = xl._shape_tuple[-1] if xl._shape_tuple else None
    if in_channels is not None and in_channels != w_shape[1] * group:
        raise ctx.error(
            f"the input has {in_channels} channels; the filter expects {w_shape[1]} x group {group}"
        )

    def conv(image: Tensor, filt: Tensor) -> Tensor:
        fn = conv3d if spatial == 3 else conv2d
        return fn(image, filt, [1, *strides, 1], padding, dilations=[1, *dilations, 1])

    if group == 1:
        y = conv(xl, f)
    elif w_shape[1] == 1 and group == in_channels and spatial < 3:
        y = _depthwise(xl, f, padding, strides, dilations, w_shape[0] // group)
    else:
        images = _array.split(xl, group, axis=-1)
        filters = _array.split(f, group, axis=-1)
        y = _array.concat([conv(a, b) for a, b in zip(images, filters)], axis=-1)
    if bias is not None:
        y = _math.add(y, bias)
    if spatial == 1:
        y = _array.squeeze(y, [1])
    return ctx.channels_first(y)


def _depthwise(
    x: Tensor,
    f: Tensor,
    padding: str,
    strides: Sequence[int],
    dilations: Sequence[int],
    multiplier: int,
) -> Tensor:
    """A depthwise convolution (group = channels) of channels-last `x` by filter `f`
    (kh, kw, 1, C * multiplier): tf.nn.depthwise_conv2d with the filter (kh, kw, C, multiplier);
    ONNX's output channel c * multiplier + m is TF's."""
    kh, kw, _, out = (int(d) for d in f._shape_tuple)
    filt = _array.reshape(f, [kh, kw, out // multiplier, multiplier])
    return depthwise_conv2d(x, filt, [1, *strides, 1], padding, dilations=list(dilations))


@converter("ConvTranspose")
def _conv_transpose(ctx: NodeContext) -> list:
    x, w = ctx.input(0), ctx.input(1)
    rank = ctx.rank(0)
    spatial = rank - 2
    if spatial not in (1, 2, 3):
        raise ctx.error(
            f"tfc convolves 1-D, 2-D and 3-D images; this input has {spatial} spatial dimensions"
        )
    w_shape = w._shape_tuple
    if w_shape is None or any(d is None for d in w_shape):
        raise ctx.error("the filter's shape must be known when the model is imported")
    group = int(ctx.attr("group", 1))
    kernel = list(ctx.attr("kernel_shape") or w_shape[2:])
    strides = _spatial_attr(ctx, "strides", spatial, 1)
    dilations = _spatial_attr(ctx, "dilations", spatial, 1)
    output_padding = _spatial_attr(ctx, "output_padding", spatial, 0)
    xl = ctx.channels_last(x)
    sizes = _image_sizes(xl)
    if any(s is None for s in sizes) or xl._shape_tuple[0] is None:
        raise ctx.error("the input's shape must be known when the model is imported")
    effective = [(k - 1) * d + 1 for k, d in zip(kernel, dilations)]
    full = [s * (n - 1) + e for s, n, e in zip(strides, sizes, effective)]
    output_shape = ctx.attr("output_shape")
    auto_pad = ctx.attr("auto_pad", "NOTSET")
    if output_shape is not None:
        output_shape = list(output_shape)[-spatial:]
    if auto_pad in ("SAME_UPPER", "SAME_LOWER"):
        target = output_shape or [n * s for n, s in zip(sizes, strides)]
        totals = [f + op - o for f, op, o in zip(full, output_padding, target)]
        lower = auto_pad == "SAME_LOWER"
        pads = [((t + 1) // 2, t // 2) if lower else (t // 2, (t + 1) // 2) for t in totals]
    elif auto_pad == "VALID":
        pads = [(0, 0)] * spatial
    else:
        raw = ctx.attr("pads") or [0] * (2 * spatial)
        pads = [(int(raw[i]), int(raw[i + spatial])) for i in range(spatial)]
        if output_shape is not None:  # the result placed first, cut or zero-filled at the end
            got = [f + op - b - a for f, op, (b, a) in zip(full, output_padding, pads)]
            pads = [(b, a + g - o) for (b, a), g, o in zip(pads, got, output_shape)]
    # the transposed convolution's whole output (VALID), cropped by the pads: the extra
    # output_padding rows are zero-weighted taps beyond the last input pixel
    out_full = [f + op for f, op in zip(full, output_padding)]
    value = ctx.const(1)
    # (I, O/group, spatial...) -> (spatial..., O/group, I)
    perm = [*range(2, 2 + spatial), 1, 0]
    if value is not None:
        filt = constant(np.ascontiguousarray(np.transpose(value, perm)), dtype=x.dtype)
    else:
        filt = _array.transpose(w, perm)
    if spatial == 1:
        filt = _array.expand_dims(filt, 0)
        xl = _array.expand_dims(xl, 1)
        strides, dilations, out_full = [1, *strides], [1, *dilations], [1, *out_full]
        pads = [(0, 0), *pads]
    batch = xl._shape_tuple[0]
    out_per_group = w_shape[1]

    def transposed(image: Tensor, f: Tensor) -> Tensor:
        shape = [batch, *out_full, out_per_group]
        # TF's VALID transposed convolution has this output size when output_padding < stride
        fn = conv3d_transpose if spatial == 3 else conv2d_transpose
        return fn(image, f, shape, [1, *strides, 1], "VALID", dilations=[1, *dilations, 1])

    if any(op >= s for op, s in zip(output_padding, strides[-spatial:])):
        raise ctx.error(f"output_padding {output_padding} must be smaller than the strides")
    if group == 1:
        y = transposed(xl, filt)
    else:
        images = _array.split(xl, group, axis=-1)
        filters = _array.split(filt, group, axis=-1)
        parts = [transposed(img, f) for img, f in zip(images, filters)]
        y = _array.concat(parts, axis=-1)
    if any(b < 0 or a < 0 for b, a in pads):  # an output_shape beyond the full output
        y = _array.pad(y, [[0, 0], *[[max(-b, 0), max(-a, 0)] for b, a in pads], [0, 0]])
        out_full = [o + max(-b, 0) + max(-a, 0) for o, (b, a) in zip(out_full, pads)]
        pads = [(max(b, 0), max(a, 0)) for b, a in pads]
    if any(b or a for b, a in pads):
        begin = [0, *[b for b, _ in pads], 0]
        size = [-1, *[o - b - a for o, (b, a) in zip(out_full, pads)], -1]
        y = _array.slice(y, begin, size)
    if ctx.has_input(2):
        y = _math.add(y, ctx.input(2))
    if spatial == 1:
        y = _array.squeeze(y, [1])
    return [ctx.channels_first(y)]


# -- pools ---------------------------------------------------------------------------------------
def _pool_geometry(ctx: NodeContext, xl: Tensor, spatial: int):
    kernel = ctx.attr("kernel_shape")
    if not kernel or len(kernel) != spatial:
        raise ctx.error(f"kernel_shape must have {spatial} values, got {kernel}")
    strides = _spatial_attr(ctx, "strides", spatial, 1)
    dilations = _spatial_attr(ctx, "dilations", spatial, 1)
    sizes = _image_sizes(xl)
    pads = window_pads(ctx, sizes, kernel, strides, dilations)
    if pads == "SAME" and ctx.attr("ceil_mode", 0) and any(s is None for s in sizes):
        raise ctx.error("ceil_mode needs the image size when the model is imported")
    if pads == "SAME" and any(s is not None for s in sizes):
        pads = [
            _same_pads(s, k, st, d, False) for s, k, st, d in zip(sizes, kernel, strides, dilations)
        ]  # type: ignore[arg-type]
    extra = [0] * spatial
    if ctx.attr("ceil_mode", 0) and pads != "SAME":
        for i, (size, k, s, d) in enumerate(zip(sizes, kernel, strides, dilations)):
            b, a = pads[i]
            span = size + b + a - ((k - 1) * d + 1)
            out = -(-span // s) + 1
            if (out - 1) * s >= size + b:  # the last window must start in the image
                out -= 1
            extra[i] = max((out - 1) * s + (k - 1) * d + 1 - (size + b + a), 0)
    return list(kernel), strides, dilations, sizes, pads, extra


def _pool_2d(x: Tensor, spatial: int) -> Tensor:
    return _array.expand_dims(x, 1) if spatial == 1 else x


def _pool_back(y: Tensor, spatial: int) -> Tensor:
    return _array.squeeze(y, [1]) if spatial == 1 else y


def _lift(spatial: int, *lists):
    return [[1, *v] if spatial == 1 else list(v) for v in lists]


def _tap_pool(x: Tensor, kernel, strides, dilations, pads: Pads, fill: float, combine) -> Tensor:
    """A pool of channels-last `x` over any number of spatial dims, with dilations: `combine`
    (maximum or add) over the kernel's taps, each a strided slice of the padded image; what
    tfc's 2-D pool kernels do not cover."""
    x = _padded(x, pads, fill)
    sizes = _image_sizes(x)
    outs = [
        (n - ((k - 1) * d + 1)) // s + 1 for n, k, s, d in zip(sizes, kernel, strides, dilations)
    ]
    n = len(kernel)
    y = None
    for tap in np.ndindex(*kernel):
        begin = [0, *[t * d for t, d in zip(tap, dilations)], 0]
        end = [0, *[b + (o - 1) * s + 1 for b, o, s in zip(begin[1:], outs, strides)], 0]
        mask = 1 | 1 << (n + 1)
        window = _array.strided_slice(
            x, begin, end, [1, *strides, 1], begin_mask=mask, end_mask=mask
        )
        y = window if y is None else combine(y, window)
    return y


def _separable_max_pool(x: Tensor, kernel, strides, dilations, pads: Pads, fill: float) -> Tensor:
    """A tap pool by maximum, one spatial dim at a time: the window's maximum is the maximum of
    its rows' maxima, so a k1 x k2 window takes k1 + k2 slices instead of k1 * k2 (a 60 x 80
    dilated window of a model converted from PyTorch made 4,800 ops, minutes to compile)."""
    x = _padded(x, pads, fill)
    n = len(kernel)
    for axis in range(n):
        along = [[1] * n, [1] * n, [1] * n]
        for values, full in zip(along, (kernel, strides, dilations)):
            values[axis] = full[axis]
        x = _tap_pool(x, *along, [(0, 0)] * n, fill, _math.maximum)
    return x


def _tap_counts(
    sizes, kernel, strides, dilations, pads: Pads, extra, include_pad: bool
) -> np.ndarray:
    """How many elements each window of a tap pool counts: the image's, and with
    `include_pad` the explicit pads' (never the ceil_mode extension)."""
    counted = np.pad(np.ones(sizes), pads, constant_values=1.0 if include_pad else 0.0)
    counted = np.pad(counted, [(0, e) for e in extra])
    outs = [
        (n - ((k - 1) * d + 1)) // s + 1
        for n, k, s, d in zip(counted.shape, kernel, strides, dilations)
    ]
    total = np.zeros(outs)
    for tap in np.ndindex(*kernel):
        index = tuple(
            slice(t * d, t * d + (o - 1) * s + 1, s)
            for t, d, o, s in zip(tap, dilations, outs, strides)
        )
        total += counted[index]
    return total


def _pool_inputs(ctx: NodeContext):
    x = ctx.input(0)
    spatial = ctx.rank(0) - 2
    if spatial < 1:
        raise ctx.error("pooling needs an input of rank 3 or more (N, C, spatial...)")
    xl = ctx.channels_last(x)
    return x, spatial, xl, *_pool_geometry(ctx, xl, spatial)


def _concrete_pads(ctx: NodeContext, pads, sizes, kernel, strides, dilations) -> Pads:
    if pads != "SAME":
        return pads
    if any(s is None for s in sizes):
        raise ctx.error("this pool needs the image size when the model is imported")
    return [_same_pads(n, k, s, d, False) for n, k, s, d in zip(sizes, kernel, strides, dilations)]


def _max_pool_with_indices(
    ctx: NodeContext, x: Tensor, xl: Tensor, kernel, strides, dilations, pads: Pads
) -> list:
    """MaxPool's values and Indices: per window the first largest element and its flat index
    in the (N, C, spatial...) input, row-major, or column-major over the spatial dims with
    storage_order 1."""
    shape = x._shape_tuple
    if shape is None or any(d is None for d in shape):
        raise ctx.error("MaxPool's Indices need the input's shape when the model is imported")
    n, c, *sizes = (int(d) for d in shape)
    low = int(x.dtype.min) if not x.dtype.is_floating else -np.inf
    padded = _padded(xl, pads, low)
    outs = [
        (size + b + a - ((k - 1) * d + 1)) // s + 1
        for size, (b, a), k, s, d in zip(sizes, pads, kernel, strides, dilations)
    ]
    column_major = bool(ctx.attr("storage_order", 0))
    grid = np.indices([n, *outs, c])
    best = index = None
    for tap in np.ndindex(*kernel):
        begin = [0, *[t * d for t, d in zip(tap, dilations)], 0]
        end = [0, *[b + (o - 1) * s + 1 for b, o, s in zip(begin[1:], outs, strides)], 0]
        mask = 1 | 1 << (len(kernel) + 1)
        window = _array.strided_slice(
            padded, begin, end, [1, *strides, 1], begin_mask=mask, end_mask=mask
        )
        position = [
            grid[1 + k] * strides[k] + tap[k] * dilations[k] - pads[k][0]
            for k in range(len(kernel))
        ]
        if column_major:
            spatial_index = sum(p * int(np.prod(sizes[:k])) for k, p in enumerate(position))
        else:
            spatial_index = sum(p * int(np.prod(sizes[k + 1 :])) for k, p in enumerate(position))
        flat = (grid[0] * c + grid[-1]) * int(np.prod(sizes)) + spatial_index
        flat_t = constant(flat.astype(np.int64))
        if best is None:
            best, index = window, flat_t
            continue
        better = _logic.greater(window, best)
        best = _logic.where(better, window, best)
        index = _logic.where(better, flat_t, index)
    return [ctx.channels_first(best), ctx.channels_first(index)]


@converter("MaxPool")
def _max_pool(ctx: NodeContext) -> list:
    x, spatial, xl, kernel, strides, dilations, sizes, pads, extra = _pool_inputs(ctx)
    if ctx.wants_output(1):
        pads = _concrete_pads(ctx, pads, sizes, kernel, strides, dilations)
        pads = [(b, a + e) for (b, a), e in zip(pads, extra)]
        return _max_pool_with_indices(ctx, x, xl, kernel, strides, dilations, pads)
    if spatial > 2 or any(d != 1 for d in dilations) or not x.dtype.is_floating:
        pads = _concrete_pads(ctx, pads, sizes, kernel, strides, dilations)
        pads = [(b, a + e) for (b, a), e in zip(pads, extra)]
        low = int(x.dtype.min) if not x.dtype.is_floating else -np.inf
        y = _separable_max_pool(xl, kernel, strides, dilations, pads, low)
        return [ctx.channels_first(y)]
    low = -np.inf
    image = _pool_2d(xl, spatial)
    kernel, strides = _lift(spatial, kernel, strides)
    if pads == "SAME":
        padding = "SAME"
    else:
        pads = [(b, a + e) for (b, a), e in zip(pads, extra)]
        if spatial == 1:
            pads = [(0, 0), *pads]
        if any(b or a for b, a in pads):
            if _is_same(pads, _lift(spatial, sizes)[0], kernel, strides, [1, 1]):
                padding = "SAME"  # TF's SAME max pool never picks the padding either
            elif all(b < k and a < k for (b, a), k in zip(pads, kernel)):
                # every window holds a pixel: the pool skips the padding as it skips SAME's,
                # without a -inf copy of the image (ResNet-50's stem: 3x3 at stride 2, pads 1)
                explicit = [0, 0, *[p for pair in pads for p in pair], 0, 0]
                attrs = dict(
                    ksize=[1, *kernel, 1], strides=[1, *strides, 1], padding="EXPLICIT",
                    explicit_paddings=explicit, data_format="NHWC",
                )  # fmt: skip
                y = apply_op("MaxPool", [image], attrs, name="MaxPool").outputs[0]
                return [ctx.channels_first(_pool_back(y, spatial))]
            else:
                image, padding = _padded(image, pads, low), "VALID"
        else:
            padding = "VALID"
    y = max_pool(image, [1, *kernel, 1], [1, *strides, 1], padding)
    return [ctx.channels_first(_pool_back(y, spatial))]


@converter("AveragePool")
def _average_pool(ctx: NodeContext) -> list:
    x, spatial, xl, kernel, strides, dilations, sizes, pads, extra = _pool_inputs(ctx)
    include_pad = bool(ctx.attr("count_include_pad", 0))
    if spatial > 2 or any(d != 1 for d in dilations):
        if any(s is None for s in sizes):
            raise ctx.error("this pool needs the image size when the model is imported")
        pads = _concrete_pads(ctx, pads, sizes, kernel, strides, dilations)
        counts = _tap_counts(sizes, kernel, strides, dilations, pads, extra, include_pad)
        padded = [(b, a + e) for (b, a), e in zip(pads, extra)]
        total = _tap_pool(xl, kernel, strides, dilations, padded, 0.0, _math.add)
        scale = (1 / np.maximum(counts, 1)).reshape([1, *counts.shape, 1])
        y = _math.multiply(total, constant(scale.astype(x.dtype.np), dtype=x.dtype))
        return [ctx.channels_first(y)]
    image = _pool_2d(xl, spatial)
    kernel2, strides2 = _lift(spatial, kernel, strides)
    ksize, kstrides = [1, *kernel2, 1], [1, *strides2, 1]
    if pads == "SAME":  # SAME_UPPER with unknown sizes: TF's SAME leaves the padding out
        if include_pad:
            raise ctx.error("count_include_pad with auto_pad SAME_UPPER needs the image size")
        return [ctx.channels_first(_pool_back(avg_pool(image, ksize, kstrides, "SAME"), spatial))]
    if any(s is None for s in sizes):
        if any(b or a for b, a in pads) or any(extra):
            raise ctx.error("padding an average pool needs the image size when it is imported")
        y = avg_pool(image, ksize, kstrides, "VALID")
        return [ctx.channels_first(_pool_back(y, spatial))]
    padded = [(b, a + e) for (b, a), e in zip(pads, extra)]
    if not any(b or a for b, a in padded):
        y = avg_pool(image, ksize, kstrides, "VALID")
    elif (
        not any(extra) and not include_pad and _is_same(pads, sizes, kernel, strides, [1] * spatial)
    ):
        y = avg_pool(image, ksize, kstrides, "SAME")
    else:
        # the mean over the counted elements: the sum of each zero-padded window (VALID mean
        # times its size) over how many it counts (the image's, or also the explicit pads')
        counts = _tap_counts(sizes, kernel, strides, [1] * spatial, pads, extra, include_pad)
        factor = np.prod(kernel) / np.maximum(counts, 1)
        factor = factor.reshape([1, *([1] if spatial == 1 else []), *factor.shape, 1])
        lifted = [(0, 0), *padded] if spatial == 1 else padded
        y = avg_pool(_padded(image, lifted), ksize, kstrides, "VALID")
        y = _math.multiply(y, constant(factor.astype(x.dtype.np), dtype=x.dtype))
    return [ctx.channels_first(_pool_back(y, spatial))]


@converter("LpPool")
def _lp_pool(ctx: NodeContext) -> list:
    x, spatial, xl, kernel, strides, dilations, sizes, pads, extra = _pool_inputs(ctx)
    p = float(ctx.attr("p", 2))
    pads = _concrete_pads(ctx, pads, sizes, kernel, strides, dilations)
    padded = [(b, a + e) for (b, a), e in zip(pads, extra)]
    powered = _math.pow(_math.abs(xl), constant(p, dtype=x.dtype))
    total = _tap_pool(powered, kernel, strides, dilations, padded, 0.0, _math.add)
    return [ctx.channels_first(_math.pow(total, constant(1 / p, dtype=x.dtype)))]


@converter("GlobalAveragePool", "GlobalMaxPool")
def _global_pool(ctx: NodeContext) -> list:
    x = ctx.input(0)
    rank = ctx.rank(0)
    xl = ctx.channels_last(x)
    reduce = _reduce.reduce_mean if ctx.op_type == "GlobalAveragePool" else _reduce.reduce_max
    y = reduce(xl, list(range(1, rank - 1)), keepdims=True)
    return [ctx.channels_first(y)]


# -- normalizations ------------------------------------------------------------------------------
def _per_channel(ctx: NodeContext, x: Tensor, scale: Tensor, shift: Tensor) -> Tensor:
    """x * scale + shift with per-channel (axis 1) vectors, channels-last when x is an image."""
    rank = ctx_rank(ctx, x)
    if rank <= 2:
        return _math.add(_math.multiply(x, scale), shift)
    xl = ctx.channels_last(x)
    return ctx.channels_first(_math.add(_math.multiply(xl, scale), shift))


def ctx_rank(ctx: NodeContext, x: Tensor) -> int:
    if x._shape_tuple is None:
        raise ctx.error("the rank of its input must be known when the model is imported")
    return len(x._shape_tuple)


@converter("BatchNormalization")
def _batch_normalization(ctx: NodeContext) -> list:
    x = ctx.input(0)
    eps = ctx.attr("epsilon", 1e-5)
    training = bool(ctx.attr("training_mode", 0)) if ctx.opset >= 14 else False
    if ctx.opset < 9 and not ctx.attr("spatial", 1):
        raise ctx.error("spatial=0 (per-activation statistics) is not supported")
    if ctx.opset < 7 and ctx.attr("is_test", 0) == 0 and ctx.wants_output(1):
        training = True
    values = [ctx.const(i) for i in range(1, 5)]
    if training:
        return _batch_normalization_training(ctx, x, eps)
    if ctx.wants_output(1) and ctx.opset < 14:
        raise ctx.error("tfc computes BatchNormalization at inference only")
    if all(v is not None for v in values):
        scale, bias, mean, var = (v.astype(np.float64) for v in values)  # type: ignore[union-attr]
        a = scale / np.sqrt(var + eps)
        b = bias - mean * a
        a_t = constant(a.astype(x.dtype.np), dtype=x.dtype, name="scale")
        b_t = constant(b.astype(x.dtype.np), dtype=x.dtype, name="shift")
    else:
        scale, bias, mean, var = (ctx.input(i) for i in range(1, 5))
        a_t = _math.multiply(scale, _math.rsqrt(_math.add(var, constant(eps, dtype=var.dtype))))
        b_t = _math.subtract(bias, _math.multiply(mean, a_t))
    return [_per_channel(ctx, x, a_t, b_t)]


def _batch_normalization_training(ctx: NodeContext, x: Tensor, eps: float) -> list:
    rank = ctx_rank(ctx, x)
    scale, bias, mean, var = (ctx.input(i) for i in range(1, 5))
    momentum = ctx.attr("momentum", 0.9)
    axes = [0, *range(2, rank)]
    batch_mean = _reduce.reduce_mean(x, axes)
    centered = _math.subtract(x, _array.reshape(batch_mean, [-1, *[1] * (rank - 2)]))
    batch_var = _reduce.reduce_mean(_math.square(centered), axes)
    a = _math.multiply(scale, _math.rsqrt(_math.add(batch_var, constant(eps, dtype=x.dtype))))
    b = _math.subtract(bias, _math.multiply(batch_mean, a))
    y = _per_channel(ctx, x, a, b)
    m = constant(momentum, dtype=x.dtype)
    keep = constant(1 - momentum, dtype=x.dtype)
    running_mean = _math.add(_math.multiply(mean, m), _math.multiply(batch_mean, keep))
    running_var = _math.add(_math.multiply(var, m), _math.multiply(batch_var, keep))
    return [y, running_mean, running_var]


def _normalize(x: Tensor, axes: list[int], eps: float) -> tuple[Tensor, Tensor, Tensor]:
    """(x - mean) / sqrt(var + eps) over `axes` (kept), with the mean and 1/sqrt(var + eps)."""
    mean = _reduce.reduce_mean(x, axes, keepdims=True)
    centered = _math.subtract(x, mean)
    var = _reduce.reduce_mean(_math.square(centered), axes, keepdims=True)
    inv = _math.rsqrt(_math.add(var, constant(eps, dtype=x.dtype)))
    return _math.multiply(centered, inv), mean, inv


@converter("InstanceNormalization")
def _instance_normalization(ctx: NodeContext) -> list:
    x, scale, bias = ctx.input(0), ctx.input(1), ctx.input(2)
    rank = ctx_rank(ctx, x)
    eps = ctx.attr("epsilon", 1e-5)
    xl = ctx.channels_last(x)
    y, _, _ = _normalize(xl, list(range(1, rank - 1)), eps)
    return [ctx.channels_first(_math.add(_math.multiply(y, scale), bias))]


@converter("LayerNormalization")
def _layer_normalization(ctx: NodeContext) -> list:
    x, scale, bias = ctx.input(0), ctx.input(1), ctx.optional(2)
    rank = ctx_rank(ctx, x)
    axis = ctx.attr("axis", -1)
    axis = axis + rank if axis < 0 else axis
    eps = ctx.attr("epsilon", 1e-5)
    stash = ctx.attr("stash_type", 1)
    work = x if stash != 1 or x.dtype == _dt.float32 else _math.cast(x, _dt.float32)
    y, mean, inv = _normalize(work, list(range(axis, rank)), eps)
    if work.dtype != x.dtype:
        y = _math.cast(y, x.dtype)
    y = _math.multiply(y, scale)
    if bias is not None:
        y = _math.add(y, bias)
    return [y, mean, inv]


@converter("GroupNormalization")
def _group_normalization(ctx: NodeContext) -> list:
    x, scale, bias = ctx.input(0), ctx.input(1), ctx.input(2)
    shape = ctx.shape(0)
    if shape is None or any(d is None for d in shape[1:]):
        raise ctx.error("the input's shape must be known when the model is imported")
    groups = int(ctx.attr("num_groups"))
    eps = ctx.attr("epsilon", 1e-5)
    channels = shape[1]
    grouped = _array.reshape(x, [-1, groups, channels // groups, *shape[2:]])
    y, _, _ = _normalize(grouped, list(range(2, len(shape) + 1)), eps)
    y = _array.reshape(y, [-1, *shape[1:]])
    per_group = ctx.opset < 21
    sizes = [-1, *[1] * (len(shape) - 2)]
    if per_group:  # opset 18: one scale and bias per group
        scale = _array.reshape(
            _array.tile(_array.reshape(scale, [groups, 1]), [1, channels // groups]), sizes
        )
        bias = _array.reshape(
            _array.tile(_array.reshape(bias, [groups, 1]), [1, channels // groups]), sizes
        )
    else:
        scale, bias = _array.reshape(scale, sizes), _array.reshape(bias, sizes)
    return [_math.add(_math.multiply(y, scale), bias)]


@converter("MeanVarianceNormalization")
def _mean_variance_normalization(ctx: NodeContext) -> list:
    x = ctx.input(0)
    axes = ctx.attr("axes", [0, 2, 3])
    y, _, _ = _normalize(x, [int(a) for a in axes], 1e-9)
    mean = _reduce.reduce_mean(x, axes, keepdims=True)
    centered = _math.subtract(x, mean)
    std = _math.sqrt(_reduce.reduce_mean(_math.square(centered), axes, keepdims=True))
    return [_math.truediv(centered, _math.add(std, constant(1e-9, dtype=x.dtype)))]


@converter("LpNormalization")
def _lp_normalization(ctx: NodeContext) -> list:
    x = ctx.input(0)
    axis, p = ctx.attr("axis", -1), ctx.attr("p", 2)
    if p == 1:
        norm = _reduce.reduce_sum(_math.abs(x), [axis], keepdims=True)
    elif p == 2:
        norm = _math.sqrt(_reduce.reduce_sum(_math.square(x), [axis], keepdims=True))
    else:
        raise ctx.error(f"p must be 1 or 2, got {p}")
    zero = _logic.equal(norm, constant(0, dtype=x.dtype))
    safe = _logic.where(zero, _array.ones_like(norm), norm)
    return [_math.truediv(x, safe)]


@converter("LRN")
def _lrn(ctx: NodeContext) -> list:
    x = ctx.input(0)
    size = int(ctx.attr("size"))
    alpha, beta, bias = ctx.attr("alpha", 1e-4), ctx.attr("beta", 0.75), ctx.attr("bias", 1.0)
    xl = ctx.channels_last(x)
    shape = xl._shape_tuple
    if shape is None or shape[-1] is None:
        raise ctx.error("the number of channels must be known when the model is imported")
    channels = shape[-1]
    if size % 2 and len(shape) == 4:  # TF's window: depth_radius channels on either side
        y = lrn(xl, (size - 1) // 2, bias=bias, alpha=alpha / size, beta=beta)
        return [ctx.channels_first(y)]
    # an even window (or another rank): the sum of squares as a product with a band of ones,
    # channel c summing c - floor((size-1)/2) .. c + ceil((size-1)/2)
    before, after = (size - 1) // 2, size - 1 - (size - 1) // 2
    rows = np.arange(channels)[:, None]
    cols = np.arange(channels)[None, :]
    band = ((rows >= cols - before) & (rows <= cols + after)).astype(x.dtype.np)
    squares = _array.reshape(_math.square(xl), [-1, channels])
    sums = _array.reshape(matmul(squares, constant(band, dtype=x.dtype)), _array.shape(xl))
    scale = _math.add(
        constant(bias, dtype=x.dtype), _math.multiply(constant(alpha / size, dtype=x.dtype), sums)
    )
    y = _math.multiply(xl, _math.pow(scale, constant(-beta, dtype=x.dtype)))
    return [ctx.channels_first(y)]


# -- softmax family ------------------------------------------------------------------------------
def _flattened_2d(ctx: NodeContext, x: Tensor, axis: int) -> tuple[Tensor, Tensor | None]:
    """x as (prod(shape[:axis]), prod(shape[axis:])), with the shape to restore."""
    shape = x._shape_tuple
    if shape is not None and all(d is not None for d in shape):
        rows = int(np.prod(shape[:axis], dtype=np.int64))
        return _array.reshape(x, [rows, -1]), None
    return _array.reshape(
        x,
        _array.stack(
            [
                _reduce.reduce_prod(_array.shape(x, out_type=_dt.int64)[:axis]),
                constant(-1, dtype=_dt.int64),
            ]
        ),
    ), _array.shape(x)


def _softmax_like(ctx: NodeContext, fn) -> list:
    x = ctx.input(0)
    rank = ctx_rank(ctx, x)
    if ctx.opset < 13:
        axis = ctx.attr("axis", 1)
        axis = axis + rank if axis < 0 else axis
        if axis == rank - 1:
            return [fn(x, -1)]
        flat, _ = _flattened_2d(ctx, x, axis)
        return [_array.reshape(fn(flat, -1), _array.shape(x))]
    axis = ctx.attr("axis", -1)
    axis = axis + rank if axis < 0 else axis
    twin = ctx.twin(x)
    if twin is not None and axis == 1 and rank > 2:
        return [ctx.channels_first(fn(twin, -1))]
    return [fn(x, axis)]


@converter("Softmax")
def _softmax(ctx: NodeContext) -> list:
    return _softmax_like(ctx, lambda x, axis: _nn.softmax(x, axis=axis))


@converter("LogSoftmax")
def _log_softmax(ctx: NodeContext) -> list:
    return _softmax_like(ctx, lambda x, axis: _nn.log_softmax(x, axis=axis))


@converter("Hardmax")
def _hardmax(ctx: NodeContext) -> list:
    def hardmax(x: Tensor, axis: int) -> Tensor:
        depth = x._shape_tuple[axis] if x._shape_tuple else None
        if depth is None:
            raise ctx.error("the size of the softmax axis must be known when it is imported")
        index = argmax(x, axis=axis)
        return _math.cast(_array.one_hot(index, depth, axis=axis), x.dtype)

    return _softmax_like(ctx, hardmax)


# -- dropout -------------------------------------------------------------------------------------
@converter("Dropout")
def _dropout(ctx: NodeContext) -> list:
    x = ctx.input(0)
    training = False
    if ctx.opset >= 12 and ctx.has_input(2):
        value = ctx.require_const(2, "training_mode")
        training = bool(np.asarray(value).reshape(()))
    ratio = ctx.attr("ratio", 0.5) if ctx.opset < 12 else 0.5
    if ctx.opset >= 12 and ctx.has_input(1):
        ratio = float(np.asarray(ctx.require_const(1, "ratio")).reshape(()))
    if ctx.opset < 7 and not ctx.attr("is_test", 0):
        training = True
    if training and ratio > 0:
        raise ctx.error("tfc imports Dropout at inference (training_mode false) only")
    y = _array.identity(x)
    twin = ctx.twin(x)
    if twin is not None:
        ctx.layouts.twin[y] = twin
    outputs = [y]
    if ctx.wants_output(1):
        mask_type = _dt.bool_ if ctx.opset >= 10 else x.dtype
        outputs.append(_array.ones_like(x, dtype=mask_type))
    return outputs


@converter("CausalConvWithState")
def _causal_conv_with_state(ctx: NodeContext) -> list:
    """A depthwise 1-D convolution over the time axis of (batch, channels, length) whose left
    context is the past state (zeros without one); the new state is the last k - 1 steps."""
    x, w, bias, past = ctx.input(0), ctx.input(1), ctx.optional(2), ctx.optional(3)
    shape, w_shape = ctx.shape(0), w._shape_tuple
    if shape is None or w_shape is None or any(d is None for d in (*shape, *w_shape)):
        raise ctx.error("the shapes of the input and the filter must be known when imported")
    batch, channels, length = shape
    k = w_shape[2]
    if past is None:
        past = _array.zeros([batch, channels, k - 1], dtype=x.dtype)
    padded = _array.concat([past, x], 2)
    image = _array.expand_dims(_array.transpose(padded, [0, 2, 1]), 1)  # (N, 1, L + k - 1, C)
    filt = _array.reshape(_array.transpose(w, [1, 2, 0]), [1, k, channels, 1])
    y = _array.squeeze(depthwise_conv2d(image, filt, [1, 1, 1, 1], "VALID"), [1])
    if bias is not None:
        y = _math.add(y, bias)
    if ctx.attr("activation", "none") in ("silu", "swish"):
        y = _math.multiply(y, _math.sigmoid(y))
    elif ctx.attr("activation", "none") != "none":
        raise ctx.error(f"unknown activation {ctx.attr('activation')!r}")
    state = _array.slice(padded, [0, 0, length], [batch, channels, k - 1])
    return [_array.transpose(y, [0, 2, 1]), state]


# the most entries of Col2Im's scatter matrix (blocks x positions x image elements) tfc builds
COL2IM_MAX_ENTRIES = 1 << 24


@converter("Col2Im")
def _col2im(ctx: NodeContext) -> list:
    """Blocks added back into the image they were taken from, as a product with a constant
    0/1 matrix that sends each (block element, block) to its image element (none for one that
    falls in the padding): one GEMM, for the image sizes of the conformance suite and models
    that fold small feature maps."""
    x = ctx.input(0)
    image = [int(v) for v in ctx.require_const(1, "image_shape").reshape(-1)]
    block = [int(v) for v in ctx.require_const(2, "block_shape").reshape(-1)]
    n = len(image)
    if len(block) != n:
        raise ctx.error(f"block_shape {block} and image_shape {image} differ in rank")
    dilations = list(ctx.attr("dilations", [1] * n))
    strides = list(ctx.attr("strides", [1] * n))
    pads = list(ctx.attr("pads", [0] * (2 * n)))
    shape = ctx.shape(0)
    if shape is None or len(shape) != 3 or shape[1] is None or shape[2] is None:
        raise ctx.error("Col2Im needs an input of shape (N, C * prod(block_shape), L) known")
    if not x.dtype.is_floating:
        raise ctx.error(f"Col2Im of {x.dtype.name} values (tfc computes it for floats)")
    grid = [
        (size + pads[d] + pads[n + d] - (dilations[d] * (k - 1) + 1)) // strides[d] + 1
        for d, (size, k) in enumerate(zip(image, block))
    ]
    blocks, count = int(np.prod(block)), int(np.prod(grid))
    if shape[1] % blocks or shape[2] != count:
        raise ctx.error(
            f"input shape {list(shape)} does not hold blocks of {block} at {count} positions"
        )
    entries = blocks * count * int(np.prod(image))
    if entries > COL2IM_MAX_ENTRIES:
        raise ctx.error(f"Col2Im's scatter matrix would have {entries} entries (tfc's limit "
                        f"is {COL2IM_MAX_ENTRIES})")  # fmt: skip
    scatter = np.zeros([blocks, count, int(np.prod(image))], np.float64)
    for b, offset in enumerate(np.ndindex(*block)):
        for pos, start in enumerate(np.ndindex(*grid)):
            at = [s * st + o * dl - pads[d] for d, (s, o, st, dl) in
                  enumerate(zip(start, offset, strides, dilations))]  # fmt: skip
            if all(0 <= a < size for a, size in zip(at, image)):
                scatter[b, pos, np.ravel_multi_index(at, image)] = 1.0
    channels = shape[1] // blocks
    flat = _array.reshape(x, [-1, blocks * count])
    summed = matmul(flat, constant(scatter.reshape(blocks * count, -1), dtype=x.dtype))
    return [_array.reshape(summed, [-1, channels, *image])]
