"""Summary ops: serialized `Summary` protocol buffers for TensorBoard, as TF's kernels make them.

ScalarSummary, HistogramSummary (TensorFlow's exponential buckets, empty runs collapsed),
ImageSummary (PNG, float images scaled as TF scales them), AudioSummaryV2 (16-bit WAV),
TensorSummaryV2 (tf.summary.text and tensor_summary) and MergeSummary. Each outputs a tf.string
scalar, so it runs in a Python stage of the Session (docs/host-ops.md); the frontends that give
them TF1's tags and collections are tfc/summary/.
"""

from __future__ import annotations

import sys
from collections.abc import Callable

import numpy as np

from tfc.io.png import encode_png
from tfc.io.proto import DecodeError
from tfc.io.summary_pb import HistogramProto, Summary, SummaryMetadata
from tfc.io.tensor_proto import make_tensor_proto
from tfc.io.wav import encode_wav
from tfc.ir import dtypes as _dt
from tfc.ir import errors
from tfc.ir.tensor_shape import shape_str
from tfc.ops.registry import STRING_REASON, OpContext, OpDef, check_dtype, register

__all__ = ["histogram_bucket_limits", "histogram_proto"]

_REAL = (_dt.float32, _dt.float64, _dt.int32, _dt.int64)
_SCALAR_STRING = [(_dt.string, ())]


def _register(op_type: str, infer: Callable, reference: Callable) -> None:
    """A summary op: it makes a string, so it runs in Python; none has a gradient."""
    register(
        OpDef(
            op_type,
            infer=infer,
            reference=reference,
            differentiable=False,
            in_python=STRING_REASON,
        )
    )


def _invalid(ctx: OpContext, message: str) -> errors.OpError:
    return errors.InvalidArgumentError(None, None, message)


def _string(value: object) -> str:
    return value.decode("utf-8", errors="replace") if isinstance(value, bytes) else str(value)


def _out(summary: Summary) -> np.ndarray:
    out = np.empty((), dtype=object)
    out[()] = summary.SerializeToString()
    return out


def _scalar_tag(ctx: OpContext, i: int = 0) -> None:
    check_dtype(ctx, i, [_dt.string], "tag")
    shape = ctx.in_shapes[i]
    if shape is not None and len(shape) != 0:
        raise ctx.error(f"Shape must be rank 0 but is rank {len(shape)}")


# -- ScalarSummary ---------------------------------------------------------------------------------
def _scalar_infer(ctx: OpContext) -> list:
    check_dtype(ctx, 0, [_dt.string], "tags")
    check_dtype(ctx, 1, list(_REAL), "values")
    return _SCALAR_STRING


def _scalar_reference(ctx: OpContext, tags: np.ndarray, values: np.ndarray) -> np.ndarray:
    tags, values = np.asarray(tags), np.asarray(values)
    if tags.shape != values.shape:
        first = _string(tags.reshape(-1)[0]) if tags.size else ""
        raise _invalid(
            ctx,
            f"tags and values are not the same shape: {shape_str(tags.shape)} != "
            f"{shape_str(values.shape)} (tag '{first}')",
        )
    summary = Summary()
    for tag, value in zip(tags.reshape(-1), values.reshape(-1)):
        summary.value.add(tag=_string(tag), simple_value=float(value))
    return _out(summary)


_register("ScalarSummary", _scalar_infer, _scalar_reference)


# -- HistogramSummary ------------------------------------------------------------------------------
def _default_bucket_limits() -> np.ndarray:
    """TensorFlow's default histogram buckets (lib/histogram/histogram.cc): limits growing by
    10% from 1e-12 to 1e20, mirrored for negative values, with 0 and +-DBL_MAX at the ends."""
    positive = []
    v = 1.0e-12
    while v < 1.0e20:
        positive.append(v)
        v *= 1.1
    positive.append(sys.float_info.max)
    negative = [-x for x in reversed(positive)]
    return np.array(negative + [0.0] + positive, dtype=np.float64)


_BUCKET_LIMITS = _default_bucket_limits()


def histogram_bucket_limits() -> np.ndarray:
    """The upper limits of TensorFlow's default histogram buckets (a copy)."""
    return _BUCKET_LIMITS.copy()


