"""tf.python_io (TFRecordWriter, tf_record_iterator, TFRecordOptions), TFRecord compression and
damage, tf.train.Example and its kin, and the file ops read_file, write_file, matching_files."""

import gzip
import struct
import zlib

import numpy as np
import pytest

import tfc as tf
from tfc.io.crc32c import crc32c, mask_crc32c
from tfc.io.example_pb import example_features
from tfc.io.tfrecord import RecordReader, encode_record
from tfc.reference.interp import Interpreter

RECORDS = [b"hello", b"", b"x" * 70000, bytes(range(256))]


@pytest.mark.parametrize("compression", [None, "", "ZLIB", "GZIP"])
def test_records_written_are_read_back(tmp_path, compression):
    path = str(tmp_path / "r.tfrecord")
    with tf.python_io.TFRecordWriter(path, options=compression) as writer:
        for r in RECORDS:
            writer.write(r)
        writer.write("text")  # a str is written as UTF-8
    assert list(tf.python_io.tf_record_iterator(path, options=compression)) == [*RECORDS, b"text"]
    raw = open(path, "rb").read()
    if compression == "GZIP":
        raw = gzip.decompress(raw)
    elif compression == "ZLIB":
        raw = zlib.decompress(raw)
    assert raw == b"".join(encode_record(r) for r in [*RECORDS, b"text"])


def test_options_name_the_compression_as_tf_does(tmp_path):
    opts = tf.python_io.TFRecordOptions(tf.python_io.TFRecordCompressionType.GZIP)
    assert opts.compression_type == 2
    get = tf.python_io.TFRecordOptions.get_compression_type_string
    assert get(opts) == "GZIP" and get("ZLIB") == "ZLIB" and get(None) == "" and get("") == ""
    assert get(tf.python_io.TFRecordCompressionType.NONE) == ""
    with pytest.raises(ValueError, match="Unsupported compression type: 'LZ4'"):
        tf.python_io.TFRecordOptions("LZ4")
    path = str(tmp_path / "r.gz")
    level9 = tf.python_io.TFRecordOptions("ZLIB", compression_level=9)
    with tf.python_io.TFRecordWriter(path, level9) as w:
        w.write(b"a" * 1000)
    assert open(path, "rb").read()[:2] == b"\x78\xda"  # zlib's header of level 9
    assert list(tf.python_io.tf_record_iterator(path, level9)) == [b"a" * 1000]


def _two_records(path):
    with tf.python_io.TFRecordWriter(str(path)) as w:
        w.write(b"hello")
        w.write(b"world!")
    return bytearray(open(path, "rb").read())


@pytest.mark.parametrize(
    "damage, message",
    [
        (lambda d: d.__setitem__(14, d[14] ^ 1),
         "record 0 at byte 0: corrupted record data .*: corrupted record at 12$"),
        (lambda d: d.__setitem__(2, d[2] ^ 1),
         r"record 0 at byte 0: corrupted record length .*: corrupted record at 0 \(Is this even a "
         r"TFRecord file\?\)"),
        (lambda d: d.__setitem__(23, d[23] ^ 1),
         "record 1 at byte 21: corrupted record length .*: corrupted record at 21$"),
        (lambda d: d.__delitem__(slice(-3, None)),
         "record 1 at byte 21: the file ends inside a record: truncated record at 21"),
    ],
)  # fmt: skip
def test_damaged_files_raise_tfs_data_loss_naming_file_and_record(tmp_path, damage, message):
    path = tmp_path / "bad.tfrecord"
    data = _two_records(path)
    damage(data)
    path.write_bytes(bytes(data))
    with pytest.raises(tf.errors.DataLossError, match="bad.tfrecord: " + message):
        list(tf.python_io.tf_record_iterator(str(path)))


def test_a_compressed_file_read_without_its_option_is_not_a_tfrecord(tmp_path):
    path = str(tmp_path / "r.gz")
    with tf.python_io.TFRecordWriter(path, "GZIP") as w:
        w.write(b"a")
    with pytest.raises(tf.errors.DataLossError, match=r"\(Is this even a TFRecord file\?\)"):
        list(tf.python_io.tf_record_iterator(path))
    with pytest.raises(tf.errors.DataLossError, match="cannot read it as a zlib compressed"):
        list(tf.python_io.tf_record_iterator(path, "ZLIB"))
    with pytest.raises(tf.errors.NotFoundError, match="nothing_here; No such file or directory"):
        list(tf.python_io.tf_record_iterator(str(tmp_path / "nothing_here")))


def test_a_reader_resumes_at_a_record_offset(tmp_path):
    path = tmp_path / "r.tfrecord"
    _two_records(path)
    with RecordReader(path) as reader:
        assert reader.read() == b"hello" and reader.offset == 21
    with RecordReader(path, offset=21) as reader:
        assert reader.read() == b"world!" and reader.read() is None


def test_records_are_length_and_masked_crc_framed():
    record = encode_record(b"abc")
    length = struct.pack("<Q", 3)
    assert record[:8] == length
    assert struct.unpack("<I", record[8:12])[0] == mask_crc32c(crc32c(length))
    assert record[12:15] == b"abc"
    assert struct.unpack("<I", record[15:])[0] == mask_crc32c(crc32c(b"abc"))


