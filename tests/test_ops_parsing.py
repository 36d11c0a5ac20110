"""Parsing ops (tfc/ops/parsing.py) against independent expectations: decode_csv, decode_raw,
decode_compressed, serialize/parse_tensor, parse_example; compiled Session (Python stages)
and the reference interpreter agree; TF's errors, naming the node."""

import gzip
import struct
import zlib

import numpy as np
import pytest
from opcheck import CaseBatch

import tfc as tf
from tfc.compiler import PIPELINE, compile_program
from tfc.ir.program import FeedSpec, make_program_graph
from tfc.ops.parsing import csv_fields, parse_float, parse_int
from tfc.passes.native import NativeBuildError
from tfc.reference.interp import Interpreter


def strs(*values) -> np.ndarray:
    out = np.empty(len(values), dtype=object)
    out[:] = [v.encode() if isinstance(v, str) else v for v in values]
    return out


def example(**features) -> bytes:
    """A serialized tf.train.Example: floats, ints or bytes per feature."""
    feature = {}
    for key, values in features.items():
        if isinstance(values[0], float):
            feature[key] = tf.train.Feature(float_list=tf.train.FloatList(value=values))
        elif isinstance(values[0], int):
            feature[key] = tf.train.Feature(int64_list=tf.train.Int64List(value=values))
        else:
            feature[key] = tf.train.Feature(bytes_list=tf.train.BytesList(value=values))
    return tf.train.Example(features=tf.train.Features(feature=feature)).SerializeToString()


# -- the fields and numbers, as TF splits and parses them ------------------------------------------
@pytest.mark.parametrize(
    "record, quote, select, fields",
    [
        (b"1,2.5,a", True, None, [b"1", b"2.5", b"a"]),
        (b"", True, None, []),  # an empty record has no field at all
        (b"a,", True, None, [b"a", b""]),  # a trailing delimiter: an empty last field
        (b",", True, None, [b"", b""]),
        (b'1,"a,b",3', True, None, [b"1", b"a,b", b"3"]),
        (b'"a""b",c', True, None, [b'a"b', b"c"]),
        (b'""', True, None, [b""]),
        (b'1,"a,b",3', False, None, [b"1", b'"a', b'b"', b"3"]),
        (b"1,\r\n2", True, None, [b"1", b"2"]),  # line breaks between fields are skipped
        (b"1,2,3,4", True, [1, 3], [b"2", b"4"]),
        (b"1,2,3", True, [1, 3], [b"2"]),
        (b"1,2,", True, [0, 2], [b"1", b""]),
    ],
)
def test_csv_fields_split_as_tf(record, quote, select, fields):
    assert csv_fields(record, ord(","), quote, select) == fields


@pytest.mark.parametrize(
    "record, message",
    [
        (b'1,"a"b,3', "Quote inside a string has to be escaped by another quote"),
        (b'"ab', "Quoted field has to end with quote followed by delim or end"),
        (b'1,a"b', "Unquoted fields cannot have quotes/CRLFs inside"),
        (b"1\n2", "Unquoted fields cannot have quotes/CRLFs inside"),
    ],
)
def test_csv_field_errors(record, message):
    with pytest.raises(tf.errors.InvalidArgumentError, match=message):
        csv_fields(record, ord(","), True)


def test_numbers_parse_as_absl_does():
    for text, value in [
        (b"+5", 5), (b" 7 ", 7), (b"-0", 0), (b"007", 7), (b"-2147483648", -(2**31)),
    ]:  # fmt: skip
        assert parse_int(text, tf.int32) == value
    for text in [b"2147483648", b"1e3", b"0x10", b"- 5", b"", b"1_0", "٣".encode()]:
        assert parse_int(text, tf.int32) is None, text
    assert parse_int(b"9223372036854775807", tf.int64) == 2**63 - 1
    assert parse_int(b"9223372036854775808", tf.int64) is None
    f32, f64 = tf.float32, tf.float64
    assert parse_float(b"1e40", f32) == np.inf and parse_float(b"-1e40", f32) == -np.inf
    assert parse_float(b"1e40", f64) == 1e40
    assert parse_float(b"1e-50", f32) == 0.0 and parse_float(b"1e-40", f32) == np.float32(1e-40)
    assert parse_float(b"0x10", f32) == 16.0 and parse_float(b" +1.5 ", f64) == 1.5
    assert parse_float(b".5", f32) == 0.5 and parse_float(b"5.", f32) == 5.0
    assert parse_float(b"Infinity", f32) == np.inf and np.isnan(parse_float(b"-NaN", f32))
    assert np.isnan(parse_float(b"nan(123)", f64))
    assert parse_float(b"3.4028236e38", f32) == np.inf
    assert parse_float(b"3.4028235e38", f32) == np.float32(3.4028235e38)
    for text in [b"1.5e", b"+-1", b"1_0", b"  ", b"1d", b"1.5f", b""]:
        assert parse_float(text, f32) is None, text
    # a decimal whose nearest double lies halfway between two float32s rounds once, from the
    # decimal: 1 + 2^-24 is such a double; a hair above it must round up, not to even (1.0)
    halfway = "1.000000059604644775390625"
    assert parse_float(halfway.encode(), f32) == 1.0  # a true tie: to even
    assert parse_float((halfway + "0000000000000000000001").encode(), f32) == float(
        np.nextafter(np.float32(1), np.float32(2))
    )


