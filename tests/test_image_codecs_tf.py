"""TF comparison of the image decoders: PNG pixels in every channel layout and dtype equal
TF's (color made gray within one level of libpng's, as TF asks it), JPEG within libjpeg's
differences, GIF frames and BMP equal (skipped without tensorflow or Pillow)."""

import io

import numpy as np
import pytest

import tfc

tf = pytest.importorskip("tensorflow")
Image = pytest.importorskip("PIL.Image")

RNG = np.random.default_rng(11)


def _file(array, fmt, **kw):
    out = io.BytesIO()
    Image.fromarray(array).save(out, fmt, **kw)
    return out.getvalue()


def _both(build, data):
    with tfc.Graph().as_default():
        x = tfc.placeholder(tfc.string, [])
        with tfc.Session() as sess:
            ours = sess.run(build(tfc)(x), {x: data})
    return ours, build(tf).__call__(tf.constant(data)).numpy()


FILES = {
    "rgb": lambda: _file(RNG.integers(0, 256, (30, 40, 3), dtype=np.uint8), "PNG"),
    "rgba": lambda: _file(RNG.integers(0, 256, (30, 40, 4), dtype=np.uint8), "PNG"),
    "gray": lambda: _file(RNG.integers(0, 256, (30, 40), dtype=np.uint8), "PNG"),
    "gray16": lambda: _file(
        RNG.integers(0, 65536, (30, 40), dtype=np.uint16).astype("<u2"), "PNG"
    ),  # fmt: skip
    "bmp": lambda: _file(RNG.integers(0, 256, (30, 40, 3), dtype=np.uint8), "BMP"),
}


@pytest.mark.parametrize("name", sorted(FILES))
@pytest.mark.parametrize("channels", [0, 1, 3, 4])
def test_png_and_bmp_pixels_equal_tfs(name, channels):
    data = FILES[name]()
    for dtype in ["uint8", "uint16"]:

        def build(api, dtype=dtype):
            if name == "bmp":  # TF's decode_png refuses BMP files
                return lambda x: api.image.decode_image(x, channels=channels)
            return lambda x: api.image.decode_png(x, channels=channels, dtype=getattr(api, dtype))

        if name == "bmp" and (dtype == "uint16" or channels == 1):  # refused, as by TF
            continue
        ours, theirs = _both(build, data)
        assert ours.shape == theirs.shape and ours.dtype == theirs.dtype
        if channels == 1 and name in ("rgb", "rgba", "bmp"):
            # libpng rounds its fixed-point gray through gamma tables at times: within one level
            diff = np.abs(ours.astype(int) - theirs.astype(int)) // (
                257 if dtype == "uint16" else 1
            )
            assert diff.max() <= 1 and (diff == 0).mean() > 0.98
        else:
            np.testing.assert_array_equal(ours, theirs)


def test_jpeg_and_gif_equal_tfs_within_libjpegs_differences():
    smooth = np.add.outer(np.arange(32) * 3, np.arange(48) * 2)[..., None] + [0, 30, 60]
    data = _file(smooth.astype(np.uint8), "JPEG", quality=90)
    for channels in (0, 1, 3):
        ours, theirs = _both(lambda api, c=channels: lambda x: api.image.decode_jpeg(x, c), data)
        assert ours.shape == theirs.shape
        assert np.abs(ours.astype(int) - theirs).max() <= 3
    frames = [Image.fromarray(RNG.integers(0, 256, (5, 6, 3), dtype=np.uint8)).quantize(64)
              for _ in range(3)]  # fmt: skip
    gif = io.BytesIO()
    frames[0].save(gif, "GIF", save_all=True, append_images=frames[1:])
    ours, theirs = _both(lambda api: lambda x: api.image.decode_image(x), gif.getvalue())
    np.testing.assert_array_equal(ours, theirs)