def histogram_proto(values: np.ndarray) -> HistogramProto:
    """The HistogramProto TensorFlow's Histogram makes of finite `values`: a value goes in the
    first bucket whose limit exceeds it; sums are accumulated in order, in double; runs of empty
    buckets are written as one (EncodeToProto without preserve_zero_buckets)."""
    flat = np.asarray(values, dtype=np.float64).reshape(-1)
    proto = HistogramProto()
    if flat.size:
        proto.min = float(flat.min())
        proto.max = float(flat.max())
        proto.sum = float(np.add.accumulate(flat)[-1])
        proto.sum_squares = float(np.add.accumulate(flat * flat)[-1])
    else:
        proto.min = float(_BUCKET_LIMITS[-1])
        proto.max = -float(_BUCKET_LIMITS[-1])
    proto.num = float(flat.size)
    counts = np.bincount(
        np.searchsorted(_BUCKET_LIMITS, flat, side="right"), minlength=_BUCKET_LIMITS.size
    ).astype(np.float64)
    limits, buckets = [], []
    i, n = 0, counts.size
    while i < n:
        end, count, j = _BUCKET_LIMITS[i], counts[i], i + 1
        while count <= 0 and j < n and counts[j] <= 0:
            end, count, j = _BUCKET_LIMITS[j], counts[j], j + 1
        limits.append(float(end))
        buckets.append(float(count))
        i = j
    proto.bucket_limit.extend(limits)
    proto.bucket.extend(buckets)
    return proto


def _histogram_infer(ctx: OpContext) -> list:
    _scalar_tag(ctx)
    check_dtype(ctx, 1, list(_REAL), "values")
    return _SCALAR_STRING


def _histogram_reference(ctx: OpContext, tag: np.ndarray, values: np.ndarray) -> np.ndarray:
    flat = np.asarray(values, dtype=np.float64).reshape(-1)
    if not np.all(np.isfinite(flat)):
        raise _invalid(ctx, f"Nan in summary histogram for: {ctx.name}")
    summary = Summary()
    summary.value.add(tag=_string(tag[()])).histo.CopyFrom(histogram_proto(flat))
    return _out(summary)


_register("HistogramSummary", _histogram_infer, _histogram_reference)


# -- ImageSummary ----------------------------------------------------------------------------------
def _image_infer(ctx: OpContext) -> list:
    _scalar_tag(ctx)
    dtype = ctx.in_dtypes[1]
    if not (dtype.is_floating or dtype.name == "uint8"):
        raise ctx.type_error(
            f"Value passed to parameter 'tensor' has DataType {dtype.name} not in list of allowed "
            "values: uint8, float32, float16, float64"
        )
    shape = ctx.in_shapes[1]
    if shape is not None:
        if len(shape) != 4:
            raise ctx.error(f"Shape must be rank 4 but is rank {len(shape)}")
        if shape[3] is not None and shape[3] not in (1, 3, 4):
            raise ctx.error(f"Tensor must be 4-D with last dim 1, 3, or 4, not {shape_str(shape)}")
    if ctx.attrs["max_images"] < 1:
        raise ctx.error(f"max_images must be >= 1, got {ctx.attrs['max_images']}")
    return _SCALAR_STRING


def _to_uint8(ctx: OpContext, image: np.ndarray) -> np.ndarray:
    """A float image as TF's NormalizeAndAddImages makes it bytes: scaled so the largest value is
    255 (all values non-negative) or the largest magnitude 127 around 128; non-finite pixels get
    the bad color."""
    image = image.astype(np.float32)
    finite = np.isfinite(image).all(axis=-1)
    values = image[finite]
    low = float(values.min()) if values.size else np.inf
    high = float(values.max()) if values.size else -np.inf
    if low < 0:
        largest = max(abs(low), abs(high))
        scale, offset = (np.float32(0.0) if largest < 1e-6 else np.float32(127.0 / largest),
                         np.float32(128.0))  # fmt: skip
    else:
        scale, offset = (np.float32(0.0) if high < 1e-6 else np.float32(255.0 / high),
                         np.float32(0.0))  # fmt: skip
    with np.errstate(invalid="ignore"):
        out = (image * scale + offset).astype(np.uint8)
    bad = np.asarray(ctx.attrs["bad_color"], dtype=np.uint8).reshape(-1)
    out[~finite] = bad[: image.shape[-1]]
    return out


def _image_reference(ctx: OpContext, tag: np.ndarray, images: np.ndarray) -> np.ndarray:
    images = np.asarray(images)
    if images.ndim != 4 or images.shape[3] not in (1, 3, 4):
        raise _invalid(
            ctx, f"Tensor must be 4-D with last dim 1, 3, or 4, not {shape_str(images.shape)}"
        )
    base = _string(tag[()])
    count = min(images.shape[0], ctx.attrs["max_images"])
    summary = Summary()
    for i in range(count):
        image = images[i]
        pixels = image if image.dtype == np.uint8 else _to_uint8(ctx, image)
        value = summary.value.add(
            tag=f"{base}/image" if ctx.attrs["max_images"] == 1 else f"{base}/image/{i}"
        )
        value.image.height, value.image.width = int(image.shape[0]), int(image.shape[1])
        value.image.colorspace = int(image.shape[2])
        value.image.encoded_image_string = encode_png(pixels)
    return _out(summary)