# -- the ops, in one batch -------------------------------------------------------------------------
def _raw(fmt: str, *values) -> bytes:
    return struct.pack(fmt, *values)


def build_parsing() -> CaseBatch:
    b = CaseBatch()
    with b.graph.as_default():
        records = b.feed(strs("1,2.5,a,7", "3,,b,", ' -4 ,1e3,"c,d",9'), [None])
        cols = tf.decode_csv(records, [[0], [1.5], ["x"], [np.int64(-1)]])
        b.add("decode_csv-int32", cols[0], np.array([1, 3, -4], np.int32))
        b.add("decode_csv-float", cols[1], np.array([2.5, 1.5, 1000], np.float32))
        b.add("decode_csv-string", cols[2], strs("a", "b", "c,d"))
        b.add("decode_csv-int64", cols[3], np.array([7, -1, 9], np.int64))
        grid = tf.constant([["1;NA", "2;3"], ["NA;5", "6;7"]])
        a, c = tf.decode_csv(grid, [[0.0], tf.constant([9], tf.float64)], field_delim=";",
                             na_value="NA")  # fmt: skip
        b.add("decode_csv-2d-na", a, np.array([[1, 2], [0, 6]], np.float32))
        b.add("decode_csv-2d-double", c, np.array([[9, 3], [5, 7]], np.float64))
        picked = tf.decode_csv(["10,11,12,13"], [[0], ["s"]], select_cols=[1, 3])
        b.add("decode_csv-select", picked[0], np.array([11], np.int32))
        b.add("decode_csv-select-string", picked[1], strs("13"))
        nq = tf.decode_csv(['"x,y'], [["a"], ["b"]], use_quote_delim=False)
        b.add("decode_csv-no-quotes", nq[0], strs('"x'))
        b.add("decode_csv-to-native", tf.reduce_sum(cols[1] * 2.0), np.float32(2 * 1004))
        raw = strs(_raw("<3i", 1, -2, 300), _raw("<3i", 4, 5, 2**31 - 1))
        b.add(
            "decode_raw-int32",
            tf.decode_raw(b.feed(raw, [None]), tf.int32),
            np.array([[1, -2, 300], [4, 5, 2**31 - 1]], np.int32),
        )
        b.add(
            "decode_raw-float64-big-endian",
            tf.decode_raw(strs(_raw(">2d", 1.5, -0.25)), tf.float64, little_endian=False),
            np.array([[1.5, -0.25]]),
        )
        b.add(
            "decode_raw-scalar",
            tf.decode_raw(tf.constant(_raw("<f", 2.0)), tf.float32),
            np.array([2.0], np.float32),
        )
        b.add(
            "decode_raw-fixed-length",
            tf.decode_raw(strs(_raw("<2i", 1, 2), _raw("<i", 3), _raw("<3i", 4, 5, 6)),
                          tf.int32, fixed_length=8),
            np.array([[1, 2], [3, 0], [4, 5]], np.int32),
        )  # fmt: skip
        b.add("decode_raw-bool", tf.decode_raw(strs(b"\x00\x01\x02"), tf.bool),
              np.array([[False, True, True]]))  # fmt: skip
        # the dtypes beyond the core ones (DecodeRaw declares them)
        b.add("decode_raw-int16", tf.decode_raw(strs(_raw("<2h", -2, 300)), tf.int16),
              np.array([[-2, 300]], np.int16))  # fmt: skip
        b.add("decode_raw-uint8", tf.decode_raw(strs(b"\x00\xff"), tf.uint8),
              np.array([[0, 255]], np.uint8))  # fmt: skip
        b.add("decode_raw-float16", tf.decode_raw(strs(_raw("<e", 1.5)), tf.float16),
              np.array([[1.5]], np.float16))  # fmt: skip
        text = [b"hello " * 20, b""]
        b.add("decode_compressed-none", tf.decode_compressed(strs(*text)), strs(*text))
        b.add(
            "decode_compressed-zlib",
            tf.decode_compressed(strs(*[zlib.compress(t) for t in text]), "ZLIB"),
            strs(*text),
        )
        b.add(
            "decode_compressed-gzip",
            tf.decode_compressed(strs(*[gzip.compress(t) for t in text]), "GZIP"),
            strs(*text),
        )
        matrix = np.arange(6, dtype=np.float64).reshape(2, 3) / 7
        roundtrip = tf.parse_tensor(tf.serialize_tensor(matrix), tf.float64)
        b.add("serialize_tensor-roundtrip", roundtrip, matrix)
        b.add(
            "serialize_tensor-strings",
            tf.parse_tensor(tf.serialize_tensor(strs("a", "", "bc")), tf.string),
            strs("a", "", "bc"),
        )
        b.add(
            "serialize_tensor-scalar",
            tf.parse_tensor(tf.serialize_tensor(np.int64(-3)), tf.int64),
            np.int64(-3),
        )
        serialized = strs(
            example(x=[1.0, 2.0], y=[3], s=[b"a"], seq=[1.0, 2.0, 3.0, 4.0]),
            example(x=[4.0, -5.5], seq=[7.0, 8.0]),
            example(x=[0.25, 0.5], y=[-9], s=[b""]),
        )
        spec = {
            "x": tf.FixedLenFeature([2], tf.float32),
            "y": tf.FixedLenFeature([], tf.int64, default_value=7),
            "s": tf.FixedLenFeature([], tf.string, default_value="d"),
            "seq": tf.FixedLenSequenceFeature([2], tf.float32, allow_missing=True,
                                              default_value=-1.0),
        }  # fmt: skip
        parsed = tf.parse_example(b.feed(serialized, [None]), spec)
        b.add("parse_example-float", parsed["x"],
              np.array([[1, 2], [4, -5.5], [0.25, 0.5]], np.float32))  # fmt: skip
        b.add("parse_example-int64-default", parsed["y"], np.array([3, 7, -9]))
        b.add("parse_example-string-default", parsed["s"], strs("a", "d", ""))
        b.add(
            "parse_example-sequence-padded",
            parsed["seq"],
            np.array([[[1, 2], [3, 4]], [[7, 8], [-1, -1]], [[-1, -1], [-1, -1]]], np.float32),
        )
        single = tf.parse_single_example(
            tf.constant(example(m=[1, 2, 3, 4, 5, 6])), {"m": tf.FixedLenFeature([2, 3], tf.int64)}
        )
        b.add("parse_single_example-2d", single["m"], np.arange(1, 7).reshape(2, 3))
        b.add("parse_example-to-native", tf.reduce_sum(parsed["x"]), np.float32(2.25))
    return b


