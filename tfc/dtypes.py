"""`tf.dtypes`: TF1's dtype namespace: every DType, as_dtype, and the casts between them.

The DTypes themselves live in tfc.ir.dtypes (the graph's layer); see docs/dtypes.md for what
each holds, how kernels compute with it, and how NumPy values of bfloat16 look.
"""

# ruff: noqa: F401  (this module only re-exports)
from tfc.ir.dtypes import (
    QUANTIZED_DTYPES,
    DType,
    as_dtype,
    bfloat16,
    complex64,
    complex128,
    double,
    float16,
    float32,
    float64,
    half,
    int8,
    int16,
    int32,
    int64,
    qint8,
    qint16,
    qint32,
    quint8,
    quint16,
    resource,
    string,
    uint8,
    uint16,
    uint32,
    uint64,
    variant,
)
from tfc.ir.dtypes import bool_ as bool  # noqa: A004  TF's name
from tfc.ops.complex_ops import complex
from tfc.ops.conversions import saturate_cast
from tfc.ops.math import cast
from tfc.ops.strings import as_string
