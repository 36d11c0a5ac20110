"""An integer MatMul in a fused group: the fused kernel called tfc_gemm_i64_ex, which exists for
float types only, and the C compiler refused the program.

Found by the fuzzer (seed 1, graph 70), under every configuration that fuses. Fixed in
tfc/codegen/fusion.py: a fused integer product computes its block of rows with tfc_gemm_i32/i64.
"""

import numpy as np

VALUES = {
    "v2": np.array([[2, 2, 1, 2, 1]], np.int64),
    "v4": np.array([[-4, 4, 1, 0, -5]], np.int64),
}
FETCH = ["v7"]
DEPTH = 1


def build(tf, op, const, feed, var):
    v2 = feed("v2")
    v4 = feed("v4")
    v5 = tf.matmul(v2, v4, transpose_a=False, transpose_b=True)
    v6 = tf.reduce_max(v5, axis=[-2, 1], keepdims=True)
    v7 = tf.reshape(v6, [1, -1, 1])
    return {"v7": v7}