PARSING = build_parsing()


@pytest.mark.parametrize("case", PARSING.ids())
def test_parsing_ops(case):
    PARSING.check(case)


def test_parse_example_output_structure_and_static_shapes():
    spec = {
        "b": tf.FixedLenFeature([3], tf.float32),
        "a": tf.FixedLenFeature([], tf.string, default_value=""),
        "c": tf.FixedLenSequenceFeature([], tf.int64, allow_missing=True),
    }
    parsed = tf.parse_example(tf.placeholder(tf.string, [None]), spec)
    assert sorted(parsed) == ["a", "b", "c"]
    assert parsed["b"].shape.as_list() == [None, 3] and parsed["b"].dtype == tf.float32
    assert parsed["a"].shape.as_list() == [None] and parsed["a"].dtype == tf.string
    assert parsed["c"].shape.as_list() == [None, None]
    assert parsed["b"].op.type == "ParseExampleV2" and parsed["b"].op.name == (
        "ParseExample/ParseExampleV2"
    )
    one = tf.parse_single_example(tf.placeholder(tf.string, []), spec)
    assert one["b"].shape.as_list() == [3] and one["a"].shape.as_list() == []


# -- errors ----------------------------------------------------------------------------------------
def _run_both(build, error, message):
    with tf.Graph().as_default():
        out = build()
        with tf.Session() as sess:
            with pytest.raises(error, match=message) as e:
                sess.run(out)
        assert e.value.op is not None and e.value.op.type in (
            "DecodeCSV", "DecodeRaw", "ParseExampleV2", "ParseTensor", "DecodeCompressed",
        )  # fmt: skip
        with pytest.raises(error, match=message):
            Interpreter().run(out)


