"""Node attributes between tfc's graphs (Python values) and GraphDefs (AttrValue messages).

tfc keeps the attributes TensorFlow's ops declare under TF's names, except most *type*
attributes (`T`, `Tidx`, `Tshape`, ...), which it reads off the inputs instead. A GraphDef needs
them, so writing one adds them from the input dtypes (`DERIVED_TYPE_ATTRS`, a rule per op; an op
not listed has `T` = the dtype of its first input), and reading one checks them against the
inputs and drops them. The few attributes tfc keeps that TensorFlow's op does not declare
(`TFC_ONLY_ATTRS`) are left out of a GraphDef and given back when reading.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from tfc.io.graph_pb import AttrValue
from tfc.io.tensor_proto import (
    dtype_to_enum,
    enum_to_dtype,
    make_ndarray,
    make_tensor_proto,
    shape_from_proto,
    shape_to_proto,
)
from tfc.ir import dtypes as _dt

__all__ = [
    "SHAPE_ATTRS",
    "DERIVED_TYPE_ATTRS",
    "TFC_ONLY_ATTRS",
    "UnrepresentableAttr",
    "derived_type_attrs",
    "to_attr_value",
    "from_attr_value",
]

# attributes whose tuples are tensor shapes (other tuples and lists are lists of values)
SHAPE_ATTRS = frozenset(
    ["shape", "shapes", "element_shape", "output_shapes", "_output_shapes", "output_shape"]
)

_SHAPE_LIST_ATTRS = frozenset(["shapes", "output_shapes", "_output_shapes"])

# Rules: "in<k>" the dtype of input k ("in-1" the last), "ins"/"ins1" the dtypes of all inputs
# (from input 1), "count" the number of inputs, "half" half of it. {} where tfc keeps every type
# attribute TensorFlow's op has (Const's dtype, Cast's SrcT and DstT, the random ops' T).
_REDUCE = {"T": "in0", "Tidx": "in1"}
_SCATTER = {"T": "in0", "Tindices": "in1"}
_UNSORTED = {"T": "in0", "Tindices": "in1", "Tnumsegments": "in2"}
_PADS = {"T": "in0", "Tpaddings": "in1"}
_NONE: dict[str, str] = {}
DERIVED_TYPE_ATTRS: dict[str, dict[str, str]] = {
    **dict.fromkeys(["Sum", "Mean", "Max", "Min", "Prod", "ArgMax", "ArgMin", "Cumsum",
                     "Cumprod", "ReverseV2", "BroadcastTo"], _REDUCE),
    **dict.fromkeys(["All", "Any"], {"Tidx": "in1"}),
    **dict.fromkeys(["ScatterAdd", "ScatterSub", "ScatterMul", "ScatterDiv", "ScatterMin",
                     "ScatterMax", "ScatterUpdate", "ScatterNdAdd", "ScatterNdSub",
                     "ScatterNdUpdate", "TensorScatterAdd", "TensorScatterSub",
                     "TensorScatterMin", "TensorScatterMax", "TensorScatterUpdate", "SegmentSum",
                     "SegmentMean", "SegmentMax", "SegmentMin", "SegmentProd"], _SCATTER),
    **dict.fromkeys(["UnsortedSegmentSum", "UnsortedSegmentMax", "UnsortedSegmentMin",
                     "UnsortedSegmentProd"], _UNSORTED),
    **dict.fromkeys(["Pad", "PadV2", "MirrorPad", "MirrorPadGrad"], _PADS),
    **dict.fromkeys(["Const", "Placeholder", "VariableV2", "Cast", "IdentityN", "RandomGamma",
                     "RandomPoissonV2", "RandomShuffle", "RandomStandardNormal", "RandomUniform",
                     "TruncatedNormal", "RandomUniformInt", "Multinomial", "NoOp", "Range",
                     "IsVariableInitialized", "LogicalAnd", "LogicalOr", "LogicalNot",
                     "DecodeBase64", "EncodeBase64", "ReduceJoin", "RegexFullMatch",
                     "RegexReplace", "StringLength", "StringLower", "StringUpper",
                     "StringSplitV2", "StringStrip", "StringToHashBucket",
                     "StringToHashBucketFast", "StringToHashBucketStrong", "StringToNumber",
                     "StringJoin", "IteratorGetNext", "MakeIterator", "_Recv",
                     "AudioSummaryV2"], _NONE),
    "AddN": {"N": "count", "T": "in0"},
    "ConcatV2": {"T": "in0", "Tidx": "in-1"},
    "Pack": {"T": "in0"},
    "Conv2DBackpropInput": {"T": "in1"},
    "DepthwiseConv2dNativeBackpropInput": {"T": "in1"},
    "AvgPoolGrad": {"T": "in1"},
    "ExpandDims": {"T": "in0", "Tdim": "in1"},
    "Fill": {"T": "in1", "index_type": "in0"},
    "GatherV2": {"Tparams": "in0", "Tindices": "in1", "Taxis": "in2"},
    "GatherNd": {"Tparams": "in0", "Tindices": "in1"},
    "InTopKV2": {"T": "in1"},
    "MatrixBandPart": {"T": "in0", "Tindex": "in1"},
    "OneHot": {"TI": "in0"},
    "Print": {"T": "in0", "U": "ins1"},
    "PyFunc": {"Tin": "ins"},
    "PyFuncStateless": {"Tin": "ins"},
    "Reshape": {"T": "in0", "Tshape": "in1"},
    "ReverseSequence": {"T": "in0", "Tlen": "in1"},
    "Roll": {"T": "in0", "Tshift": "in1", "Taxis": "in2"},
    "Slice": {"T": "in0", "Index": "in1"},
    "StridedSlice": {"T": "in0", "Index": "in1"},
    "StridedSliceGrad": {"T": "in4", "Index": "in0"},
    "Split": {"T": "in1"},
    "SplitV": {"T": "in0", "Tlen": "in1"},
    "Tile": {"T": "in0", "Tmultiples": "in1"},
    "Transpose": {"T": "in0", "Tperm": "in1"},
    "TopKV2": {"T": "in0", "Tk": "in1"},
    "SelectV2": {"T": "in1"},
    "SparseSoftmaxCrossEntropyWithLogits": {"T": "in0", "Tlabels": "in1"},
    "UnravelIndex": {"Tidx": "in0"},
    "ScatterNd": {"T": "in1", "Tindices": "in0"},
    "Bincount": {"T": "in2"},
    "DynamicStitch": {"N": "half", "T": "in-1"},
    "PlaceholderWithDefault": {"dtype": "in0"},
    "Assert": {"T": "ins1"},
    "StringFormat": {"T": "ins"},
    "Substr": {"T": "in1"},
    "ScalarSummary": {"T": "in1"},
    "HistogramSummary": {"T": "in1"},
    "ImageSummary": {"T": "in1"},
    "TensorSummaryV2": {"T": "in1"},
    "MergeSummary": {"N": "count"},
    # the SparseTensor ops (tfc/ops/sparse_ops.py): T is their values' dtype
    **dict.fromkeys(["SparseReorder", "SparseSlice", "SparseSoftmax", "SparseFillEmptyRows",
                     "SparseSparseMaximum", "SparseSparseMinimum", "SparseReduceSumSparse",
                     "SparseReduceMaxSparse", "SparseReduceMax"], {"T": "in1"}),
    **dict.fromkeys(["SparseReshape", "StringSplit", "SparseConcat"], _NONE),
    "SparseToDense": {"T": "in2", "Tindices": "in0"},
    "SparseSplit": {"T": "in2"},
    "EditDistance": {"T": "in1"},
    **dict.fromkeys(["SerializeSparse", "SerializeManySparse"], {"T": "in1"}),
    "DeserializeManySparse": _NONE,
    "SparseAdd": {"T": "in1", "Treal": "in6"},
    "SparseSegmentSum": {"T": "in0", "Tidx": "in1", "Tsegmentids": "in2"},
}  # fmt: skip
_DEFAULT_RULE = {"T": "in0"}

# attributes tfc keeps that TensorFlow's op does not declare: left out of a GraphDef, and the
# value they take when a GraphDef is read
TFC_ONLY_ATTRS: dict[str, dict[str, Any]] = {"Rank": {"out_type": _dt.int32}}


class UnrepresentableAttr(TypeError):
    """An attribute value no AttrValue can hold (a Python object: a dataset, a function)."""


def derived_type_attrs(op: str, input_dtypes: list[_dt.DType]) -> dict[str, Any]:
    """The type attributes TensorFlow's `op` has that tfc reads off the inputs, with their
    values for inputs of `input_dtypes`."""
    rules = DERIVED_TYPE_ATTRS.get(op, _DEFAULT_RULE if input_dtypes else _NONE)
    out: dict[str, Any] = {}
    for name, rule in rules.items():
        if rule == "count":
            out[name] = len(input_dtypes)
        elif rule == "half":
            out[name] = len(input_dtypes) // 2
        elif rule == "ins":
            out[name] = list(input_dtypes)
        elif rule == "ins1":
            out[name] = list(input_dtypes[1:])
        else:
            index = int(rule[2:])
            if -len(input_dtypes) <= index < len(input_dtypes):
                out[name] = input_dtypes[index]
    return out


def _is_dtype(value: Any) -> bool:
    return isinstance(value, _dt.DType)


def to_attr_value(name: str, value: Any) -> AttrValue:
    """The AttrValue of attribute `name` holding the tfc value `value`."""
    out = AttrValue()
    if value is None:
        if name in SHAPE_ATTRS:
            out.shape.CopyFrom(shape_to_proto(None))
        return out  # no value: tfc's None (an attribute left at its default)
    if name in SHAPE_ATTRS and isinstance(value, (tuple, list)):
        if name in _SHAPE_LIST_ATTRS:
            out.list.SetInParent()
            out.list.shape.extend(shape_to_proto(s) for s in value)
        else:
            out.shape.CopyFrom(shape_to_proto(value))
        return out
    if _is_dtype(value):
        out.type = dtype_to_enum(value)
    elif isinstance(value, (bool, np.bool_)):
        out.b = bool(value)
    elif isinstance(value, (int, np.integer)):
        out.i = int(value)
    elif isinstance(value, (float, np.floating)):
        out.f = float(value)
    elif isinstance(value, str):
        out.s = value.encode("utf-8")
    elif isinstance(value, bytes):
        out.s = value
    elif isinstance(value, np.ndarray):
        out.tensor.CopyFrom(make_tensor_proto(value))
    elif isinstance(value, (list, tuple)):
        _list_value(name, list(value), out)
    else:
        raise UnrepresentableAttr(
            f"attribute '{name}' holds a {type(value).__name__}, which a GraphDef cannot hold"
        )
    return out


def _list_value(name: str, values: list, out: AttrValue) -> None:
    target = out.list
    target.SetInParent()  # an empty list is a value too
    if all(_is_dtype(v) for v in values):
        target.type.extend(dtype_to_enum(v) for v in values)
    elif all(isinstance(v, (bool, np.bool_)) for v in values):
        target.b.extend(bool(v) for v in values)
    elif all(isinstance(v, (int, np.integer)) and not isinstance(v, bool) for v in values):
        target.i.extend(int(v) for v in values)
    elif all(isinstance(v, (int, float, np.integer, np.floating)) for v in values):
        target.f.extend(float(v) for v in values)
    elif all(isinstance(v, (str, bytes)) for v in values):
        target.s.extend(v.encode("utf-8") if isinstance(v, str) else v for v in values)
    elif all(isinstance(v, np.ndarray) for v in values):
        target.tensor.extend(make_tensor_proto(v) for v in values)
    else:
        kinds = sorted({type(v).__name__ for v in values})
        raise UnrepresentableAttr(
            f"attribute '{name}' is a list of {', '.join(kinds)}, which a GraphDef cannot hold"
        )


def _text(value: bytes) -> str | bytes:
    try:
        return value.decode("utf-8")
    except UnicodeDecodeError:
        return value


def from_attr_value(name: str, attr: AttrValue) -> Any:
    """The tfc value of attribute `name` from its AttrValue; a TypeError or ValueError naming
    what tfc cannot hold (a dtype it lacks, a function)."""
    which = attr.WhichOneof("value")
    if which is None:
        return None
    if which == "s":
        return _text(attr.s)
    if which in ("i", "f", "b"):
        return getattr(attr, which)
    if which == "type":
        return enum_to_dtype(attr.type)
    if which == "shape":
        return shape_from_proto(attr.shape)
    if which == "tensor":
        return make_ndarray(attr.tensor)
    if which == "list":
        lst = attr.list
        if lst.s:
            return [_text(v) for v in lst.s]
        if lst.i:
            return list(lst.i)
        if lst.f:
            return list(lst.f)
        if lst.b:
            return list(lst.b)
        if lst.type:
            return [enum_to_dtype(t) for t in lst.type]
        if lst.shape:
            return [shape_from_proto(s) for s in lst.shape]
        if lst.tensor:
            return [make_ndarray(t) for t in lst.tensor]
        if lst.func:
            raise ValueError(f"attribute '{name}' names functions, which tfc cannot import")
        return []
    if which == "func":
        raise ValueError(
            f"attribute '{name}' names the function '{attr.func.name}'; tfc imports graphs "
            "without functions"
        )
    raise ValueError(f"attribute '{name}' is a placeholder '{attr.placeholder}' of a function")
