"""Two dense layers without an activation and the gradients of a loss: the fuse pass grouped
the second layer's input gradient (a product the weight gradient reads) with its bias gradient
(a sum of the product's rows) and exported only one row of the product (the scratch of a
product nothing outside reads); verification failed at the MatMul reading it, and lowering it
raised IndexError in member_gemm (issue 19's three-layer MLP).

Found by the fuzzer (seed 19, graph 36) with the fix undone, under every configuration that
fuses. Fixed in tfc/passes/fuse.py: a product something outside its group reads is exported
whole.
"""

import numpy as np

VALUES = {
    "v1": np.array([[1.0]], np.float32),
    "v2": np.array([[1.0]], np.float32),
    "v4": np.array([1.0], np.float32),
    "v6": np.array([[1.0]], np.float32),
    "v8": np.array([1.0], np.float32),
    "v10": np.array([[1.0]], np.float32),
}
FETCH = ["v11", "v12", "v13", "v14", "v15"]
DEPTH = 12


def build(tf, op, const, feed, var):
    v1 = feed("v1")
    v2 = var("v2")
    v3 = tf.matmul(v1, v2)
    v4 = var("v4")
    v5 = v3 + v4
    v6 = var("v6")
    v7 = tf.matmul(v5, v6)
    v8 = var("v8")
    v9 = v7 + v8
    v10 = feed("v10")
    v11 = tf.reduce_sum(v9 * v10)
    v12, v13, v14, v15 = tf.gradients(v11, [v2, v4, v8, v10])
    return {"v11": v11, "v12": v12, "v13": v13, "v14": v14, "v15": v15}