INVALID = tf.errors.InvalidArgumentError


@pytest.mark.parametrize(
    "build, message",
    [
        (lambda: tf.decode_csv(["1,2"], [[0], [1.0], ["x"]]),
         "Expect 3 fields but have 2 in record 0"),
        (lambda: tf.decode_csv(["1", "1,2,3,4"], [[0]]), "Expect 1 fields but have 4 in record 1"),
        (lambda: tf.decode_csv([""], [[0]]), "Expect 1 fields but have 0 in record 0"),
        (lambda: tf.decode_csv(["a,2,3"], [[0], [1.0], ["x"]]),
         "Field 0 in record 0 is not a valid int32: a"),
        (lambda: tf.decode_csv(["1,b"], [[0], [1.0]]),
         "Field 1 in record 0 is not a valid float: b"),
        (lambda: tf.decode_csv(["1,b"], [[0], [np.float64(1)]]),
         "Field 1 in record 0 is not a valid double: b"),
        (lambda: tf.decode_csv(["1,9223372036854775808"], [[0], [np.int64(1)]]),
         "Field 1 in record 0 is not a valid int64: 9223372036854775808"),
        (lambda: tf.decode_csv(["1,,3"], [[0], [], ["x"]]),
         "Field 1 is required but missing in record 0!"),
        (lambda: tf.decode_csv(['1,"a"b'], [[0], ["x"]]),
         "Quote inside a string has to be escaped by another quote"),
        (lambda: tf.decode_csv(["1,2,3"], [[0], [0]], select_cols=[1, 3]),
         "Expect 2 fields but have 1 in record 0"),
        (lambda: tf.decode_raw(["abcd", "ab"], tf.int32),
         "DecodeRaw requires input strings to all be the same size, but element 1 has size 4 != 2"),
        (lambda: tf.decode_raw(["abc"], tf.int32),
         "Input to DecodeRaw has length 3 that is not a multiple of 4, the size of int32"),
        (lambda: tf.parse_tensor(tf.serialize_tensor([1.0, 2.0]), tf.int32),
         r"Type mismatch between parsed tensor \(float\) and dtype \(int32\)"),
        (lambda: tf.parse_tensor("garbage", tf.int32),
         "Could not parse `serialized` as TensorProto, base64: Z2FyYmFnZQ=="),
        (lambda: tf.parse_example([example(y=[3])], {"x": tf.FixedLenFeature([2], tf.float32)}),
         r"Name: <unknown>, Feature: x \(data type: float\) is required but could not be found."),
        (lambda: tf.parse_example([example(x=[1.0])], {"x": tf.FixedLenFeature([2], tf.float32)},
                                  example_names=["first"]),
         r"Name: first, Key: x, Index: 0.  Number of float values != expected.  Values size: 1 "
         r"but output shape: \[2\]"),
        (lambda: tf.parse_example([example(x=[1, 2])], {"x": tf.FixedLenFeature([2], tf.float32)}),
         "Key: x, Index: 0.  Data types don't match. Data type: int64 but expected type: float"),
        (lambda: tf.parse_single_example(example(x=[1.0]),
                                         {"x": tf.FixedLenFeature([2], tf.float32)}),
         "Key: x.  Can't parse serialized Example: Some float_list slice was not parsed."),
        (lambda: tf.parse_single_example(example(), {"x": tf.FixedLenFeature([2], tf.float32)}),
         r"^Feature: x \(data type: float\) is required but could not be found."),
        (lambda: tf.parse_example(
            [example(x=[1.0, 2.0, 3.0])],
            {"x": tf.FixedLenSequenceFeature([2], tf.float32, allow_missing=True)}),
         r"Number of float values is not a multiple of stride length. Saw 3 values but output "
         r"shape is: \[\?, ?2\]"),
        (lambda: tf.parse_example([b"\x0a\x03abc"], {"x": tf.FixedLenFeature([], tf.int64)}),
         "Could not parse example input, value:"),
    ],
)  # fmt: skip
def test_run_time_errors_are_tfs(build, message):
    _run_both(build, INVALID, message)


