"""tfc's protocol-buffer messages (tfc/io/proto.py, protowire's encoder, text_format), TFRecord
framing and TensorProto conversion: bytes checked against hand-computed wire format, round
trips, proto3's defaults, oneofs, maps, and clear errors on malformed input."""

from __future__ import annotations

import math
import struct

import numpy as np
import pytest

from tfc.io import protowire
from tfc.io.crc32c import crc32c, mask_crc32c
from tfc.io.graph_pb import AttrValue, GraphDef, NodeDef
from tfc.io.proto import DecodeError
from tfc.io.summary_pb import Event, HistogramProto, SessionLog, Summary
from tfc.io.tensor_proto import make_ndarray, make_tensor_proto
from tfc.io.text_format import ParseError, parse
from tfc.io.tfrecord import encode_record, read_records
from tfc.ir.errors import DataLossError


# -- wire format ----------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "value, expected",
    [(0, b"\x00"), (1, b"\x01"), (127, b"\x7f"), (128, b"\x80\x01"), (300, b"\xac\x02"),
     (-1, b"\xff" * 9 + b"\x01"), ((1 << 64) - 1, b"\xff" * 9 + b"\x01")],
)  # fmt: skip
def test_varints_encode_as_the_protobuf_documentation_shows(value, expected):
    assert protowire.encode_varint(value) == expected
    assert protowire.read_varint(expected, 0)[0] == value % (1 << 64)


def test_scalar_fields_have_their_wire_types_and_zigzag():
    assert protowire.encode_field(1, "int32", 150) == b"\x08\x96\x01"  # the docs' example
    assert protowire.encode_field(2, "string", "testing") == b"\x12\x07testing"
    assert protowire.encode_field(1, "sint32", -1) == b"\x08\x01"
    assert protowire.encode_field(1, "sint64", -2) == b"\x08\x03"
    assert protowire.encode_field(3, "double", 1.5) == b"\x19" + struct.pack("<d", 1.5)
    assert protowire.encode_field(4, "float", 1e40) == b"\x25" + struct.pack("<f", math.inf)
    assert protowire.encode_packed(4, "int32", [3, 270, 86942]) == bytes.fromhex("2206038e029ea705")
    assert protowire.encode_packed(4, "int32", []) == b""
    with pytest.raises(ValueError, match="out of the range of int32"):
        protowire.encode_field(1, "int32", 1 << 31)
    with pytest.raises(TypeError, match="takes an integer"):
        protowire.encode_field(1, "int64", 1.5)


# -- messages --------------------------------------------------------------------------------------
def test_proto3_defaults_are_not_written_and_read_back_as_defaults():
    e = Event()
    assert e.SerializeToString() == b"" and e.step == 0 and e.wall_time == 0.0
    assert not e.HasField("summary") and e.WhichOneof("what") is None
    e.step = 0  # a default is still not written
    assert e.SerializeToString() == b""
    e.step = 7
    assert e.SerializeToString() == b"\x10\x07"
    assert Event.FromString(b"\x10\x07") == e


def test_sub_messages_exist_once_written_and_oneofs_keep_one_member():
    e = Event()
    value = e.summary.value  # reading creates nothing
    assert not e.HasField("summary")
    value.add(tag="loss", simple_value=0.5)
    assert e.HasField("summary") and e.WhichOneof("what") == "summary"
    e.file_version = "brain.Event:2"  # another member of the oneof replaces the summary
    assert e.WhichOneof("what") == "file_version" and not e.HasField("summary")
    v = Summary.Value(tag="zero", simple_value=0.0)  # a oneof member is written even at 0
    assert Summary.Value.FromString(v.SerializeToString()).WhichOneof("value") == "simple_value"


def test_float_fields_hold_float32_as_protobuf_does():
    v = Summary.Value(simple_value=0.1)
    assert v.simple_value == float(np.float32(0.1))
    assert Summary.Value.FromString(v.SerializeToString()) == v


