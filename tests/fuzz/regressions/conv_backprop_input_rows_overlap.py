"""Conv2DBackpropInput by row scatters (1x1 filter, 3 channels, a 3x3 image): the padded
vector of one column's segment overlaps the next row's first pixels, and gcc 12's predictive
commoning at -O3 forwarded a stored vector to the overlapping load, dropping sums: rows 1 and 2
of the input gradient came back 0 in their first two columns (-O3 -march=native, -O3 -mavx2).

Found by the fuzzer (seed 1, graph 253), under every configuration built with -O3. Fixed in
runtime/include/tfc_conv_impl.h: a compiler barrier (TFC_CONV_FENCE) after every scatter.
"""

import numpy as np

VALUES = {
    "v1": np.array(
        [
            [
                [[1.0, 1.0, 1.0], [1.0, 1.0, 1.0], [1.0, 1.0, 1.0]],
                [[1.0, 1.0, 1.0], [1.0, 1.0, 1.0], [1.0, 1.0, 1.0]],
                [[1.0, 1.0, 1.0], [1.0, 1.0, 1.0], [1.0, 1.0, 1.0]],
            ]
        ],
        np.float32,
    ),
    "v5": np.array(
        [[[[1.0, 1.0, 1.0, 1.0], [1.0, 1.0, 1.0, 1.0], [1.0, 1.0, 1.0, 1.0]]]], np.float32
    ),
}
FETCH = ["v8"]
DEPTH = 6


def build(tf, op, const, feed, var):
    v1 = feed("v1")
    v5 = feed("v5")
    v6 = tf.nn.conv2d(v1, v5, strides=[1, 1, 1, 1], padding="SAME", dilations=[1, 1, 1, 1])
    v7 = tf.reduce_sum(v6)
    (v8,) = tf.gradients(v7, [v1])
    return {"v8": v8}
