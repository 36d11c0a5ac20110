"""Reading TensorFlow V2 checkpoints without TensorFlow: CRC-32C, the table, entries, refusals.

The files come from tests/tensor_bundle_writer.py, written from the format's description; the
files TensorFlow itself writes are read in tests/test_tf_checkpoint.py.
"""

import os
import random
import struct

import numpy as np
import pytest
import tensor_bundle_writer as w

import tfc as tf
from tfc.io.checkpoint import (
    CheckpointReader,
    CorruptCheckpointError,
    TensorBundleReader,
    find_checkpoint,
    open_checkpoint,
    write_safetensors,
)
from tfc.io.crc32c import crc32c, crc32c_numpy, mask_crc32c, unmask_crc32c
from tfc.io.protowire import Field, WireFormatError, decode_message
from tfc.io.sstable import TableFormatError, read_table

TENSORS = {
    "dense/kernel": np.arange(12, dtype=np.float32).reshape(3, 4) / 8,
    "dense/bias": np.array([0.5, -1.5, 2.0, 0.0], np.float32),
    "global_step": np.array(7, np.int64),
    "scale": np.array([1.0, 2.5], np.float64),
    "flags": np.array([True, False, True]),
    "counts": np.array([[1, -2], [3, 4]], np.int32),
    "pixels": np.arange(6, dtype=np.uint8).reshape(2, 3),
    "half": np.array([0.5, -2.0, 65504.0], np.float16),
    "small": np.array([-128, 127], np.int8),
    "wave": np.array([1 + 2j, -0.5j], np.complex64),
    "empty": np.zeros((0, 3), np.float32),
}


def _bundle(tmp_path, tensors=None, name="model.ckpt", **options) -> str:
    prefix = str(tmp_path / name)
    w.write_bundle(prefix, TENSORS if tensors is None else tensors, **options)
    return prefix


