"""tf.image resizing (resize_images, resize_bilinear, resize_nearest_neighbor): TF1's pixel
coordinates against a NumPy loop, dtypes, gradients, errors; and, where TensorFlow is
importable, the same resizes in both."""

import numpy as np
import pytest

import tfc as tf

RNG = np.random.default_rng(22)
IMAGES = RNG.random((2, 5, 7, 3)).astype(np.float32)
SIZES = [(3, 4), (9, 11), (1, 1), (5, 7)]


def _scale(n_in: int, n_out: int, align_corners: bool) -> np.float32:
    if align_corners and n_out > 1:
        return np.float32(n_in - 1) / np.float32(n_out - 1)
    return np.float32(n_in) / np.float32(n_out)


def numpy_bilinear(img, size, align_corners=False, half_pixel=False):
    n, h, w, c = img.shape
    sy, sx = _scale(h, size[0], align_corners), _scale(w, size[1], align_corners)
    out = np.zeros((n, size[0], size[1], c), np.float32)
    for i in range(size[0]):
        fy = (np.float32(i) + 0.5) * sy - 0.5 if half_pixel else np.float32(i) * sy
        y0, y1 = max(int(np.floor(fy)), 0), min(int(np.ceil(fy)), h - 1)
        ly = np.float32(fy - np.floor(fy))
        for j in range(size[1]):
            fx = (np.float32(j) + 0.5) * sx - 0.5 if half_pixel else np.float32(j) * sx
            x0, x1 = max(int(np.floor(fx)), 0), min(int(np.ceil(fx)), w - 1)
            lx = np.float32(fx - np.floor(fx))
            top = img[:, y0, x0] + (img[:, y0, x1] - img[:, y0, x0]) * lx
            bottom = img[:, y1, x0] + (img[:, y1, x1] - img[:, y1, x0]) * lx
            out[:, i, j] = top + (bottom - top) * ly
    return out


def numpy_nearest(img, size, align_corners=False):
    _, h, w, _ = img.shape
    sy, sx = _scale(h, size[0], align_corners), _scale(w, size[1], align_corners)

    def pick(k, s, n):
        v = np.float32(k) * s
        return min(int(np.floor(v + 0.5)) if align_corners else int(np.floor(v)), n - 1)

    rows = [pick(i, sy, h) for i in range(size[0])]
    cols = [pick(j, sx, w) for j in range(size[1])]
    return img[:, rows][:, :, cols]


def _cases():
    for ac in (False, True):
        for size in SIZES:
            yield (f"bilinear {size} corners={ac}", size, ac, tf.image.ResizeMethod.BILINEAR)
            yield (f"nearest {size} corners={ac}", size, ac, tf.image.ResizeMethod.NEAREST_NEIGHBOR)


def test_resizes_sample_the_pixels_tf1_samples():
    x = tf.placeholder(tf.float32, [None, None, None, 3])  # sizes known only at run time
    fetches = {
        name: tf.image.resize_images(x, size, method=method, align_corners=ac)
        for name, size, ac, method in _cases()
    }
    fetches["half pixel"] = tf.image.resize_bilinear(x, [8, 3], half_pixel_centers=True)
    ints = tf.placeholder(tf.uint8, [5, 7, 3])  # one image, no batch
    fetches["uint8 nearest"] = tf.image.resize_nearest_neighbor(ints, [9, 4])
    fetches["uint8 bilinear"] = tf.image.resize_images(ints, tf.constant([4, 6]))
    pixels = (IMAGES[0] * 255).astype(np.uint8)
    with tf.Session() as sess:
        got = sess.run(fetches, {x: IMAGES, ints: pixels})
    for name, size, ac, method in _cases():
        if method == tf.image.ResizeMethod.BILINEAR:
            want = numpy_bilinear(IMAGES, size, ac)
        else:
            want = numpy_nearest(IMAGES, size, ac)
        np.testing.assert_allclose(got[name], want, rtol=0, atol=1e-6, err_msg=name)
    np.testing.assert_allclose(
        got["half pixel"], numpy_bilinear(IMAGES, (8, 3), half_pixel=True), rtol=0, atol=1e-6
    )
    assert got["uint8 nearest"].dtype == np.uint8
    np.testing.assert_array_equal(got["uint8 nearest"], numpy_nearest(pixels[None], (9, 4))[0])
    assert got["uint8 bilinear"].dtype == np.float32
    np.testing.assert_allclose(
        got["uint8 bilinear"],
        numpy_bilinear(pixels[None].astype(np.float32), (4, 6))[0],
        rtol=0,
        atol=1e-4,
    )
    assert fetches["bilinear (3, 4) corners=False"].shape.as_list() == [None, 3, 4, 3]