def test_maps_repeated_fields_and_nested_messages_round_trip():
    g = GraphDef()
    n = g.node.add(name="a", op="Const")
    n.input.extend(["b", "^c"])
    n.attr["dtype"].type = 1
    n.attr["list"].list.i.extend([1, -2, 1 << 40])
    n.attr["shape"].shape.dim.add(size=-1)
    n.attr["empty"].list.SetInParent()
    g.versions.producer = 27
    back = GraphDef.FromString(g.SerializeToString())
    assert back == g and back.node[0].attr["list"].list.i == [1, -2, 1 << 40]
    assert back.node[0].attr["empty"].WhichOneof("value") == "list"
    assert back.node[0].attr["shape"].shape.dim[0].size == -1
    assert back != GraphDef()


def test_the_api_refuses_what_protobuf_refuses():
    e = Event()
    with pytest.raises(AttributeError, match="Assignment not allowed"):
        e.summary = Summary()
    with pytest.raises(TypeError, match="expected one of: int"):
        e.step = "3"
    with pytest.raises(AttributeError, match="no field named 'stp'"):
        e.stp = 3
    with pytest.raises(ValueError, match='has no "stp" field'):
        Event(stp=3)
    with pytest.raises(ValueError, match="non-submessage field"):
        e.HasField("step")
    with pytest.raises(TypeError, match="must be instance of same class"):
        e.CopyFrom(Summary())


@pytest.mark.parametrize(
    "data, where",
    [(b"\x08", "runs past the end"), (b"\x12\x05ab", "says 5 bytes"),
     (b"\x0b", "wire type 3"), (b"\x11\x01", "runs past the end")],
)  # fmt: skip
def test_malformed_bytes_raise_decode_errors_saying_where(data, where):
    with pytest.raises(DecodeError, match=where):
        Event.FromString(data)


def test_unknown_fields_are_skipped():
    data = Event(step=3).SerializeToString() + protowire.encode_field(99, "string", "future")
    assert Event.FromString(data) == Event(step=3)


# -- text format -----------------------------------------------------------------------------------
def test_text_format_round_trips_every_kind_of_field():
    n = NodeDef(name="x/y", op="Const", input=["a:1", "^b"], device="/cpu:0")
    n.attr["value"].tensor.CopyFrom(make_tensor_proto(np.array([1.5, -2.0], np.float32)))
    n.attr["s"].s = b'\x00\xff"quote"\n'
    n.attr["f"].f = -0.25
    n.attr["b"].b = True
    n.attr["types"].list.type.extend([1, 9])
    text = str(n)
    assert 'key: "s"' in text and 's: "\\000\\377\\"quote\\"\\n"' in text
    assert "type: DT_FLOAT" in text and "f: -0.25" in text
    assert parse(text, NodeDef()) == n


def test_text_format_parses_protobufs_other_spellings():
    text = """
    # a comment
    node < name: 'a' op: "Co" "nst" attr { key: "i" value: { i: 0x10 } } >
    node { name: "b" input: ["a", "a:1"] attr { key: "f" value { f: -inf } } }
    versions { producer: 5 }
    """
    g = parse(text, GraphDef())
    assert [n.name for n in g.node] == ["a", "b"] and g.node[0].op == "Const"
    assert g.node[0].attr["i"].i == 16 and g.node[1].attr["f"].f == -math.inf
    assert g.node[1].input == ["a", "a:1"] and g.versions.producer == 5


@pytest.mark.parametrize(
    "text, message",
    [("node { nam: 'a' }", '1:8 : message type "NodeDef" has no field named "nam"'),
     ("node {\n  name: 3 }", "2:9 : expected a string for field 'name'"),
     ("node { name: 'a' ", "expected '}'"),
     ("versions { producer: 1.5 }", "couldn't parse integer: 1.5"),
     ("node { attr { key: 'T' value { type: DT_NOPE } } }", "has no value named DT_NOPE")],
)  # fmt: skip
def test_text_format_errors_name_the_line_and_column(text, message):
    with pytest.raises(ParseError, match=message.replace("(", r"\(").replace("[", r"\[")):
        parse(text, GraphDef())