# -- CRC-32C ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("crc32c", [crc32c, crc32c_numpy], ids=["default", "numpy"])
def test_crc32c_known_values_and_the_vectorized_path(crc32c):
    assert crc32c(b"123456789") == 0xE3069283  # the CRC catalogue's check value
    assert crc32c(bytes(32)) == 0x8A9136AA  # RFC 3720 B.4
    assert crc32c(b"\xff" * 32) == 0x62A8AB43
    assert crc32c(bytes(range(32))) == 0x46DD794E
    rng = np.random.default_rng(1)
    for n in (0, 1, 16383, 16384, 40_000, 4096 * 9 + 13):  # both sides of the serial cutoff
        data = rng.integers(0, 256, n, dtype=np.uint8).tobytes()
        assert crc32c(data) == w.crc32c(data), n
        assert crc32c(data[n // 3 :], crc32c(data[: n // 3])) == w.crc32c(data), n
        assert crc32c(np.frombuffer(data, np.uint8)) == w.crc32c(data)


def test_crc_masking_is_leveldbs():
    for crc in (0, 1, 0xE3069283, 0xFFFFFFFF):
        assert unmask_crc32c(mask_crc32c(crc)) == crc
    assert mask_crc32c(crc32c(b"123456789")) == w.masked_crc32c(b"123456789")
    assert mask_crc32c(0) == 0xA282EAD8


# -- protocol-buffer decoding ----------------------------------------------------------------------
_SCHEMA = {1: Field("n", "int32"), 2: Field("xs", "int64", repeated=True),
           3: Field("s", "string"), 4: Field("c", "fixed32")}  # fmt: skip


def test_protowire_decodes_fields_packed_repeated_negative_and_unknown():
    packed = w.field_bytes(2, w.varint(5) + w.varint(300))
    msg = w.field_varint(1, -3) + w.field_varint(2, 1) + packed + w.field_bytes(3, b"hi")
    msg += w.field_varint(9, 12) + w.field_fixed32(4, 0xDEADBEEF) + w.field_varint(1, 4)
    assert decode_message(msg, _SCHEMA) == {"n": 4, "xs": [1, 5, 300], "s": "hi", "c": 0xDEADBEEF}
    assert decode_message(w.field_varint(1, -3), _SCHEMA)["n"] == -3
    assert decode_message(b"", _SCHEMA) == {"xs": []}


@pytest.mark.parametrize(
    "data, message",
    [
        (b"\x08", "field 1 at byte 1 runs past the end"),
        (b"\x08" + b"\xff" * 10 + b"\x01", "longer than 10 bytes"),
        (b"\x1a\x05ab", "says 5 bytes, 2 remain"),
        (b"\x0b", "has wire type 3"),
        (b"\x00\x01", "field number 0"),
        (b"\x0a\x01a", r"field 'n' \(1\) at byte 0 has wire type 2, expected 0"),
        (b"\x1a\x01\xff", "not valid UTF-8"),
        (w.field_varint(1, 2**40), "does not fit int32"),
        (b"\x25\x01\x02", "runs past the end"),
    ],
)
def test_protowire_refuses_malformed_messages(data, message):
    with pytest.raises(WireFormatError, match=message):
        decode_message(data, _SCHEMA)


# -- the table -------------------------------------------------------------------------------------
def _entries(n: int) -> list[tuple[bytes, bytes]]:
    return [(f"layer_{i:04d}/weights".encode(), bytes([i % 256]) * (i % 7)) for i in range(n)]


@pytest.mark.parametrize("block_size, restart_interval", [(4096, 16), (64, 1), (200, 3)])
def test_table_round_trip_across_blocks_and_restart_intervals(block_size, restart_interval):
    entries = _entries(300)
    data = w.table(entries, block_size=block_size, restart_interval=restart_interval)
    assert read_table(data) == entries
    assert read_table(w.table([])) == []


def _flip(data: bytes, at: int) -> bytes:
    return data[:at] + bytes([data[at] ^ 0x40]) + data[at + 1 :]


def _fix_first_block_crc(data: bytes, size: int) -> bytes:
    """Re-seal data block 0 (at offset 0, `size` bytes) after editing it."""
    trailer = struct.pack("<I", w.masked_crc32c(data[: size + 1]))
    return data[: size + 1] + trailer + data[size + 5 :]


def _one_block(entries, restart_interval=16) -> tuple[bytes, int]:
    contents = w.block(entries, restart_interval)
    return w.table(entries, restart_interval=restart_interval), len(contents)


def test_table_refusals():
    good = w.table(_entries(40), block_size=128)
    cases = {
        "truncated": (good[:47], "is truncated: 47 bytes, too short for the 48-byte footer"),
        "magic": (good[:-1] + b"\x00", "has magic number 0x00477524"),
        "tail cut": (good[:-100] + good[-48:], "ends past byte"),
        "checksum": (_flip(good, 10), "data block 0 at offset 0 fails its checksum"),
        "snappy": (
            w.table(_entries(3), compression=1),
            "is Snappy-compressed; tfc reads only uncompressed tables",
        ),
        "compression 9": (w.table(_entries(3), compression=9), "unknown compression type 9"),
        "unsorted": (
            w.table(list(reversed(_entries(3)))),
            r"key b'layer_0001/weights' at byte \d+ does not sort after b'layer_0002/weights'",
        ),
        "duplicate": (w.table(_entries(2) * 2), "does not sort after"),
    }
    one, size = _one_block(_entries(3))
    # restart count claims more restarts than the block holds
    cases["restarts"] = (
        _fix_first_block_crc(one[: size - 4] + struct.pack("<I", 999) + one[size:], size),
        "says it has 999 restart points",
    )
    # an entry that shares more key bytes than the previous key has: the first entry's shared=5
    cases["shared"] = (
        _fix_first_block_crc(b"\x05" + one[1:], size),
        "entry at byte 0 shares 5 key bytes with a previous key of 0 bytes",
    )
    # a value length running into the restart array
    cases["value length"] = (
        _fix_first_block_crc(one[:2] + b"\x7f" + one[3:], size),
        "value bytes, .* remain before the restart array",
    )
    # a restart offset that is not an entry start
    restart_at = size - 8
    cases["restart offset"] = (
        _fix_first_block_crc(one[:restart_at] + struct.pack("<I", 3) + one[restart_at + 4 :], size),
        "restart offset 3 is not the start of an entry",
    )
    for case, (data, message) in cases.items():
        with pytest.raises(TableFormatError, match=message):
            read_table(data)
            pytest.fail(f"{case}: accepted")


def test_no_damage_to_a_table_crashes_the_reader():
    """Every truncation and many single-byte changes: read, or refuse with TableFormatError."""
    good = w.table(_entries(30), block_size=100, restart_interval=2)
    rng = random.Random(5)
    damaged = [good[:n] for n in range(len(good))]
    for _ in range(1500):
        at = rng.randrange(len(good))
        damaged.append(good[:at] + bytes([rng.randrange(256)]) + good[at + 1 :])
    refused = 0
    for data in damaged:
        try:
            read_table(data)
        except TableFormatError:
            refused += 1
    assert refused > len(good)  # all truncations, and most changes (footer padding is unused)


# -- whole checkpoints -----------------------------------------------------------------------------
@pytest.mark.parametrize(
    "options",
    [{}, {"num_shards": 3}, {"big_endian": True}, {"block_size": 64, "restart_interval": 1}],
    ids=["one-shard", "three-shards", "big-endian", "small-blocks"],
)
def test_bundle_round_trip(tmp_path, options):
    prefix = _bundle(tmp_path, **options)
    with TensorBundleReader(prefix) as reader:
        assert reader.get_variable_to_shape_map() == {n: list(a.shape) for n, a in TENSORS.items()}
        assert reader.num_shards == options.get("num_shards", 1)
        for name, want in TENSORS.items():
            got = reader.get_tensor(name)
            assert got.dtype == want.dtype and got.dtype.isnative and got.shape == want.shape
            np.testing.assert_array_equal(got, want)
        dtypes = reader.get_variable_to_dtype_map()
        assert dtypes["dense/kernel"] is tf.float32 and dtypes["flags"] is tf.bool
        assert reader.tensors["half"].tf_dtype_name == "half"
        with pytest.raises(tf.errors.NotFoundError, match="Key nothing not found in checkpoint"):
            reader.get_tensor("nothing")
    with pytest.raises(ValueError, match="is closed"):
        reader.get_tensor("scale")


def _rewrite_entry(prefix: str, name: str, entry: bytes | None = None, header: bytes | None = None):
    """Rewrite the index with tensor `name`'s entry (or the header) replaced."""
    with open(prefix + ".index", "rb") as f:
        records = read_table(f.read())
    out = []
    for key, value in records:
        if key == b"" and header is not None:
            value = header
        elif key == name.encode() and entry is not None:
            value = entry
        out.append((key, value))
    with open(prefix + ".index", "wb") as f:
        f.write(w.table(out))


_BIAS = TENSORS["dense/bias"]


def _bias_entry(**fields) -> bytes:
    args = {"dtype": 1, "shape": (4,), "size": 16, "crc": w.masked_crc32c(_BIAS.tobytes())}
    args.update(fields)
    return w.entry_proto(**args)


HEADER_AND_ENTRY_DAMAGE = {
    "no shards": ({"header": w.header_proto(num_shards=0)}, "has a bundle header with 0 shards"),
    "byte order": ({"header": w.header_proto(endianness=2)}, "unknown byte order 2"),
    "newer format": (
        {"header": w.header_proto(producer=2, min_consumer=2)},
        "needs a newer reader: format version 2 asks for readers of version >= 2",
    ),
    "bad consumer": ({"header": w.header_proto(bad_consumers=[1])}, "needs a newer reader"),
    "header bytes": ({"header": b"\x08"}, "has a corrupt bundle header: field 1"),
    "dtype": (
        {"entry": _bias_entry(dtype=99)},
        "gives tensor 'dense/bias' unknown dtype 99",
    ),
    "size": (
        {"entry": _bias_entry(size=12)},
        r"gives tensor 'dense/bias' \(float \[4\]\) 12 bytes; its shape and dtype need 16",
    ),
    "shard": (
        {"entry": _bias_entry(shard_id=1)},
        "puts tensor 'dense/bias' in shard 1; the header says 1 shards",
    ),
    "negative dim": (
        {"entry": _bias_entry(shape=(-1,))},
        r"shape \[-1\] with an unknown dimension",
    ),
    "negative offset": ({"entry": _bias_entry(offset=-8)}, "byte range offset -8, size 16"),
    "entry bytes": ({"entry": b"\x12\x09"}, "has a corrupt entry for tensor 'dense/bias'"),
}


@pytest.mark.parametrize("case", list(HEADER_AND_ENTRY_DAMAGE))
def test_damaged_headers_and_entries_are_refused_naming_the_file(tmp_path, case):
    edit, message = HEADER_AND_ENTRY_DAMAGE[case]
    prefix = _bundle(tmp_path)
    _rewrite_entry(prefix, "dense/bias", **edit)
    with pytest.raises(CorruptCheckpointError, match=message) as raised:
        TensorBundleReader(prefix)
    assert str(raised.value).startswith(f"checkpoint {prefix}.index ")
    assert isinstance(raised.value, tf.errors.DataLossError)


def test_damaged_data_files_are_refused(tmp_path):
    prefix = _bundle(tmp_path, num_shards=2)
    data0 = prefix + ".data-00000-of-00002"
    raw = bytearray(open(data0, "rb").read())
    # 'counts' is the first tensor of shard 0 (sorted names, dealt round robin)
    raw[3] ^= 1
    open(data0, "wb").write(raw)
    with TensorBundleReader(prefix) as reader:
        np.testing.assert_array_equal(reader.get_tensor("dense/bias"), _BIAS)  # shard 1
        with pytest.raises(CorruptCheckpointError, match="does not match its checksum") as e:
            reader.get_tensor("counts")
        assert str(e.value).startswith(f"checkpoint {data0} is corrupt: tensor 'counts' (bytes 0")

    open(data0, "wb").write(raw[:-1])
    with pytest.raises(CorruptCheckpointError, match="is truncated: tensor '.*' needs bytes"):
        TensorBundleReader(prefix)
    os.unlink(data0)
    with pytest.raises(tf.errors.NotFoundError, match=f"data file {data0} does not exist"):
        TensorBundleReader(prefix)


def test_bool_bytes_other_than_0_and_1_are_refused(tmp_path):
    prefix = str(tmp_path / "b")
    w.write_bundle(prefix, {"flags": np.array([1, 2], np.uint8)})
    raw = np.array([1, 2], np.uint8).tobytes()
    entry = w.entry_proto(10, (2,), size=2, crc=w.masked_crc32c(raw))
    _rewrite_entry(prefix, "flags", entry=entry)
    with TensorBundleReader(prefix) as reader:
        with pytest.raises(CorruptCheckpointError, match="holds byte value 2"):
            reader.get_tensor("flags")


def test_types_tfc_does_not_read_are_listed_and_refused_when_read(tmp_path):
    prefix = str(tmp_path / "s")
    w.write_bundle(prefix, {"a": np.ones(2, np.float32), "b": np.ones(2, np.float32),
                            "c": np.ones(2, np.float32)})  # fmt: skip
    _rewrite_entry(prefix, "a", entry=w.entry_proto(7, (), size=9))  # a string scalar
    _rewrite_entry(prefix, "b", entry=w.entry_proto(14, (2,), size=4))  # bfloat16
    _rewrite_entry(prefix, "c", entry=w.entry_proto(1, (10, 2), slices=2))  # partitioned
    with TensorBundleReader(prefix) as reader:
        assert reader.get_variable_to_shape_map() == {"a": [], "b": [2], "c": [10, 2]}
        assert reader.get_variable_to_dtype_map() == {"a": "string", "b": "bfloat16",
                                                       "c": tf.float32}  # fmt: skip
        with pytest.raises(tf.errors.UnimplementedError, match="has dtype string, which tfc"):
            reader.get_tensor("a")
        with pytest.raises(tf.errors.UnimplementedError, match="has dtype bfloat16"):
            reader.get_tensor("b")
        with pytest.raises(tf.errors.UnimplementedError, match="saved in 2 slices"):
            reader.get_tensor("c")


def test_no_damage_to_an_index_file_crashes_the_reader(tmp_path):
    prefix = _bundle(tmp_path, block_size=128)
    good = open(prefix + ".index", "rb").read()
    rng = random.Random(7)
    outcomes = set()
    for trial in range(400):
        at = rng.randrange(len(good))
        if trial % 4 == 0:
            data = good[:at]
        else:
            data = good[:at] + bytes([rng.randrange(256)]) + good[at + 1 :]
        open(prefix + ".index", "wb").write(data)
        try:
            TensorBundleReader(prefix).close()
            outcomes.add("read")
        except CorruptCheckpointError as e:
            assert str(e).startswith(f"checkpoint {prefix}.index ")
            outcomes.add("refused")
    assert "refused" in outcomes


# -- the checkpoint functions and Saver ------------------------------------------------------------
def test_paths_that_name_a_tensorflow_checkpoint(tmp_path):
    prefix = _bundle(tmp_path)
    for path in (prefix, prefix + ".index", prefix + ".data-00000-of-00001"):
        assert find_checkpoint(path) == ("tensorflow", prefix)
        with open_checkpoint(path) as reader:
            assert isinstance(reader, TensorBundleReader)
    other = str(tmp_path / "other")
    assert find_checkpoint(other) == ("safetensors", other + ".safetensors")
    # tfc's own file wins when both exist under one prefix
    write_safetensors(prefix + ".safetensors", {"x": np.ones(1)})
    with open_checkpoint(prefix) as reader:
        assert isinstance(reader, CheckpointReader)


def test_checkpoint_functions_read_tensorflow_checkpoints(tmp_path):
    prefix = _bundle(tmp_path)
    (tmp_path / "checkpoint").write_text('model_checkpoint_path: "model.ckpt"\n')
    assert tf.train.latest_checkpoint(str(tmp_path)) == prefix
    assert tf.train.checkpoint_exists(prefix)
    assert tf.train.get_checkpoint_mtimes([prefix]) == [os.path.getmtime(prefix + ".index")]
    assert tf.train.list_variables(str(tmp_path)) == sorted(
        (n, list(a.shape)) for n, a in TENSORS.items()
    )
    np.testing.assert_array_equal(tf.train.load_variable(prefix, "dense/bias:0"), _BIAS)
    reader = tf.train.NewCheckpointReader(prefix)
    assert reader.has_tensor("global_step") and reader.get_tensor("global_step") == 7
    reader.close()
    tf.train.remove_checkpoint(prefix)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["checkpoint"]


def test_saver_restores_a_tensorflow_checkpoint_into_tfc_variables(tmp_path):
    prefix = _bundle(tmp_path, num_shards=2)
    kernel = tf.get_variable("dense/kernel", [3, 4])
    bias = tf.get_variable("dense/bias", [4])
    step = tf.Variable(0, dtype=tf.int64, trainable=False, name="global_step")
    x = tf.placeholder(tf.float32, [None, 3])
    y = tf.matmul(x, kernel) + bias
    saver = tf.train.Saver([kernel, bias, step])
    feed = np.array([[1.0, 2.0, -1.0]], np.float32)
    with tf.Session() as sess:
        saver.restore(sess, prefix)
        got_y, got_step = sess.run([y, step], {x: feed})
    np.testing.assert_allclose(got_y, feed @ TENSORS["dense/kernel"] + _BIAS, rtol=1e-6)
    assert got_step == 7

    wrong = tf.Variable(np.zeros(4, np.float64), name="dense/bias_f64")
    with tf.Session() as sess:
        with pytest.raises(tf.errors.InvalidArgumentError, match="expected dtype double does "
                           "not equal original dtype float"):  # fmt: skip
            tf.train.Saver({"dense/bias": wrong}).restore(sess, prefix)
        with pytest.raises(tf.errors.InvalidArgumentError, match=r"rhs shape= \[3, 4\]"):
            tf.train.Saver({"dense/kernel": bias}).restore(sess, prefix)
