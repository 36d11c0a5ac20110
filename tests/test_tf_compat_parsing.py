"""decode_csv, decode_raw, serialize_tensor, parse_example and TFRecord files against TensorFlow
itself: the same values and the same error messages; files written by each read by the other.
Skipped where tensorflow is not installed (it runs in the TF venv, see the developer notes)."""

import os

import numpy as np
import pytest

import tfc

tf = pytest.importorskip("tensorflow")
v1 = tf.compat.v1


def _tf_message(e: Exception) -> str:
    """The op's own message of a TF error (its first line that is not TF's decoration)."""
    lines = [
        line for line in str(e).split("\n")
        if line.strip() and not line.startswith(("Graph execution error", "Detected at", "Node:"))
        and "{{node" not in line and not line.startswith("  ")
    ]  # fmt: skip
    return lines[0]


def _run_tf(build):
    graph = tf.Graph()
    with graph.as_default():
        try:
            out = build(v1)
            with v1.Session(graph=graph) as sess:
                return "ok", sess.run(out)
        except (tf.errors.OpError, ValueError, TypeError) as e:
            return type(e).__name__, _tf_message(e) if isinstance(e, tf.errors.OpError) else str(e)


def _run_tfc(build):
    with tfc.Graph().as_default():
        try:
            out = build(tfc)
            with tfc.Session() as sess:
                return "ok", sess.run(out)
        except (tfc.errors.OpError, ValueError, TypeError) as e:
            return type(e).__name__, e.message if isinstance(e, tfc.errors.OpError) else str(e)


def _same(build):
    kind_tf, tf_value = _run_tf(build)
    kind, value = _run_tfc(build)
    assert kind == kind_tf, (tf_value, value)
    if kind != "ok":  # a shape error's words, without TF's NodeDef
        assert tf_value.split(" for '")[0] in value, (tf_value, value)
        return
    if isinstance(tf_value, dict):
        assert sorted(tf_value) == sorted(value)
        pairs = [(tf_value[k], value[k]) for k in sorted(tf_value)]
    else:
        pairs = list(zip(tf_value, value)) if isinstance(tf_value, list) else [(tf_value, value)]
    for want, got in pairs:
        want, got = np.asarray(want), np.asarray(got)
        assert got.dtype == want.dtype and got.shape == want.shape, (want, got)
        if want.dtype.kind == "f":
            np.testing.assert_array_equal(got, want)  # bit for bit: parsing is exact
        else:
            assert got.tolist() == want.tolist()


CSV_CASES = [
    (["1,2.5,a", "3,,b"], [[0], [1.0], ["x"]], {}),
    (["1,2"], [[0], [1.0], ["x"]], {}),
    (["1,2,3,4"], [[0], [1.0], ["x"]], {}),
    (["a,2,3"], [[0], [1.0], ["x"]], {}),
    (["1,b,3"], [[0], [1.0], ["x"]], {}),
    (["1,,3"], [[0], [], ["x"]], {}),
    (['1,"a,b",3'], [[0], ["x"], [0]], {}),
    (['1,"a""b",3'], [[0], ["x"], [0]], {}),
    (['1,"a"b,3'], [[0], ["x"], [0]], {}),
    (['1,a"b,3'], [[0], ["x"], [0]], {}),
    (['1,"a,b",3'], [[0], ["x"], ["y"]], {"use_quote_delim": False}),
    (["1;2;3"], [[0], [0], [0]], {"field_delim": ";"}),
    (["1,NA,3"], [[0], [7], [0]], {"na_value": "NA"}),
    (["1,2,3,4"], [[0], [0]], {"select_cols": [1, 3]}),
    (["1,2,3"], [[0], [0]], {"select_cols": [1, 3]}),
    (["1,2,3"], [[0], [0]], {"select_cols": [2, 1]}),
    ([" 1 , 2.5 "], [[0], [1.0]], {}),
    (["0x10,1e3"], [[0], [1.0]], {}),
    (["1e40,1e-50,0x1p-3,Infinity,-nan,1e-40"], [[1.0]] * 6, {}),
    (["3.4028236e38,3.4028235e38, +1.5 ,.5,5."], [[1.0]] * 5, {}),
    (["0.1,1e308,2.2250738585072014e-308"], [np.zeros(1)] * 3, {}),
    (["9223372036854775807,-9223372036854775808"], [np.zeros(1, np.int64)] * 2, {}),
    (["2147483648"], [[0]], {}),
    ([""], [[0]], {}),
    (["a,"], [["s"], ["t"]], {}),
    ([["1,2"], ["3,4"]], [[0], [0]], {}),
    ("5,6", [[0], [0]], {}),
    (["1.5"], [[0]], {}),
    (["1\n2"], [[0]], {}),
    (['"ab'], [["x"]], {}),
    (['"ab"c'], [["x"]], {}),
    (['""'], [["x"]], {}),
    (['x,""'], [["x"], [3]], {}),
    (["1,2"], [[0], [True]], {}),
    (["1,2"], [[0], [[0]]], {}),
]