_register("ImageSummary", _image_infer, _image_reference)


# -- AudioSummaryV2 --------------------------------------------------------------------------------
def _audio_infer(ctx: OpContext) -> list:
    _scalar_tag(ctx)
    check_dtype(ctx, 1, [_dt.float32], "tensor")
    check_dtype(ctx, 2, [_dt.float32], "sample_rate")
    shape = ctx.in_shapes[1]
    if shape is not None and len(shape) not in (2, 3):
        raise ctx.error(f"Tensor must be 3-D or 2-D, got: {shape_str(shape)}")
    if ctx.attrs["max_outputs"] < 1:
        raise ctx.error(f"max_outputs must be >= 1, got {ctx.attrs['max_outputs']}")
    return _SCALAR_STRING


def _audio_reference(
    ctx: OpContext, tag: np.ndarray, audio: np.ndarray, sample_rate: np.ndarray
) -> np.ndarray:
    audio = np.asarray(audio, dtype=np.float32)
    if audio.ndim == 2:
        audio = audio[:, :, None]
    rate = float(np.asarray(sample_rate).reshape(-1)[0]) if np.size(sample_rate) == 1 else None
    if rate is None or np.ndim(sample_rate) != 0:
        raise _invalid(ctx, f"sample_rate must be rank-0, got shape {np.shape(sample_rate)}")
    if not rate > 0:
        raise _invalid(ctx, f"sample_rate must be > 0, got {rate}")
    base = _string(tag[()])
    summary = Summary()
    for i in range(min(audio.shape[0], ctx.attrs["max_outputs"])):
        value = summary.value.add(
            tag=f"{base}/audio" if ctx.attrs["max_outputs"] == 1 else f"{base}/audio/{i}"
        )
        value.audio.sample_rate = rate
        value.audio.num_channels = int(audio.shape[2])
        value.audio.length_frames = int(audio.shape[1])
        value.audio.content_type = "audio/wav"
        value.audio.encoded_audio_string = encode_wav(audio[i], int(rate))
    return _out(summary)


_register("AudioSummaryV2", _audio_infer, _audio_reference)


# -- TensorSummaryV2 -------------------------------------------------------------------------------
def _tensor_infer(ctx: OpContext) -> list:
    _scalar_tag(ctx)
    _scalar_tag(ctx, 2)
    return _SCALAR_STRING


def _tensor_reference(
    ctx: OpContext, tag: np.ndarray, tensor: np.ndarray, metadata: np.ndarray
) -> np.ndarray:
    summary = Summary()
    value = summary.value.add(tag=_string(tag[()]))
    try:
        value.metadata.CopyFrom(SummaryMetadata.FromString(metadata[()]))
    except DecodeError as e:
        raise _invalid(ctx, f"Could not parse serialized_summary_metadata: {e}") from None
    dtype = ctx.in_dtypes[1]
    value.tensor.CopyFrom(make_tensor_proto(np.asarray(tensor), dtype=dtype))
    return _out(summary)


_register("TensorSummaryV2", _tensor_infer, _tensor_reference)


# -- MergeSummary ----------------------------------------------------------------------------------
def _merge_infer(ctx: OpContext) -> list:
    for i in range(len(ctx.in_dtypes)):
        check_dtype(ctx, i, [_dt.string], "inputs")
    if not ctx.in_dtypes:
        raise ctx.error("MergeSummary needs at least one input")
    return _SCALAR_STRING


def _merge_reference(ctx: OpContext, *inputs: np.ndarray) -> np.ndarray:
    merged = Summary()
    tags: set[str] = set()
    for serialized in (s for x in inputs for s in np.asarray(x).reshape(-1)):
        try:
            summary = Summary.FromString(serialized)
        except DecodeError:
            raise _invalid(ctx, "Could not parse one of the summary inputs") from None
        for value in summary.value:
            if value.tag and value.tag in tags:  # TensorSummary values may share ""
                raise _invalid(ctx, f"Duplicate tag {value.tag} found in summary inputs ")
            tags.add(value.tag)
            merged.value.add().CopyFrom(value)
    return _out(merged)


_register("MergeSummary", _merge_infer, _merge_reference)