# -- tf.train.Example ------------------------------------------------------------------------------
def test_examples_round_trip_and_decode_straight_to_arrays():
    ex = tf.train.Example(
        features=tf.train.Features(
            feature={
                "f": tf.train.Feature(float_list=tf.train.FloatList(value=[1.5, -2.0, 1e-8])),
                "i": tf.train.Feature(int64_list=tf.train.Int64List(value=[-1, 2**40])),
                "b": tf.train.Feature(bytes_list=tf.train.BytesList(value=[b"a", b"\xff"])),
                "empty": tf.train.Feature(),
            }
        )
    )
    data = ex.SerializeToString()
    back = tf.train.Example.FromString(data)
    assert back == ex
    assert list(back.features.feature["i"].int64_list.value) == [-1, 2**40]
    assert back.features.feature["f"].WhichOneof("kind") == "float_list"
    got = example_features(data)
    np.testing.assert_array_equal(got["f"][1], np.array([1.5, -2.0, 1e-8], np.float32))
    assert got["f"][0] == "float" and got["f"][1].dtype == np.float32
    assert got["i"][0] == "int64" and got["i"][1].tolist() == [-1, 2**40]
    assert got["b"] == ("string", [b"a", b"\xff"]) and got["empty"] is None


def test_unpacked_lists_decode_as_packed_ones():
    # protobuf readers accept repeated scalars one field each, as proto2 writers write them
    floats = b"".join(b"\x0d" + struct.pack("<f", v) for v in (1.0, 2.5))
    ints = b"\x08\x05\x08\x7f"
    feature_f = b"\x12" + bytes([len(floats)]) + floats
    feature_i = b"\x1a" + bytes([len(ints)]) + ints

    def entry(key, feature):
        body = b"\x0a" + bytes([len(key)]) + key + b"\x12" + bytes([len(feature)]) + feature
        return b"\x0a" + bytes([len(body)]) + body

    features = entry(b"f", feature_f) + entry(b"i", feature_i)
    data = b"\x0a" + bytes([len(features)]) + features
    got = example_features(data)
    assert got["f"][1].tolist() == [1.0, 2.5] and got["i"][1].tolist() == [5, 127]
    parsed = tf.train.Example.FromString(data)
    assert list(parsed.features.feature["f"].float_list.value) == [1.0, 2.5]


def test_sequence_examples_hold_context_and_feature_lists():
    seq = tf.train.SequenceExample()
    seq.context.feature["len"].int64_list.value.append(2)
    steps = seq.feature_lists.feature_list["tokens"]
    steps.feature.add().bytes_list.value.append(b"hi")
    steps.feature.add().bytes_list.value.append(b"there")
    back = tf.train.SequenceExample.FromString(seq.SerializeToString())
    assert back.context.feature["len"].int64_list.value[0] == 2
    tokens = back.feature_lists.feature_list["tokens"].feature
    assert [f.bytes_list.value[0] for f in tokens] == [b"hi", b"there"]
    assert isinstance(tf.train.FeatureLists(), tf.train.FeatureLists)
    assert tf.train.FeatureList(feature=[tf.train.Feature()]).feature[0] == tf.train.Feature()


# -- file ops --------------------------------------------------------------------------------------
def test_write_file_read_file_and_matching_files(tmp_path):
    target = str(tmp_path / "deep" / "dir" / "f.txt")
    write = tf.write_file(target, tf.constant("contents\x00\xff"))
    read = tf.read_file(target)
    for name in ["b.txt", "a.txt", ".hidden.txt", "c.bin"]:
        (tmp_path / name).write_bytes(name.encode())
    found = tf.matching_files(str(tmp_path / "*.txt"))
    both = tf.matching_files([str(tmp_path / "c*"), str(tmp_path / "a*")])
    nested = tf.matching_files(str(tmp_path / "*" / "dir" / "*.txt"))
    nothing = tf.matching_files(str(tmp_path / "missing" / "*.txt"))
    length = tf.strings.length(read)
    with tf.Session() as sess:
        assert sess.run(write) is None
        assert sess.run(read) == "contents\x00\xff".encode()
        assert sess.run(length) == len("contents\x00\xff".encode())
        # files the graph reads are read when it runs, not when it is built
        (tmp_path / "deep" / "dir" / "f.txt").write_bytes(b"new")
        assert sess.run(read) == b"new"
        assert sess.run(found).tolist() == [
            str(tmp_path / n).encode() for n in [".hidden.txt", "a.txt", "b.txt"]
        ]
        assert sess.run(both).tolist() == [str(tmp_path / n).encode() for n in ["a.txt", "c.bin"]]
        assert sess.run(nested).tolist() == [target.encode()]
        assert sess.run(nothing).shape == (0,)
    assert Interpreter().run(read) == b"new"


def test_the_file_ops_are_in_tf_io_too(tmp_path):
    target = str(tmp_path / "g.txt")
    assert tf.io.read_file is tf.read_file and tf.io.write_file is tf.write_file
    assert tf.io.matching_files is tf.matching_files
    write = tf.io.write_file(target, "abc")
    with tf.Session() as sess:
        sess.run(write)
        assert sess.run(tf.io.read_file(target)) == b"abc"
        assert sess.run(tf.io.matching_files(str(tmp_path / "*"))).tolist() == [target.encode()]


def test_file_op_errors_are_tfs(tmp_path):
    missing = str(tmp_path / "nope")
    with tf.Session() as sess:
        with pytest.raises(tf.errors.NotFoundError, match="nope; No such file or directory") as e:
            sess.run(tf.read_file(missing, name="reader"))
        assert e.value.op.name == "reader"
        with pytest.raises(tf.errors.FailedPreconditionError, match="; Is a directory"):
            sess.run(tf.read_file(str(tmp_path)))
    with pytest.raises(ValueError, match="Shape must be rank 0 but is rank 1"):
        tf.read_file(["a", "b"])
