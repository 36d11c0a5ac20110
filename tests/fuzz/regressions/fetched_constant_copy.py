"""A fetched constant (the folded gradient of unstack: seven ones among zeros, float64) copied
into the output with memcpy: gcc 12 with AVX-512 expands a copy from a constant it can see into
stores of broadcast registers, and stored eight ones.

Found by the fuzzer (seed 1, graph 196), under every configuration that folds, built for this
AVX-512 host. Fixed in tfc/codegen/lower.py and runtime/include/tfc_runtime.h: compiled-in
constants are read through tfc_opaque, so no code is specialized for their values.
"""

import numpy as np

VALUES = {
    "v1": np.array(
        [
            [[1.0], [1.0], [1.0], [1.0], [1.0], [1.0], [1.0]],
            [[1.0], [1.0], [1.0], [1.0], [1.0], [1.0], [1.0]],
            [[1.0], [1.0], [1.0], [1.0], [1.0], [1.0], [1.0]],
            [[1.0], [1.0], [1.0], [1.0], [1.0], [1.0], [1.0]],
            [[1.0], [1.0], [1.0], [1.0], [1.0], [1.0], [1.0]],
            [[1.0], [1.0], [1.0], [1.0], [1.0], [1.0], [1.0]],
            [[1.0], [1.0], [1.0], [1.0], [1.0], [1.0], [1.0]],
        ],
        np.float64,
    ),
}
FETCH = ["v21"]
DEPTH = 4


def build(tf, op, const, feed, var):
    v1 = feed("v1")
    v2, v3, v4, v5, v6, v7, v8 = tf.unstack(v1, axis=-3)
    v20 = tf.reduce_sum(v6)
    (v21,) = tf.gradients(v20, [v1])
    return {"v21": v21}