def test_decode_compressed_of_bad_data_is_data_loss():
    _run_both(
        lambda: tf.decode_compressed(["abc"], "GZIP"),
        tf.errors.DataLossError,
        "inflate\\(\\) failed with error -3: incorrect header check",
    )


@pytest.mark.parametrize(
    "build, error, message",
    [
        (lambda: tf.decode_csv(["1"], [[0], [True]]), TypeError,
         "Value passed to parameter 'record_defaults' has DataType bool not in list of allowed "
         "values: float32, float64, int32, int64, string"),
        (lambda: tf.decode_csv(["1"], [[[0]]]), ValueError,
         "Shape must be at most rank 1 but is rank 2"),
        (lambda: tf.decode_csv(["1"], [[0, 1]]), ValueError,
         "Shape of a default must be a length-0 or length-1 vector, or a scalar."),
        (lambda: tf.decode_csv(["1"], [[0], [0]], select_cols=[2, 1]), ValueError,
         "select_cols is not strictly increasing."),
        (lambda: tf.decode_csv(["1"], [[0], [0]], select_cols=[0]), ValueError,
         "Length of select_cols and record_defaults do not match."),
        (lambda: tf.decode_csv(["1"], [[0]], field_delim=";;"), ValueError,
         "field_delim should be only 1 char"),
        (lambda: tf.parse_example(["x"], {}), ValueError, "Argument `features` cannot be None"),
        (lambda: tf.parse_example(["x"], {"x": tf.FixedLenFeature([2], tf.int32)}), TypeError,
         "has DataType int32 not in list of allowed values: float32, int64, string"),
        (lambda: tf.parse_example(["x"], {"x": tf.FixedLenFeature([None], tf.float32)}),
         ValueError, "First dimension of shape for feature x unknown. Consider using "
         "FixedLenSequenceFeature."),
        (lambda: tf.parse_example(["x"], {"x": tf.FixedLenSequenceFeature([], tf.float32)}),
         ValueError, "FixedLenSequenceFeature requires allow_missing to be True."),
        (lambda: tf.parse_example(["x"], {"x": tf.FixedLenFeature([2], tf.float32, [1.0, 2, 3])}),
         ValueError, "Cannot reshape a tensor with 3 elements to shape \\[2\\]"),
        (lambda: tf.parse_example(["x"], {"x": tf.VarLenFeature(tf.int32)}), TypeError,
         "'sparse_types' has DataType int32 not in list of allowed values"),
        (lambda: tf.parse_example(["x"], {"x": tf.SparseFeature(["i", "j"], "v", tf.float32,
                                                                [2, 2])}),
         NotImplementedError, "tfc takes one index_key"),
        (lambda: tf.parse_example([["x"]], {"x": tf.FixedLenFeature([], tf.float32)}),
         ValueError, "Shape must be at most rank 1 but is rank 2"),
        (lambda: tf.parse_single_example(["x"], {"x": tf.FixedLenFeature([], tf.float32)}),
         ValueError, "Input serialized must be a scalar"),
    ],
)  # fmt: skip
def test_graph_building_errors_are_tfs(build, error, message):
    with tf.Graph().as_default():
        with pytest.raises(error, match=message):
            build()


