"""3-D convolutions and pools: compiled C vs the NumPy references vs definitional loops over
output voxels and filter taps in float64 (TF's padding arithmetic spelled out per dim); their
gradients through tf.gradients; TF's errors."""

import numpy as np
import pytest
from opcheck import CaseBatch

import tfc as tf

RNG = np.random.default_rng(3)


def out_and_pad(size, k, stride, dilation, padding):
    span = (k - 1) * dilation + 1
    if padding == "VALID":
        return (size - span) // stride + 1, 0
    out = -(-size // stride)
    return out, max((out - 1) * stride + span - size, 0) // 2


def taps(x_shape, k, strides, padding, dilations=(1, 1, 1)):
    """(out voxel, tap, in voxel) for every tap of every output voxel inside the volume."""
    dims = [out_and_pad(s, kk, st, d, padding) for s, kk, st, d in
            zip(x_shape[1:4], k, strides, dilations)]  # fmt: skip
    for o in np.ndindex(*[d[0] for d in dims]):
        for t in np.ndindex(*k):
            i = tuple(o[a] * strides[a] + t[a] * dilations[a] - dims[a][1] for a in range(3))
            if all(0 <= i[a] < x_shape[1 + a] for a in range(3)):
                yield o, t, i


def out_shape(x_shape, k, strides, padding, channels, dilations=(1, 1, 1)):
    dims = [out_and_pad(s, kk, st, d, padding)[0] for s, kk, st, d in
            zip(x_shape[1:4], k, strides, dilations)]  # fmt: skip
    return (x_shape[0], *dims, channels)


def conv3d_np(x, f, strides, padding, dilations=(1, 1, 1)):
    y = np.zeros(out_shape(x.shape, f.shape[:3], strides, padding, f.shape[4], dilations))
    for o, t, i in taps(x.shape, f.shape[:3], strides, padding, dilations):
        y[(slice(None), *o)] += x[(slice(None), *i)].astype(np.float64) @ f[t].astype(np.float64)
    return y.astype(x.dtype)


def conv3d_input_np(x_shape, f, dy, strides, padding, dilations=(1, 1, 1)):
    dx = np.zeros(x_shape)
    for o, t, i in taps(x_shape, f.shape[:3], strides, padding, dilations):
        dx[(slice(None), *i)] += (
            dy[(slice(None), *o)].astype(np.float64) @ f[t].astype(np.float64).T
        )
    return dx.astype(f.dtype)


def conv3d_filter_np(x, f_shape, dy, strides, padding, dilations=(1, 1, 1)):
    df = np.zeros(f_shape)
    for o, t, i in taps(x.shape, f_shape[:3], strides, padding, dilations):
        xi, do = x[(slice(None), *i)].astype(np.float64), dy[(slice(None), *o)].astype(np.float64)
        df[t] += xi.T @ do
    return df.astype(x.dtype)


def pool3d_np(x, k, strides, padding, kind):
    y = np.full(
        out_shape(x.shape, k, strides, padding, x.shape[4]), -np.inf if kind == "MAX" else 0.0
    )
    counts = np.zeros(y.shape[1:4])
    for o, _, i in taps(x.shape, k, strides, padding):
        v = x[(slice(None), *i)].astype(np.float64)
        y[(slice(None), *o)] = (
            np.maximum(y[(slice(None), *o)], v) if kind == "MAX" else y[(slice(None), *o)] + v
        )
        counts[o] += 1
    if kind == "AVG":
        y = y / counts[None, :, :, :, None]
    return y.astype(x.dtype)


def volume_patches_np(x, k, strides, padding):
    """out[n, o..., ((a*k_h + b)*k_w + e)*C + c] = x[n, the voxel tap (a, b, e) reads, c]."""
    shape = out_shape(x.shape, k, strides, padding, int(np.prod(k)) * x.shape[4])
    y = np.zeros(shape, x.dtype)
    c = x.shape[4]
    for o, t, i in taps(x.shape, k, strides, padding):
        flat = int(np.ravel_multi_index(t, k))
        y[(slice(None), *o, slice(flat * c, (flat + 1) * c))] = x[(slice(None), *i)]
    return y


def ncdhw(a):
    return np.ascontiguousarray(a.transpose(0, 4, 1, 2, 3))


# (x shape, filter shape, strides, padding, dilations)
CONVS = {
    "same-strided": ((2, 5, 6, 7, 3), (3, 2, 3, 3, 4), (2, 1, 2), "SAME", (1, 1, 1)),
    "valid-dilated": ((1, 6, 5, 7, 2), (2, 3, 2, 2, 3), (1, 1, 1), "VALID", (2, 1, 2)),
    "valid-s3": ((1, 8, 4, 5, 2), (2, 2, 2, 2, 3), (3, 1, 2), "VALID", (1, 1, 1)),
    "kernel-over-depth": ((2, 2, 4, 4, 2), (5, 1, 1, 2, 2), (1, 1, 1), "SAME", (1, 1, 1)),
}
POOLS = {
    "k3x2x2-s2x2x1-same": ((2, 5, 6, 7, 3), (3, 2, 2), (2, 2, 1), "SAME"),
    "k3x3x2-s2x1x2-same": ((2, 5, 6, 7, 3), (3, 3, 2), (2, 1, 2), "SAME"),
    "k2-valid": ((1, 4, 5, 6, 2), (2, 2, 2), (2, 2, 2), "VALID"),
}


def _build() -> CaseBatch:
    b = CaseBatch()
    with b.graph.as_default():
        for dtype in ("float32", "float64"):
            rtol, atol = (1e-5, 1e-5) if dtype == "float32" else (1e-12, 1e-12)
            for k, (name, (xs, fs, st, pad, dil)) in enumerate(CONVS.items()):
                x = RNG.standard_normal(xs).astype(dtype)
                f = RNG.standard_normal(fs).astype(dtype)
                dy = RNG.standard_normal(out_shape(xs, fs[:3], st, pad, fs[4], dil)).astype(dtype)
                spec = [None, *xs[1:]] if k % 2 else "same"
                xt, dyt = b.feed(x, spec), b.feed(dy, [None, *dy.shape[1:]] if k % 2 else "same")
                strides, rates = [1, *st, 1], [1, *dil, 1]
                y = tf.nn.conv3d(xt, f, strides, pad, dilations=rates)
                tag = f"{dtype}-{name}"
                b.add(f"conv3d-{tag}", y, conv3d_np(x, f, st, pad, dil), rtol, atol)
                want_dx = conv3d_input_np(xs, f, dy, st, pad, dil)
                want_df = conv3d_filter_np(x, fs, dy, st, pad, dil)
                if dil == (1, 1, 1):
                    dx = tf.nn.conv3d_transpose(dyt, f, list(xs), strides, pad)
                    b.add(f"conv3d_transpose-{tag}", dx, want_dx, rtol, atol)
                df = tf.nn.conv3d_backprop_filter(xt, list(fs), dyt, strides, pad, dilations=rates)
                b.add(f"conv3d_backprop_filter-{tag}", df, want_df, rtol, atol * 10)
                # the composition's own gradients (Conv2D's, Pad's, StridedSlice's, AddN's)
                ft = b.feed(f)
                y2 = tf.nn.conv3d(xt, ft, strides, pad, dilations=rates)
                gx, gf = tf.gradients(y2, [xt, ft], grad_ys=dyt)
                b.add(f"conv3d-gradient-input-{tag}", gx, want_dx, rtol, atol)
                b.add(f"conv3d-gradient-filter-{tag}", gf, want_df, rtol, atol * 10)
            # NCDHW through convolution
            xs, fs = (2, 3, 5, 6, 4), (2, 3, 2, 4, 2)
            x = RNG.standard_normal(xs).astype(dtype)
            f = RNG.standard_normal(fs).astype(dtype)
            y = tf.nn.convolution(
                b.feed(ncdhw(x)), f, "SAME", strides=[1, 2, 1], data_format="NCDHW"
            )
            b.add(
                f"convolution-NCDHW-{dtype}",
                y,
                ncdhw(conv3d_np(x, f, (1, 2, 1), "SAME")),
                rtol,
                atol,
            )
            for k, (name, (xs, ks, st, pad)) in enumerate(POOLS.items()):
                x = RNG.standard_normal(xs).astype(dtype)
                xt = b.feed(x, [None, *xs[1:]] if k % 2 else "same")
                for kind, fn in (("MAX", tf.nn.max_pool3d), ("AVG", tf.nn.avg_pool3d)):
                    got = fn(xt, [1, *ks, 1], [1, *st, 1], pad)
                    b.add(
                        f"{kind.lower()}_pool3d-{dtype}-{name}",
                        got,
                        pool3d_np(x, ks, st, pad, kind),
                        rtol,
                        atol,
                    )
            for name, (xs, ks, st, pad) in {
                "same": ((2, 5, 4, 5, 3), (3, 2, 2), (2, 1, 2), "SAME"),
                "valid": ((1, 4, 5, 6, 2), (2, 2, 3), (1, 2, 1), "VALID"),
            }.items():
                x = RNG.standard_normal(xs).astype(dtype)
                got = tf.extract_volume_patches(b.feed(x), [1, *ks, 1], [1, *st, 1], pad)
                b.add(
                    f"extract_volume_patches-{dtype}-{name}", got, volume_patches_np(x, ks, st, pad)
                )
            x = RNG.standard_normal((2, 3, 5, 6, 4)).astype(dtype)
            got = tf.nn.avg_pool3d(b.feed(x), [1, 1, 2, 2, 2], [1, 1, 2, 1, 2], "VALID", "NCDHW")
            want = ncdhw(
                pool3d_np(x.transpose(0, 2, 3, 4, 1), (2, 2, 2), (2, 1, 2), "VALID", "AVG")
            )
            b.add(f"avg_pool3d-NCDHW-{dtype}", got, want, rtol, atol)
    return b


BATCH = _build()


@pytest.mark.parametrize("case", BATCH.ids())
def test_conv3d_ops(case):
    BATCH.check(case)


def test_shapes_dispatch_and_errors():
    x = tf.placeholder(tf.float32, [None, 6, 7, 8, 3])
    f = tf.zeros([3, 3, 3, 3, 5])
    assert tf.nn.conv3d(x, f, [1, 2, 2, 2, 1], "SAME").shape.as_list() == [None, 3, 4, 4, 5]
    assert tf.nn.convolution(x, f, "VALID").shape.as_list() == [None, 4, 5, 6, 5]
    assert tf.nn.max_pool_v2(x, 2, 2, "VALID").shape.as_list() == [None, 3, 3, 4, 3]
    assert tf.nn.pool(x, [2, 2, 2], "AVG", "SAME").shape.as_list() == [None, 6, 7, 8, 3]
    (g,) = tf.gradients(tf.reduce_sum(tf.nn.max_pool3d(x, 2, 2, "SAME")), x)
    assert g.shape.as_list() == [None, 6, 7, 8, 3]
    with pytest.raises(ValueError, match="Dimensions must be equal, but are 3 and 2"):
        tf.nn.conv3d(x, tf.zeros([3, 3, 3, 2, 5]), [1, 1, 1, 1, 1], "SAME")
    with pytest.raises(ValueError, match="does not yet support strides in the batch and depth"):
        tf.nn.conv3d(x, f, [1, 1, 1, 1, 2], "SAME")
    with pytest.raises(ValueError, match="Pooling is not yet supported on the batch dimension"):
        tf.nn.max_pool3d(x, [2, 2, 2, 2, 1], 1, "SAME")
    with pytest.raises(ValueError, match=r"Computed output size would be negative: -1 \[input"):
        tf.nn.conv3d(x, tf.zeros([8, 1, 1, 3, 1]), [1, 1, 1, 1, 1], "VALID")
    with pytest.raises(ValueError, match="Size of out_backprop doesn't match computed: actual = 2"):
        tf.nn.conv3d_transpose(tf.zeros([1, 2, 7, 8, 5]), f, [1, 6, 7, 8, 3], 1, "SAME")
    with pytest.raises(ValueError, match="data_format must be 'NDHWC' or 'NCDHW'"):
        tf.nn.avg_pool3d(x, 2, 2, "SAME", data_format="NHWC")
    with pytest.raises(ValueError, match="every dimension of .* but the batch known"):
        tf.nn.conv3d(tf.placeholder(tf.float32, [1, None, 4, 4, 3]), f, 1, "SAME")
