"""tf.image.decode_png / decode_jpeg / decode_image / encode_png: files made by Pillow decoded
to their pixels, TF's channel conversions, 16-bit and float outputs, GIF frames, a decoded
image feeding compiled ops, and the errors."""

import io

import numpy as np
import pytest

import tfc as tf

Image = pytest.importorskip("PIL.Image")

RNG = np.random.default_rng(5)
RGBA = RNG.integers(0, 256, (6, 9, 4), dtype=np.uint8)
GRAY16 = RNG.integers(0, 65536, (4, 5), dtype=np.uint16)
# JPEG keeps smooth images: a gradient in each channel
SMOOTH = (np.add.outer(np.arange(16) * 6, np.arange(16) * 4)[..., None] + [0, 40, 80]).astype(
    np.uint8
)


def _file(array, fmt, mode=None, **kw):
    out = io.BytesIO()
    Image.fromarray(array, mode).save(out, fmt, **kw)
    return out.getvalue()


@pytest.fixture(scope="module")
def decoded():
    """Every decode the tests check, run in one session."""
    rgb = RGBA[..., :3]
    files = {
        "rgb": _file(rgb, "PNG"),
        "rgba": _file(RGBA, "PNG"),
        "gray": _file(RGBA[..., 0], "PNG"),
        "gray_alpha": _file(RGBA[..., :2], "PNG", "LA"),
        "gray16": _file(GRAY16.astype("<u2"), "PNG"),
        "bmp": _file(rgb, "BMP"),
        "jpeg": _file(SMOOTH, "JPEG", quality=95),
    }
    frames = [RNG.integers(0, 256, (3, 4, 3), dtype=np.uint8) for _ in range(2)]
    gif = io.BytesIO()
    pal = [Image.fromarray(f).quantize(colors=256) for f in frames]
    pal[0].save(gif, "GIF", save_all=True, append_images=pal[1:])
    files["gif"] = gif.getvalue()
    with tf.Graph().as_default():
        x = tf.placeholder(tf.string, [])
        ops = {
            "natural": tf.image.decode_png(x),
            **{f"c{c}": tf.image.decode_png(x, channels=c) for c in (1, 3, 4)},
            "u16": tf.image.decode_png(x, dtype=tf.uint16),
            "jpeg": tf.image.decode_jpeg(x),
            "jpeg_gray": tf.image.decode_jpeg(x, channels=1),
            "image": tf.image.decode_image(x),
            "image_float": tf.image.decode_image(x, dtype=tf.float32, expand_animations=False),
        }
        out = {}
        with tf.Session() as sess:
            for key, data in files.items():
                if key == "gif":  # a GIF has 3 channels, and one more dimension when expanded
                    wanted = ["natural", "image", "image_float"]
                elif key == "bmp":  # only decode_image takes BMP files, as in TF
                    wanted = ["image"]
                elif key == "jpeg":
                    wanted = list(ops)
                else:
                    wanted = [k for k in ops if not k.startswith("jpeg")]
                out[key] = sess.run({k: ops[k] for k in wanted}, {x: data})
    return files, frames, out


def test_png_pixels_in_every_channel_layout(decoded):
    files, _, out = decoded
    rgb, alpha = RGBA[..., :3], RGBA[..., 3:]
    opaque = np.full_like(alpha, 255)
    np.testing.assert_array_equal(out["rgb"]["natural"], rgb)
    np.testing.assert_array_equal(out["rgba"]["natural"], RGBA)
    np.testing.assert_array_equal(out["rgba"]["c3"], rgb)
    np.testing.assert_array_equal(out["rgb"]["c4"], np.concatenate([rgb, opaque], -1))
    gray = RGBA[..., :1]
    np.testing.assert_array_equal(out["gray"]["natural"], gray)
    np.testing.assert_array_equal(out["gray"]["c3"], np.repeat(gray, 3, -1))
    np.testing.assert_array_equal(out["gray"]["c4"], np.concatenate([np.repeat(gray, 3, -1),
                                                                      opaque], -1))  # fmt: skip
    np.testing.assert_array_equal(out["gray_alpha"]["natural"], RGBA[..., :2])
    np.testing.assert_array_equal(out["gray_alpha"]["c1"], gray)
    # libpng's weights in 15-bit fixed point, rounded down (TF gives these values)
    r, g, b = (rgb[..., k].astype(np.int64) for k in range(3))
    want = (9798 * r + 19235 * g + 3735 * b) >> 15
    np.testing.assert_array_equal(out["rgb"]["c1"][..., 0], want)
    np.testing.assert_array_equal(out["rgb"]["u16"], rgb.astype(np.uint16) * 257)
    np.testing.assert_array_equal(out["gray16"]["u16"][..., 0], GRAY16)
    np.testing.assert_array_equal(out["gray16"]["natural"][..., 0], GRAY16 >> 8)
    np.testing.assert_array_equal(out["bmp"]["image"], rgb)
    np.testing.assert_allclose(out["rgb"]["image_float"], rgb / np.float32(255), rtol=1e-7)