@pytest.mark.parametrize("records, defaults, kwargs", CSV_CASES)
def test_decode_csv_as_tf(records, defaults, kwargs):
    _same(lambda t: t.decode_csv(records, defaults, **kwargs))


RAW = [b"\x01\x02\x03\x04\x05\x06\x07\x08", b"\xff\xfe\x00\x80\x7f\x00\x00\xc0"]


@pytest.mark.parametrize(
    "values, dtype, kwargs",
    [
        (RAW, "int16", {}),
        (RAW, "int32", {"little_endian": False}),
        (RAW, "float32", {}),
        (RAW, "float64", {}),
        (RAW, "int64", {}),
        ([b"abcd", b"ab"], "int16", {}),
        ([b"abc"], "int16", {}),
        ([b"abcd", b"ab"], "int16", {"fixed_length": 4}),
        ([b"abcdef"], "int32", {"fixed_length": 8}),
        ([], "int16", {}),
    ],
)
def test_decode_raw_as_tf(values, dtype, kwargs):
    if not hasattr(tfc, dtype):
        pytest.skip(f"tfc has no {dtype} yet")
    _same(lambda t: tf.io.decode_raw(values, getattr(t, dtype), **kwargs) if t is v1
          else t.decode_raw(values, getattr(t, dtype), **kwargs))  # fmt: skip


@pytest.mark.parametrize(
    "value",
    [np.array([[1.5, -2.0], [0.0, 3.25]], np.float32), np.arange(5, dtype=np.int64),
     np.float64(2.5), np.array([b"a", b"", b"xyz"], dtype=object), np.zeros((2, 0), np.int32)],
)  # fmt: skip
def test_serialize_tensor_writes_tfs_bytes(value):
    kind, tf_bytes = _run_tf(lambda t: t.io.serialize_tensor(value))
    kind2, ours = _run_tfc(lambda t: t.serialize_tensor(value))
    assert kind == kind2 == "ok" and ours == tf_bytes
    _, back = _run_tfc(lambda t: t.parse_tensor(tf_bytes, t.as_dtype(value.dtype)))
    assert np.asarray(back).tolist() == np.asarray(value).tolist()


def _example(t, **features):
    feature = {}
    for key, values in features.items():
        if isinstance(values[0], float):
            feature[key] = t.train.Feature(float_list=t.train.FloatList(value=values))
        elif isinstance(values[0], int):
            feature[key] = t.train.Feature(int64_list=t.train.Int64List(value=values))
        else:
            feature[key] = t.train.Feature(bytes_list=t.train.BytesList(value=values))
    return t.train.Example(features=t.train.Features(feature=feature)).SerializeToString()


def test_examples_have_protobufs_bytes_both_ways():
    for features in [
        {"x": [1.0, 2.5, -3e-8]}, {"i": [1, -1, 2**62]}, {"s": [b"a", b"", b"\xff"]},
    ]:  # fmt: skip
        assert _example(tfc, **features) == _example(tf, **features)
    many = {"x": [1.0, 2.0], "y": [3], "z": [b"q"]}
    parsed = tfc.train.Example.FromString(_example(tf, **many))
    assert list(parsed.features.feature["x"].float_list.value) == [1.0, 2.0]
    assert tf.train.Example.FromString(_example(tfc, **many)) == tf.train.Example.FromString(
        _example(tf, **many)
    )


def _parse_cases():
    def spec(t):
        return {
            "x": t.FixedLenFeature([2], t.float32),
            "y": t.FixedLenFeature([], t.int64, default_value=7),
            "s": t.FixedLenFeature([], t.string, default_value="d"),
        }

    def seq(t, **kw):
        return {"x": t.FixedLenSequenceFeature([], t.float32, allow_missing=True, **kw)}

    return [
        lambda t: t.parse_example(
            [_example(t, x=[1.0, 2.0], y=[3], s=[b"a"]), _example(t, x=[4.0, 5.0])], spec(t)),
        lambda t: t.parse_single_example(_example(t, x=[1.0, 2.0], y=[3]), spec(t)),
        lambda t: t.parse_example([_example(t, y=[3])], spec(t)),
        lambda t: t.parse_example([_example(t, x=[1.0, 2.0, 3.0])], spec(t)),
        lambda t: t.parse_example([_example(t, x=[1, 2])], spec(t)),
        lambda t: t.parse_single_example(_example(t, y=[3]), spec(t)),
        lambda t: t.parse_single_example(_example(t, x=[1.0]), spec(t)),
        lambda t: t.parse_single_example(_example(t, x=[1, 2]), spec(t)),
        lambda t: t.parse_example(
            [_example(t, x=[1.0, 2.0, 3.0]), _example(t, x=[4.0])], seq(t, default_value=-1.0)),
        lambda t: t.parse_example([_example(t, x=[1.0, 2.0, 3.0]), _example(t, y=[1])], seq(t)),
        lambda t: t.parse_example(
            [_example(t, x=[1.0, 2.0, 3.0])],
            {"x": t.FixedLenSequenceFeature([2], t.float32, allow_missing=True)}),
        lambda t: t.parse_example(
            [_example(t, x=[1.0, 2.0, 3.0, 4.0])], {"x": t.FixedLenFeature([2, 2], t.float32)}),
        lambda t: t.parse_example([_example(t, x=[1.0])], {"x": t.FixedLenFeature([2], t.float32)},
                                  example_names=["first"]),
        lambda t: t.parse_example([_example(t, x=[b"a"])], {"x": t.FixedLenFeature([], t.string)}),
        lambda t: t.parse_example([b"\x0a\x03abc"], spec(t)),
        lambda t: t.parse_example([_example(t, x=[1.0])], {"x": t.FixedLenFeature([2], t.int32)}),
    ]  # fmt: skip