# -- TensorProto -----------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "value",
    [np.arange(6, dtype=np.float32).reshape(2, 3), np.array(3.5), np.array([1, -2], np.int64),
     np.array([True, False]), np.array(7, np.int32), np.array([b"ab", b"\xff"], dtype=object),
     np.zeros((0, 3), np.float32), np.array([1.5, 2.5], np.float16)],
)  # fmt: skip
def test_tensor_protos_round_trip(value):
    proto = make_tensor_proto(value)
    back = make_ndarray(type(proto).FromString(proto.SerializeToString()))
    assert back.dtype == value.dtype and back.shape == value.shape
    assert (back == value).all()


def test_tensor_protos_use_tensor_content_as_tensorflow_does_and_fill_short_forms():
    assert make_tensor_proto(np.ones(3, np.float32)).tensor_content  # many values: bytes
    one = make_tensor_proto(np.float32(2.0))
    assert not one.tensor_content and one.float_val == [2.0]
    filled = make_tensor_proto(5, dtype="int32", shape=[2, 2])
    assert filled.int_val == [5]
    np.testing.assert_array_equal(make_ndarray(filled), np.full((2, 2), 5, np.int32))
    short = make_tensor_proto(np.array([1.0, 2.0], np.float32))
    short.ClearField("tensor_content")
    short.float_val.extend([1.0, 2.0])
    short.tensor_shape.dim[0].size = 4  # fewer values than the shape: the last one repeats
    np.testing.assert_array_equal(make_ndarray(short), [1.0, 2.0, 2.0, 2.0])
    with pytest.raises(ValueError, match="tensor_content holds 2 values"):
        bad = make_tensor_proto(np.ones(2, np.float32))
        bad.tensor_shape.dim[0].size = 3
        make_ndarray(bad)


def test_attr_values_hold_one_member():
    a = AttrValue(i=3)
    a.s = b"x"
    assert a.WhichOneof("value") == "s" and a.i == 0


# -- TFRecord framing ------------------------------------------------------------------------------
def test_records_are_framed_with_masked_crcs(tmp_path):
    data = b"hello"
    record = encode_record(data)
    length = struct.pack("<Q", 5)
    assert record == (length + struct.pack("<I", mask_crc32c(crc32c(length))) + data
                      + struct.pack("<I", mask_crc32c(crc32c(data))))  # fmt: skip
    path = tmp_path / "r.tfrecord"
    path.write_bytes(record + encode_record(b"") + encode_record(b"x" * 1000))
    assert list(read_records(path)) == [b"hello", b"", b"x" * 1000]


def test_damaged_records_raise_data_loss_naming_file_and_record(tmp_path):
    path = tmp_path / "bad.tfrecord"
    good = encode_record(b"first")
    bad = bytearray(encode_record(b"second"))
    bad[14] ^= 1  # a byte of the data
    path.write_bytes(good + bytes(bad))
    with pytest.raises(DataLossError, match=r"bad.tfrecord: record 1 at byte 21: corrupted"):
        list(read_records(path))
    path.write_bytes(good + encode_record(b"cut short")[:-3])  # a writer still writing
    assert list(read_records(path)) == [b"first"]
    with pytest.raises(DataLossError, match="record 1 at byte 21: the file ends inside"):
        list(read_records(path, strict=True))


def test_histogram_and_session_log_messages_hold_their_fields():
    h = HistogramProto(min=-1.0, max=2.0, num=3.0, bucket_limit=[0.0, 1e308], bucket=[1.0, 2.0])
    assert HistogramProto.FromString(h.SerializeToString()) == h
    log = SessionLog(status=SessionLog.CHECKPOINT, checkpoint_path="/ckpt")
    assert SessionLog.SessionStatus.Name(log.status) == "CHECKPOINT"
    assert str(log) == 'status: CHECKPOINT\ncheckpoint_path: "/ckpt"\n'