def test_bilinear_gradient_spreads_each_output_over_its_four_neighbours():
    x = tf.constant(IMAGES[:1])
    y = tf.image.resize_images(x, [9, 11])
    weights = RNG.random((1, 9, 11, 3)).astype(np.float32)
    (grad,) = tf.gradients(tf.reduce_sum(y * weights), [x])
    with tf.Session() as sess:
        got = sess.run(grad)
    # the loss is linear in the image: its gradient is the loss of each unit image
    want = np.zeros_like(IMAGES[:1])
    for idx in np.ndindex(*IMAGES[:1].shape):
        unit = np.zeros_like(IMAGES[:1])
        unit[idx] = 1.0
        want[idx] = np.sum(numpy_bilinear(unit, (9, 11)) * weights)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_resize_errors_are_clear():
    x = tf.placeholder(tf.float32, [1, 4, 4, 1])
    with pytest.raises(NotImplementedError, match="ResizeMethod.BICUBIC is not supported"):
        tf.image.resize_images(x, [2, 2], method=tf.image.ResizeMethod.BICUBIC)
    with pytest.raises(ValueError, match="unknown resize method 7"):
        tf.image.resize_images(x, [2, 2], method=7)
    with pytest.raises(ValueError, match="images must be .* got shape \\(4, 4\\)"):
        tf.image.resize_images(tf.zeros([4, 4]), [2, 2])
    with pytest.raises(ValueError, match="size must be a 1-D int32 Tensor of 2 elements"):
        tf.image.resize_bilinear(x, [2, 2, 2])
    with pytest.raises(ValueError, match="align_corners must be False"):
        tf.image.resize_bilinear(x, [2, 2], align_corners=True, half_pixel_centers=True)
    with pytest.raises(NotImplementedError, match="preserve_aspect_ratio"):
        tf.image.resize_images(x, [2, 2], preserve_aspect_ratio=True)


def test_resizes_match_tensorflow():
    tf1 = pytest.importorskip("tensorflow").compat.v1
    graph = tf1.Graph()
    with graph.as_default():
        x = tf1.placeholder(tf1.float32, [None, None, None, 3])
        fetches = {
            name: tf1.image.resize_images(x, size, method=method, align_corners=ac)
            for name, size, ac, method in _cases()
        }
        fetches["half pixel"] = tf1.image.resize_bilinear(x, [8, 3], half_pixel_centers=True)
    with tf1.Session(graph=graph) as sess:
        want = sess.run(fetches, {x: IMAGES})
    ours = tf.placeholder(tf.float32, [None, None, None, 3])
    mine = {
        name: tf.image.resize_images(ours, size, method=method, align_corners=ac)
        for name, size, ac, method in _cases()
    }
    mine["half pixel"] = tf.image.resize_bilinear(ours, [8, 3], half_pixel_centers=True)
    with tf.Session() as sess:
        got = sess.run(mine, {ours: IMAGES})
    for name in want:
        np.testing.assert_allclose(got[name], want[name], rtol=0, atol=1e-6, err_msg=name)