@pytest.mark.parametrize("case", range(len(_parse_cases())))
def test_parse_example_as_tf(case):
    _same(_parse_cases()[case])


def _sequence_example(t):
    f, fl, il, bl = t.train.Feature, t.train.FloatList, t.train.Int64List, t.train.BytesList
    context = {"len": f(int64_list=il(value=[3])), "w": f(float_list=fl(value=[1.5, -2.0]))}
    lists = {
        "tok": t.train.FeatureList(feature=[f(int64_list=il(value=[i, i + 1])) for i in range(3)]),
        "s": t.train.FeatureList(feature=[f(bytes_list=bl(value=[b"a"])),
                                          f(bytes_list=bl(value=[b"bc"]))]),
    }  # fmt: skip
    return t.train.SequenceExample(
        context=t.train.Features(feature=context),
        feature_lists=t.train.FeatureLists(feature_list=lists),
    ).SerializeToString()


SEQUENCE_CASES = {
    "all": (
        {"len": ("fixed", [], "int64"), "w": ("fixed", [2], "float32"),
         "d": ("fixed", [], "float32", 7.0)},
        {"tok": ("seq", [2], "int64"), "s": ("seq", [], "string"),
         "m": ("seq", [], "float32", True)},
    ),
    "missing_context": ({"x": ("fixed", [], "int64")}, {}),
    "missing_list": ({}, {"m": ("seq", [], "float32")}),
    "frame_size": ({}, {"tok": ("seq", [3], "int64")}),
    "frame_type": ({}, {"tok": ("seq", [2], "float32")}),
    "context_size": ({"w": ("fixed", [3], "float32")}, {}),
}  # fmt: skip


def _feature(t, spec):
    kind, shape, dtype, *extra = spec
    ns = t.io if t is v1 else t  # tfc.io is tfc's file layer; its names are top-level
    if kind == "fixed":
        return ns.FixedLenFeature(shape, getattr(t, dtype), *extra)
    return ns.FixedLenSequenceFeature(shape, getattr(t, dtype), *extra)


@pytest.mark.parametrize("case", sorted(SEQUENCE_CASES))
def test_parse_single_sequence_example_as_tf(case):
    context, sequence = SEQUENCE_CASES[case]

    def build(t):
        io = t.io if t is v1 else t
        parsed = io.parse_single_sequence_example(
            _sequence_example(t),
            {k: _feature(t, s) for k, s in context.items()},
            {k: _feature(t, s) for k, s in sequence.items()},
        )
        return {**{f"c_{k}": v for k, v in parsed[0].items()},
                **{f"s_{k}": v for k, v in parsed[1].items()}}  # fmt: skip

    _same(build)


# -- TFRecord files, each way ----------------------------------------------------------------------
RECORDS = [b"first", b"", b"\x00" * 100000, bytes(range(256)) * 3]


@pytest.mark.parametrize("compression", ["", "ZLIB", "GZIP"])
def test_tfrecord_files_of_tf_are_read_by_tfc_and_back(tmp_path, compression):
    theirs, ours = str(tmp_path / "tf.tfrecord"), str(tmp_path / "tfc.tfrecord")
    with tf.io.TFRecordWriter(theirs, options=compression or None) as w:
        for r in RECORDS:
            w.write(r)
    with tfc.python_io.TFRecordWriter(ours, options=compression or None) as w:
        for r in RECORDS:
            w.write(r)
    assert list(tfc.python_io.tf_record_iterator(theirs, compression)) == RECORDS
    assert [r.numpy() for r in tf.data.TFRecordDataset(ours, compression)] == RECORDS
    assert list(v1.python_io.tf_record_iterator(ours, compression)) == RECORDS
    if not compression:
        assert open(theirs, "rb").read() == open(ours, "rb").read()


def test_damaged_tfrecords_give_tfs_messages(tmp_path):
    path = tmp_path / "r.tfrecord"
    with tf.io.TFRecordWriter(str(path)) as w:
        w.write(b"hello")
        w.write(b"world!")
    data = path.read_bytes()
    for damaged in [data[:14] + bytes([data[14] ^ 1]) + data[15:], bytes([0]) + data[1:],
                    data[:-3]]:  # fmt: skip
        path.write_bytes(damaged)
        with pytest.raises(tf.errors.DataLossError) as theirs:
            list(v1.python_io.tf_record_iterator(str(path)))
        with pytest.raises(tfc.errors.DataLossError) as ours:
            list(tfc.python_io.tf_record_iterator(str(path)))
        assert ours.value.message.endswith(str(theirs.value)), (ours.value, theirs.value)
    os.remove(path)