def test_jpeg_and_gif(decoded):
    files, frames, out = decoded
    pil = np.asarray(Image.open(io.BytesIO(files["jpeg"])))
    np.testing.assert_array_equal(out["jpeg"]["jpeg"], pil)
    assert np.abs(out["jpeg"]["jpeg"].astype(int) - SMOOTH).max() <= 4  # a lossy copy
    luma = Image.open(io.BytesIO(files["jpeg"]))
    luma.draft("L", luma.size)
    np.testing.assert_array_equal(out["jpeg"]["jpeg_gray"][..., 0], np.asarray(luma))
    gif = out["gif"]["image"]
    assert gif.shape == (2, 3, 4, 3)
    for got, frame in zip(gif, frames):
        assert np.abs(got.astype(int) - frame).mean() < 40  # quantized to a palette
    assert out["gif"]["image_float"].shape == (3, 4, 3)
    np.testing.assert_array_equal(out["gif"]["natural"], gif[0])


def test_encode_png_round_trips_and_decoded_images_feed_compiled_ops():
    with tf.Graph().as_default():
        image = tf.constant(RGBA)
        png = tf.image.encode_png(image, compression=9)
        back = tf.image.decode_png(png, channels=4)
        mean = tf.reduce_mean(tf.cast(back, tf.float32), axis=[0, 1])
        gray16 = tf.image.decode_png(tf.image.encode_png(tf.constant(GRAY16[..., None])),
                                     dtype=tf.uint16)  # fmt: skip
        assert back.shape.as_list() == [None, None, 4]
        with tf.Session() as sess:
            data, got, got_mean, got16 = sess.run([png, back, mean, gray16])
    assert data.startswith(b"\x89PNG")
    np.testing.assert_array_equal(got, RGBA)
    np.testing.assert_allclose(got_mean, RGBA.reshape(-1, 4).mean(0), rtol=1e-6)
    np.testing.assert_array_equal(got16[..., 0], GRAY16)


def test_image_codec_errors():
    with tf.Graph().as_default():
        x = tf.placeholder(tf.string, [])
        with pytest.raises(ValueError, match="channels must be 0, 1 or 3, got 4"):
            tf.image.decode_jpeg(x, channels=4)
        with pytest.raises(ValueError, match="`channels` must be 0, 1, 3 or 4 but got 2"):
            tf.image.decode_png(x, channels=2)
        with pytest.raises(ValueError, match="Shape must be rank 0 but is rank 1"):
            tf.image.decode_png(tf.constant(["a", "b"]))
        with pytest.raises(TypeError, match="not in the list of allowed values: uint8, uint16"):
            tf.image.decode_png(x, dtype=tf.float32)
        with pytest.raises(ValueError, match="image must have 1, 2, 3, or 4 channels, got 5"):
            tf.image.encode_png(tf.zeros([2, 2, 5], tf.uint8))
        with pytest.raises(NotImplementedError, match="ratio=1"):
            tf.image.decode_jpeg(x, ratio=2)
        decode = tf.image.decode_image(x)
        with tf.Session() as sess:
            with pytest.raises(
                tf.errors.InvalidArgumentError,
                match="Unknown image file format. One of JPEG, PNG, GIF, BMP",
            ):
                sess.run(decode, {x: b"abc"})  # fmt: skip
            bmp = _file(RGBA[..., :3], "BMP")
            with pytest.raises(
                tf.errors.InvalidArgumentError,
                match="Trying to decode BMP "
                "format using a wrong op. Use `decode_bmp` or `decode_image`",
            ):
                sess.run(tf.image.decode_png(x), {x: bmp})  # fmt: skip
            with pytest.raises(tf.errors.InvalidArgumentError, match="Invalid PNG data, size 20"):
                sess.run(decode, {x: b"\x89PNG\r\n\x1a\n" + b"\0" * 12})