def test_var_len_and_sparse_features_parse_into_sparse_tensors():
    records = [
        example(ids=[3, 1, 4], w=[0.5, 1.5, 2.5], idx=[2, 0], val=[7.0, 8.0], fixed=[1.0]),
        example(fixed=[2.0], tags=[b"a"]),
        example(ids=[9], w=[3.0], idx=[1], val=[9.0], fixed=[3.0], tags=[b"b", b"c"]),
    ]
    features = {
        "ids": tf.VarLenFeature(tf.int64),
        "tags": tf.VarLenFeature(tf.string),
        "pair": tf.SparseFeature("idx", "val", tf.float32, 4),
        "fixed": tf.FixedLenFeature([], tf.float32),
    }
    with tf.Graph().as_default():
        batch = tf.parse_example(tf.constant(records), features)
        one = tf.parse_single_example(records[0], features)
        assert isinstance(batch["ids"], tf.SparseTensor)
        with tf.Session() as sess:
            got, single = sess.run([batch, one])
    ids = got["ids"]
    np.testing.assert_array_equal(ids.indices, [[0, 0], [0, 1], [0, 2], [2, 0]])
    np.testing.assert_array_equal(ids.values, np.int64([3, 1, 4, 9]))
    np.testing.assert_array_equal(ids.dense_shape, [3, 3])
    np.testing.assert_array_equal(got["tags"].indices, [[1, 0], [2, 0], [2, 1]])
    np.testing.assert_array_equal(got["tags"].values, strs("a", "b", "c"))
    np.testing.assert_array_equal(got["tags"].dense_shape, [3, 2])
    # a SparseFeature: each value at (example, its index), in row-major order
    np.testing.assert_array_equal(got["pair"].indices, [[0, 0], [0, 2], [2, 1]])
    np.testing.assert_array_equal(got["pair"].values, np.float32([8.0, 7.0, 9.0]))
    np.testing.assert_array_equal(got["pair"].dense_shape, [3, 4])
    np.testing.assert_array_equal(got["fixed"], np.float32([1, 2, 3]))
    np.testing.assert_array_equal(single["ids"].indices, [[0], [1], [2]])
    np.testing.assert_array_equal(single["ids"].dense_shape, [3])
    np.testing.assert_array_equal(single["pair"].indices, [[0], [2]])
    np.testing.assert_array_equal(single["pair"].values, np.float32([8.0, 7.0]))
    np.testing.assert_array_equal(single["pair"].dense_shape, [4])
    assert single["tags"].values.shape == (0,)
    with tf.Graph().as_default():
        wrong = tf.parse_example(tf.constant(records), {"w": tf.VarLenFeature(tf.int64)})
        with tf.Session() as sess:
            with pytest.raises(tf.errors.InvalidArgumentError, match="Data types don't match"):
                sess.run(wrong["w"].values)


def test_native_builds_refuse_the_parsing_ops_by_name():
    with tf.Graph().as_default() as g:
        rows = tf.placeholder(tf.string, [4], name="rows")
        (x,) = tf.decode_csv(rows, [[0.0]], name="csv")
        y = tf.identity(x * 2.0, name="y")
        feeds = [FeedSpec(("rows", 0), tf.string, (4,))]
        program = make_program_graph(g, [(y.op.name, 0)], feeds=feeds)
        with pytest.raises(
            NativeBuildError,
            match=r"Op 'csv/DecodeCSV' \(type DecodeCSV\) cannot be compiled into a native "
            r"program: it works on tf.string values",
        ):
            compile_program(program, PIPELINE)


def test_parse_single_sequence_example():
    f, fl, il, bl = tf.train.Feature, tf.train.FloatList, tf.train.Int64List, tf.train.BytesList
    tokens = [f(int64_list=il(value=[i, -i])) for i in range(3)]
    data = tf.train.SequenceExample(
        context=tf.train.Features(feature={"w": f(float_list=fl(value=[1.5, -2.0]))}),
        feature_lists=tf.train.FeatureLists(feature_list={
            "tok": tf.train.FeatureList(feature=tokens),
            "s": tf.train.FeatureList(feature=[f(bytes_list=bl(value=[b"a"]))]),
        }),
    ).SerializeToString()  # fmt: skip
    with tf.Graph().as_default():
        context, frames = tf.parse_single_sequence_example(
            data,
            {"w": tf.FixedLenFeature([2], tf.float32), "d": tf.FixedLenFeature([], tf.int64, 7)},
            {"tok": tf.FixedLenSequenceFeature([2], tf.int64),
             "s": tf.FixedLenSequenceFeature([], tf.string),
             "m": tf.FixedLenSequenceFeature([3], tf.float32, allow_missing=True)},
        )  # fmt: skip
        assert frames["tok"].shape.as_list() == [None, 2]
        missing = tf.parse_single_sequence_example(
            data, sequence_features={"m": tf.FixedLenSequenceFeature([], tf.float32)}
        )[1]["m"]
        with tf.Session() as sess:
            c, s = sess.run([context, frames])
            with pytest.raises(
                tf.errors.InvalidArgumentError,
                match="Feature list 'm' is required but could not be found",
            ):
                sess.run(missing)  # fmt: skip
    np.testing.assert_array_equal(c["w"], np.float32([1.5, -2.0]))
    assert c["d"] == 7 and c["d"].dtype == np.int64
    np.testing.assert_array_equal(s["tok"], [[0, 0], [1, -1], [2, -2]])
    assert s["s"].tolist() == [b"a"] and s["m"].shape == (0, 3)
