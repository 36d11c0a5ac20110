"""tf.train.Saver and tfc.checkpoint: safetensors round trips, state files, refusals, atomicity."""

import json
import logging
import os
import signal
import struct
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import pytest

import tfc as tf
from tfc.io.checkpoint import (
    CheckpointReader,
    CorruptCheckpointError,
    format_checkpoint_state,
    parse_checkpoint_state,
    read_safetensors,
    write_safetensors,
)

REPO = Path(__file__).resolve().parents[1]


# -- corrupt files (tests/test_runtime_checkpoint.py feeds the same ones to the C reader) -------
_B = np.array([0.5, -1.25, 3.0])  # F64 [3]: data [0, 24]
_W = np.arange(6, dtype=np.float32).reshape(2, 3) / 2  # F32 [2, 3]: data [24, 48]
_FLAG = np.array([True, False])  # BOOL [2]: data [48, 50]
_DATA = _B.tobytes() + _W.tobytes() + _FLAG.tobytes()


def _header() -> dict:
    return {
        "__metadata__": {"format": "tfc"},
        "b": {"dtype": "F64", "shape": [3], "data_offsets": [0, 24]},
        "W": {"dtype": "F32", "shape": [2, 3], "data_offsets": [24, 48]},
        "flag": {"dtype": "BOOL", "shape": [2], "data_offsets": [48, 50]},
    }


def _pack(header, data: bytes = _DATA) -> bytes:
    text = header if isinstance(header, bytes) else json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    return struct.pack("<Q", len(text)) + text + data


def _edit(name: str, drop: str | None = None, **fields) -> bytes:
    header = _header()
    header[name].update(fields)
    if drop:
        del header[name][drop]
    return _pack(header)


def _raw(old: bytes, new: bytes) -> bytes:
    text = json.dumps(_header()).encode()
    assert old in text
    return _pack(text.replace(old, new, 1))


_VALID = _pack(_header())
_BAD_UTF8 = _raw(b'"W"', b'"W\xff"')
_BAD_UTF8_AT = _BAD_UTF8.index(b"\xff") - 8

# case -> (file contents, what the error must say)
CORRUPTIONS = {
    "empty": (b"", "is truncated: 0 bytes, too short for the 8-byte header length"),
    "short": (b"\x10\x00\x00", "is truncated: 3 bytes, too short for the 8-byte header length"),
    "header-too-large": (
        struct.pack("<Q", 2**40) + b"{}",
        "has a corrupt header length: 1099511627776 bytes exceeds the safetensors limit",
    ),
    "header-past-end": (
        struct.pack("<Q", 4000) + b"{" + b" " * 91,
        "is truncated: header length says 4000 header bytes, file has 92",
    ),
    "truncated-data": (_VALID[:-10], "is truncated: header says 50 data bytes, file has 40"),
    "trailing-garbage": (
        _VALID + b"garbage!",
        "has 8 bytes of trailing garbage after the 50 data bytes its header describes",
    ),
    "not-utf8": (
        _BAD_UTF8,
        f"has a corrupt header: not valid UTF-8 at byte {_BAD_UTF8_AT}",
    ),
    "not-an-object": (_pack(b"[1, 2]"), "has a corrupt header: it does not start with '{'"),
    "bad-json": (_pack(json.dumps(_header()).encode()[:-1]), "corrupt header: invalid JSON"),
    "nan": (_raw(b"[2, 3]", b"[NaN, 3]"), "has a corrupt header: invalid JSON"),
    "deep-nesting": (
        _pack(b'{"W": ' + b"[" * 100_000 + b"]" * 100_000 + b"}"),
        "has a corrupt header: invalid JSON",
    ),
    "duplicate-key": (_raw(b'"flag"', b'"W"'), "has a corrupt header: duplicate key 'W'"),
    "unknown-dtype": (
        _edit("W", dtype="F16"),
        """tensor 'W': field 'dtype' is "F16", not one of F32, F64, I32, I64, BOOL""",
    ),
    "dtype-size-mismatch": (
        _edit("W", dtype="F64"),
        "tensor 'W': field 'data_offsets' [24, 48] holds 24 bytes, but F64 shape [2, 3] needs 48",
    ),
    "negative-dim": (
        _edit("W", shape=[-2, -3]),
        "tensor 'W': field 'shape' is not a list of non-negative integers",
    ),
    "float-dim": (
        _edit("W", shape=[2.0, 3]),
        "tensor 'W': field 'shape' is not a list of non-negative integers",
    ),
    "string-dim": (
        _edit("W", shape=["2", 3]),
        "tensor 'W': field 'shape' is not a list of non-negative integers",
    ),
    "huge-dim": (
        _edit("W", shape=[2**64, 0]),
        "tensor 'W': field 'shape' is not a list of non-negative integers",
    ),
    "shape-overflow": (
        _edit("W", shape=[2**62, 8, 0]),
        "tensor 'W': field 'shape' [4611686018427387904, 8, 0] overflows a 64-bit size",
    ),
    "overlapping-offsets": (
        _edit("W", data_offsets=[16, 40]),
        "tensor 'W': field 'data_offsets' [16, 40] overlaps tensor 'b' [0, 24]",
    ),
    "gap": (
        _edit("W", data_offsets=[26, 50]),
        "tensor 'W': field 'data_offsets' [26, 50] leaves a gap after tensor 'b' [0, 24]",
    ),
    "not-from-zero": (
        _edit("b", data_offsets=[8, 32]),
        "tensor 'b': field 'data_offsets' [8, 32]: the data does not start at offset 0",
    ),
    "offsets-reversed": (
        _edit("W", data_offsets=[48, 24]),
        "tensor 'W': field 'data_offsets' [48, 24] ends before it begins",
    ),
    "three-offsets": (
        _edit("W", data_offsets=[24, 36, 48]),
        "tensor 'W': field 'data_offsets' is not a list of two non-negative integers",
    ),
    "huge-offset": (
        _edit("W", data_offsets=[24, 2**64 + 24]),
        "tensor 'W': field 'data_offsets' is not a list of two non-negative integers",
    ),
    "missing-field": (_edit("W", drop="shape"), "tensor 'W': field 'shape' is missing"),
    "unknown-field": (_edit("W", strides=[3, 1]), "tensor 'W': unknown field 'strides'"),
    "entry-not-object": (
        _raw(b'"W": {', b'"W": [1], "V": {'),
        "tensor 'W': entry is not an object",
    ),
    "metadata-not-strings": (
        _raw(b'{"format": "tfc"}', b'{"format": "tfc", "step": 10}'),
        "field '__metadata__' value of 'step' is not a string",
    ),
    "metadata-not-object": (
        _raw(b'{"format": "tfc"}', b'"tfc"'),
        "field '__metadata__' is not an object",
    ),
    "nul-in-name": (_raw(b'"W"', b'"W\\u0000"'), "a tensor name contains a NUL character"),
    "lone-surrogate": (_raw(b'"W"', b'"\\ud800"'), "a string holds a lone surrogate escape"),
    "bool-byte": (_VALID[:-1] + b"\x07", "tensor 'flag' of dtype BOOL holds byte value 7"),
    "random-garbage": (np.random.default_rng(0).bytes(512), "has a corrupt header length"),
}


def corrupt_file(directory: Path, case: str) -> tuple[Path, str]:
    """Write CORRUPTIONS[case] as a checkpoint file; returns its path and the expected problem."""
    contents, problem = CORRUPTIONS[case]
    path = directory / "model.ckpt-10.safetensors"
    path.write_bytes(contents)
    return path, problem


def test_uncorrupted_base_reads_in_both_readers(tmp_path, safetensors):
    (tmp_path / "ok.safetensors").write_bytes(_VALID)
    arrays, metadata = read_safetensors(tmp_path / "ok.safetensors")
    assert metadata == {"format": "tfc"}
    np.testing.assert_array_equal(arrays["W"], _W)
    np.testing.assert_array_equal(arrays["b"], _B)
    np.testing.assert_array_equal(arrays["flag"], _FLAG)
    reference = safetensors.numpy.load_file(str(tmp_path / "ok.safetensors"))
    np.testing.assert_array_equal(reference["W"], _W)


@pytest.mark.parametrize("case", sorted(CORRUPTIONS))
def test_corrupt_checkpoints_are_refused(tmp_path, case):
    path, problem = corrupt_file(tmp_path, case)
    W = tf.Variable(np.zeros((2, 3), np.float32), name="W")
    b = tf.Variable(np.zeros(3), name="b")
    flag = tf.Variable(np.zeros(2, bool), name="flag")
    saver = tf.train.Saver([W, b, flag])
    with tf.Session() as sess:
        prefix = str(path)[: -len(".safetensors")]
        with pytest.raises(tf.errors.DataLossError) as info:
            saver.restore(sess, prefix)
        assert isinstance(info.value, CorruptCheckpointError)
        assert str(info.value).startswith(f"checkpoint {path} ")
        assert problem in str(info.value)
        # nothing was restored
        assert sess.initialized_variables() == set()


# -- Saver round trips ---------------------------------------------------------------------------
def _model():
    W = tf.Variable(np.arange(6, dtype=np.float32).reshape(2, 3), name="W")
    b = tf.Variable(tf.zeros([3], dtype=tf.float64), name="dense/b")
    gs = tf.Variable(0, dtype=tf.int64, trainable=False, name="global_step")
    step = tf.group(
        W.assign(W * 0.5 + 1.0), b.assign_add(tf.ones([3], tf.float64)), gs.assign_add(1)
    )
    return W, b, gs, step


def _numpy_steps(W, b, n):
    for _ in range(n):
        W, b = W * np.float32(0.5) + np.float32(1.0), b + 1.0
    return W, b


def test_save_restore_and_training_continues(tmp_path):
    W, b, gs, step = _model()
    saver = tf.train.Saver()
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        for _ in range(3):
            sess.run(step)
        prefix = saver.save(sess, str(tmp_path / "model.ckpt"), global_step=gs)
        saved = sess.run([W, b, gs])
    assert prefix == str(tmp_path / "model.ckpt-3")
    assert os.path.isfile(prefix + ".safetensors")

    tf.reset_default_graph()  # as a new process would: the same graph built again
    W, b, gs, step = _model()
    saver = tf.train.Saver()
    with tf.Session() as sess:
        saver.restore(sess, tf.train.latest_checkpoint(str(tmp_path)))
        restored = sess.run([W, b, gs])
        for got, want in zip(restored, saved):
            np.testing.assert_array_equal(got, want)
        sess.run(step)
        sess.run(step)
        W_now, b_now, gs_now = sess.run([W, b, gs])
    want_W, want_b = _numpy_steps(np.arange(6, dtype=np.float32).reshape(2, 3), np.zeros(3), 5)
    np.testing.assert_allclose(W_now, want_W, rtol=1e-6)
    np.testing.assert_array_equal(b_now, want_b)
    assert gs_now == 5


def test_checkpoints_are_safetensors_files(tmp_path, safetensors):
    W, b, gs, step = _model()
    saver = tf.train.Saver()
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        sess.run(step)
        prefix = saver.save(sess, str(tmp_path / "model.ckpt"), global_step=7)
        values = dict(zip(["W", "dense/b", "global_step"], sess.run([W, b, gs])))
    loaded = safetensors.numpy.load_file(prefix + ".safetensors")
    assert loaded.keys() == values.keys()
    for name, want in values.items():
        assert loaded[name].dtype == np.asarray(want).dtype, name
        np.testing.assert_array_equal(loaded[name], want)
    with safetensors.safe_open(prefix + ".safetensors", "np") as f:
        assert f.metadata() == {"format": "tfc", "global_step": "7"}
    # the file is what the reference writer makes of the same tensors, byte for byte
    safetensors.numpy.save_file(
        loaded, str(tmp_path / "ref.safetensors"), metadata={"format": "tfc", "global_step": "7"}
    )
    with safetensors.safe_open(str(tmp_path / "ref.safetensors"), "np") as f:
        assert f.metadata() == {"format": "tfc", "global_step": "7"}
    write_safetensors(tmp_path / "one.safetensors", loaded, {"format": "tfc"})
    safetensors.numpy.save_file(
        loaded, str(tmp_path / "ref1.safetensors"), metadata={"format": "tfc"}
    )
    assert (tmp_path / "one.safetensors").read_bytes() == (
        tmp_path / "ref1.safetensors"
    ).read_bytes()


def test_restores_files_written_by_the_safetensors_package(tmp_path, safetensors):
    W = tf.Variable(np.zeros((2, 3), np.float32), name="W")
    n = tf.Variable(np.zeros((), np.int32), name="n")
    flags = tf.Variable(np.zeros(3, bool), name="flags")
    want = {
        "W": np.random.default_rng(1).standard_normal((2, 3)).astype(np.float32),
        "n": np.array(-42, np.int32),
        "flags": np.array([True, False, True]),
        "unused": np.zeros(5, np.int64),
    }
    safetensors.numpy.save_file(want, str(tmp_path / "ext.safetensors"))
    saver = tf.train.Saver([W, n, flags])
    for path in (tmp_path / "ext", tmp_path / "ext.safetensors"):  # prefix or file
        with tf.Session() as sess:
            saver.restore(sess, str(path))
            got = sess.run({"W": W, "n": n, "flags": flags})
        for name in got:
            np.testing.assert_array_equal(got[name], want[name])
    arrays, metadata = read_safetensors(tmp_path / "ext.safetensors")
    assert metadata == {} and arrays.keys() == want.keys()


def test_latest_checkpoint_and_max_to_keep(tmp_path):
    W, b, gs, step = _model()
    saver = tf.train.Saver(max_to_keep=3)
    assert tf.train.latest_checkpoint(str(tmp_path)) is None
    assert tf.train.get_checkpoint_state(str(tmp_path)) is None
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        for i in range(1, 6):
            sess.run(step)
            assert saver.save(sess, str(tmp_path / "model"), global_step=gs) == str(
                tmp_path / f"model-{i}"
            )
            assert tf.train.latest_checkpoint(str(tmp_path)) == str(tmp_path / f"model-{i}")
    kept = [str(tmp_path / f"model-{i}") for i in (3, 4, 5)]
    assert saver.last_checkpoints == kept
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "checkpoint",
        "model-3.safetensors",
        "model-4.safetensors",
        "model-5.safetensors",
    ]
    state = tf.train.get_checkpoint_state(str(tmp_path))
    assert state.model_checkpoint_path == kept[-1]
    assert state.all_model_checkpoint_paths == kept
    assert (tmp_path / "checkpoint").read_text().splitlines() == [
        f'model_checkpoint_path: "{kept[-1]}"',
        *[f'all_model_checkpoint_paths: "{p}"' for p in kept],
    ]
    assert all(tf.train.checkpoint_exists(p) for p in kept)
    assert not tf.train.checkpoint_exists(str(tmp_path / "model-2"))
    assert tf.train.list_variables(str(tmp_path)) == [
        ("W", [2, 3]),
        ("dense/b", [3]),
        ("global_step", []),
    ]
    assert tf.train.load_variable(str(tmp_path), "global_step:0") == 5


def test_relative_paths_and_keeping_all(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    os.mkdir("run")
    W = tf.Variable(1.0, name="W")
    saver = tf.train.Saver(max_to_keep=None)
    with tf.Session() as sess:
        sess.run(W.initializer)
        for i in range(4):
            saver.save(sess, "run/model.ckpt", global_step=i)
    # a relative directory stores relative paths (the directory can move), as TF does
    assert (tmp_path / "run" / "checkpoint").read_text() == (
        'model_checkpoint_path: "model.ckpt-3"\nall_model_checkpoint_paths: "model.ckpt-3"\n'
    )
    assert tf.train.latest_checkpoint("run") == os.path.join("run", "model.ckpt-3")
    assert len(list((tmp_path / "run").glob("*.safetensors"))) == 4


def test_global_step_forms_and_names(tmp_path, safetensors):
    v = tf.Variable(np.ones(2, np.float32), name="v")
    step32 = tf.Variable(12, name="step32")
    saver = tf.train.Saver([v], pad_step_number=True)
    plain = tf.train.Saver([v])
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        assert saver.save(sess, str(tmp_path / "m"), global_step=42) == str(tmp_path / "m-00000042")
        assert plain.save(sess, str(tmp_path / "m"), global_step=step32) == str(tmp_path / "m-12")
        assert plain.save(sess, str(tmp_path / "m"), global_step=np.int64(5)) == str(
            tmp_path / "m-5"
        )
        t = tf.constant(np.int64(99))
        assert plain.save(sess, str(tmp_path / "m"), global_step=t) == str(tmp_path / "m-99")
        assert plain.save(sess, str(tmp_path / "m")) == str(tmp_path / "m")
        with pytest.raises(ValueError, match="'latest_filename' collides with 'save_path'"):
            plain.save(sess, str(tmp_path / "checkpoint"))
    with safetensors.safe_open(str(tmp_path / "m-12.safetensors"), "np") as f:
        assert f.metadata() == {"format": "tfc", "global_step": "12"}
    with safetensors.safe_open(str(tmp_path / "m.safetensors"), "np") as f:
        assert f.metadata() == {"format": "tfc"}


def test_var_list_forms(tmp_path, safetensors):
    a = tf.Variable(np.array([1.0, 2.0], np.float32), name="a")
    c = tf.Variable(np.array(3, np.int64), name="scope/c")
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        tf.train.Saver([a]).save(sess, str(tmp_path / "list"))
        tf.train.Saver({"renamed": a, "c": c}).save(sess, str(tmp_path / "dict"))
        tf.train.Saver([c.op.outputs[0]]).save(sess, str(tmp_path / "ref"))
    assert set(safetensors.numpy.load_file(str(tmp_path / "list.safetensors"))) == {"a"}
    assert set(safetensors.numpy.load_file(str(tmp_path / "dict.safetensors"))) == {"renamed", "c"}
    assert set(safetensors.numpy.load_file(str(tmp_path / "ref.safetensors"))) == {"scope/c"}
    # a dict restores by its keys into other variables
    fresh = tf.Variable(np.zeros(2, np.float32), name="fresh")
    with tf.Session() as sess:
        tf.train.Saver({"renamed": fresh}).restore(sess, str(tmp_path / "dict"))
        np.testing.assert_array_equal(sess.run(fresh), [1.0, 2.0])
    with pytest.raises(ValueError, match="At least two variables have the same name: a"):
        tf.train.Saver([a, a])
    with pytest.raises(TypeError, match="is not a Variable"):
        tf.train.Saver([tf.constant(1.0)])
    tf.reset_default_graph()
    with pytest.raises(ValueError, match="No variables to save"):
        tf.train.Saver()
    empty = tf.train.Saver(allow_empty=True)
    with tf.Session() as sess:
        assert empty.save(sess, str(tmp_path / "nothing")) is None
        assert empty.restore(sess, str(tmp_path / "nothing")) is None
    assert not (tmp_path / "nothing.safetensors").exists()


def test_restore_errors_name_the_file_the_variable_and_the_problem(tmp_path):
    write_safetensors(
        tmp_path / "m.safetensors",
        {"W": np.zeros((2, 3), np.float32), "b": np.zeros(3), "k": np.zeros(4, np.int32)},
    )
    path = str(tmp_path / "m.safetensors")
    V = tf.Variable(np.ones(2, np.float32), name="V")
    W32 = tf.Variable(np.ones((3, 2), np.float32), name="W")
    b32 = tf.Variable(np.ones(3, np.float32), name="b")
    k = tf.Variable(np.ones((2, 2), np.int32), name="k")
    W_ok = tf.Variable(np.ones((2, 3), np.float32), name="W_ok")
    failed = f"Restoring from checkpoint {path} failed"
    shapes = "lhs shape= [3, 2] rhs shape= [2, 3]"
    cases = [
        ({"W": W_ok, "V": V}, tf.errors.NotFoundError, f"{failed}: Key V not found in checkpoint"),
        (
            [b32],
            tf.errors.InvalidArgumentError,
            "tensor_name = b; expected dtype float does not equal original dtype double",
        ),
        (
            [W32],
            tf.errors.InvalidArgumentError,
            f"variable W: Assign requires shapes of both tensors to match. {shapes}",
        ),
    ]
    for var_list, error, message in cases:
        with tf.Session() as sess, pytest.raises(error) as info:
            tf.train.Saver(var_list).restore(sess, str(tmp_path / "m"))
        assert message in str(info.value) and path in str(info.value)
        assert sess.initialized_variables() == set()  # all or nothing
    with tf.Session() as sess:
        tf.train.Saver([W32, k], reshape=True).restore(sess, str(tmp_path / "m"))
        assert sess.run(k).shape == (2, 2) and sess.run(W32).shape == (3, 2)
    with tf.Session() as sess:
        with pytest.raises(ValueError, match="The passed save_path is not a valid checkpoint: "):
            tf.train.Saver([V]).restore(sess, str(tmp_path / "missing"))
        with pytest.raises(ValueError, match="Can't load save_path when it is None"):
            tf.train.Saver([V]).restore(sess, None)


def test_save_errors(tmp_path):
    V = tf.Variable(np.ones(2, np.float32), name="V")
    saver = tf.train.Saver([V])
    with tf.Session() as sess:
        with pytest.raises(tf.errors.FailedPreconditionError, match="uninitialized value V"):
            saver.save(sess, str(tmp_path / "m"))
        sess.run(V.initializer)
        with pytest.raises(ValueError, match="Parent directory of .* doesn't exist, can't save"):
            saver.save(sess, str(tmp_path / "no" / "m"))
        with pytest.raises(TypeError, match="'sess' must be a Session"):
            saver.save(object(), str(tmp_path / "m"))
    other = tf.Graph()
    with other.as_default(), tf.Session(graph=other) as sess:
        with pytest.raises(ValueError, match="Variable V is not in the graph of the session"):
            saver.save(sess, str(tmp_path / "m"))
    assert list(tmp_path.iterdir()) == []


# -- the writer and reader directly ---------------------------------------------------------------
def test_writer_checks_its_input_and_leaves_nothing_behind(tmp_path, safetensors):
    with pytest.raises(ValueError, match="tensor 'h' has dtype float16"):
        write_safetensors(tmp_path / "x.safetensors", {"h": np.zeros(2, np.float16)})
    with pytest.raises(ValueError, match="reserved"):
        write_safetensors(tmp_path / "x.safetensors", {"__metadata__": np.zeros(2)})
    with pytest.raises(ValueError, match="NUL"):
        write_safetensors(tmp_path / "x.safetensors", {"a\0b": np.zeros(2)})
    with pytest.raises(TypeError, match="metadata value of 'step' must be a str"):
        write_safetensors(tmp_path / "x.safetensors", {"a": np.zeros(2)}, {"step": 3})
    assert list(tmp_path.iterdir()) == []
    # big-endian and non-contiguous input is written little-endian and C-ordered
    source = np.arange(12, dtype=">i4").reshape(3, 4)[:, ::2]
    write_safetensors(tmp_path / "x.safetensors", {"a": source})
    np.testing.assert_array_equal(
        safetensors.numpy.load_file(str(tmp_path / "x.safetensors"))["a"], source
    )
    assert list(tmp_path.iterdir()) == [tmp_path / "x.safetensors"]


def test_reader_api(tmp_path):
    write_safetensors(tmp_path / "r.safetensors", {"a": np.ones(3), "z": np.zeros((), bool)})
    with CheckpointReader(tmp_path / "r.safetensors") as reader:
        assert reader.get_variable_to_shape_map() == {"a": [3], "z": []}
        assert reader.get_variable_to_dtype_map() == {"a": tf.float64, "z": tf.bool}
        assert reader.has_tensor("a") and not reader.has_tensor("b")
        assert reader.get_tensor("z").shape == () and reader.get_tensor("z").dtype == bool
        with pytest.raises(tf.errors.NotFoundError, match="Key b not found in checkpoint"):
            reader.get_tensor("b")
    with pytest.raises(tf.errors.NotFoundError, match="does not exist"):
        CheckpointReader(tmp_path / "none.safetensors")


def test_state_file_text_format():
    odd = 'a "quoted"\\path\n\tcaf\u00e9'
    state = tf.train.CheckpointState(odd, ["m-1", odd])
    text = format_checkpoint_state(state)
    assert text.splitlines()[0] == r'model_checkpoint_path: "a \"quoted\"\\path\n\tcaf\303\251"'
    assert parse_checkpoint_state(text) == state
    tf_written = (
        "# a comment\nmodel_checkpoint_path: 'm-2'\nall_model_checkpoint_paths: \"m-1\"\n"
        'all_model_checkpoint_paths: "m-" "2"\nall_model_checkpoint_timestamps: 1.5e9\n'
        "all_model_checkpoint_timestamps: 1.6e9\nlast_preserved_timestamp: 1699999999.25\n"
    )
    parsed = parse_checkpoint_state(tf_written)
    assert parsed.model_checkpoint_path == "m-2"
    assert parsed.all_model_checkpoint_paths == ["m-1", "m-2"]
    assert parsed.all_model_checkpoint_timestamps == [1.5e9, 1.6e9]
    assert parsed.last_preserved_timestamp == 1699999999.25
    for bad, where in [('bogus: "x"\n', "line 1: unexpected field bogus"),
                       ('model_checkpoint_path: "x\n', "line 1: cannot parse")]:  # fmt: skip
        with pytest.raises(ValueError, match=where):
            parse_checkpoint_state(bad)


def test_unreadable_state_file_is_ignored_as_tf_does(tmp_path, caplog):
    write_safetensors(tmp_path / "m-1.safetensors", {"a": np.ones(1)})
    (tmp_path / "checkpoint").write_text('model_checkpoint_path: "m-1')
    logger = logging.getLogger("tfc")  # tfc's logger need not propagate to the root
    logger.addHandler(caplog.handler)
    try:
        assert tf.train.latest_checkpoint(str(tmp_path)) is None
    finally:
        logger.removeHandler(caplog.handler)
    assert "checkpoint state ignored" in caplog.text
    (tmp_path / "checkpoint").write_text('model_checkpoint_path: "m-1"\n')
    assert tf.train.latest_checkpoint(str(tmp_path)) == str(tmp_path / "m-1")
    (tmp_path / "m-1.safetensors").unlink()
    assert tf.train.latest_checkpoint(str(tmp_path)) is None  # named, but gone


# -- atomicity: a writer killed in the middle of a save ------------------------------------------
# The writers run as child processes forked by one server per module, which imports tfc once:
# each child is a fresh process (its own pid, its own Saver, a default graph of its own), as a
# process started from scratch is, without the second of Python and tfc start-up each pays.
FORK_SERVER = textwrap.dedent(
    """
    import os, sys, time, traceback
    import numpy as np
    import tfc as tf

    SERVER = os.getpid()


    def pause():
        print("PAUSED", flush=True)
        while os.getppid() == SERVER:  # the test SIGKILLs this process here
            time.sleep(0.05)
        os._exit(3)  # the server (the test) is gone


    def killed_writer(directory, stage, second_step):
        second_step = int(second_step)
        big = tf.Variable(tf.zeros([1 << 20]), name="big")  # 4 MiB: four 1 MiB writes
        saver = tf.train.Saver()
        sess = tf.Session()
        sess.write_variable("big", np.full(1 << 20, 1.0, np.float32))
        print(saver.save(sess, os.path.join(directory, "model.ckpt"), global_step=1), flush=True)
        sess.write_variable("big", np.full(1 << 20, 2.0, np.float32))

        real_write, real_fsync, calls = os.write, os.fsync, {"write": 0, "fsync": 0}

        def write(fd, data):
            calls["write"] += 1
            if stage == "mid-data" and calls["write"] == 3:  # header + 1 MiB are on disk
                pause()
            return real_write(fd, data)

        def fsync(fd):
            calls["fsync"] += 1
            # fsyncs: 1 the data file, 2 its directory after the rename, 3 the state file
            if (stage, calls["fsync"]) in (("before-rename", 1), ("before-state", 3)):
                pause()
            return real_fsync(fd)

        os.write, os.fsync = write, fsync
        saver.save(sess, os.path.join(directory, "model.ckpt"), global_step=second_step)
        print("NOT KILLED", flush=True)


    def killed_loop(directory, step):
        v = tf.Variable(tf.zeros([1 << 18]), name="v")  # 1 MiB: saves take a while
        saver = tf.train.Saver(max_to_keep=3)
        with tf.Session() as sess:
            sess.run(v.initializer)
            step = int(step)
            print("READY", flush=True)
            while True:
                step += 1
                saver.save(sess, os.path.join(directory, "model.ckpt"), global_step=step)


    for line in iter(sys.stdin.readline, ""):
        name, *args = line.split()
        pid = os.fork()
        if pid == 0:
            status = 0
            try:
                print("PID", os.getpid(), flush=True)
                globals()[name](*args)
            except BaseException:
                traceback.print_exc()
                status = 1
            finally:
                sys.stdout.flush()
                sys.stderr.flush()
                os._exit(status)  # never back into the server's loop
        _, status = os.waitpid(pid, 0)  # reaped: its pid is gone before the next one starts
        print("ENDED", os.WTERMSIG(status) if os.WIFSIGNALED(status) else 0, flush=True)
    """
)


@pytest.fixture(scope="module")
def fork_server(tmp_path_factory):
    """A server forking FORK_SERVER's functions on request: `start(name, *args)` returns the
    child's pid, `line()` reads the next line the child (or the server) prints."""
    script = tmp_path_factory.mktemp("fork") / "server.py"
    script.write_text(FORK_SERVER)
    env = dict(os.environ, PYTHONPATH=str(REPO))
    proc = subprocess.Popen([sys.executable, str(script)], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, text=True, env=env)  # fmt: skip

    class Server:
        def line(self) -> str:
            return proc.stdout.readline().strip()

        def start(self, name: str, *args) -> int:
            proc.stdin.write(" ".join([name, *map(str, args)]) + "\n")
            proc.stdin.flush()
            first = self.line()
            assert first.startswith("PID "), first
            return int(first.split()[1])

        def kill(self, pid: int) -> int:
            """SIGKILL the child (if it still runs); the signal that ended it."""
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            while not (last := self.line()).startswith("ENDED"):
                assert last, "the fork server ended"
            return int(last.split()[1])

    yield Server()
    proc.stdin.close()
    proc.kill()
    proc.wait(timeout=30)


@pytest.mark.parametrize("second_step", [2, 1], ids=["new-prefix", "same-prefix"])
@pytest.mark.parametrize("stage", ["mid-data", "before-rename", "before-state"])
def test_a_writer_killed_mid_save_leaves_the_previous_checkpoint(
    fork_server, tmp_path, stage, second_step
):
    """Kill the second of two saves at a chosen point: the first stays whole, readable and
    named by the state file, even when the second save rewrites the same checkpoint."""
    ckpt = tmp_path / "ckpt"
    ckpt.mkdir()
    pid = fork_server.start("killed_writer", ckpt, stage, second_step)
    try:
        first = fork_server.line()
        assert first == str(ckpt / "model.ckpt-1")
        assert fork_server.line() == "PAUSED"
        temps = [p for p in ckpt.iterdir() if ".tmp-" in p.name]
        if stage == "mid-data":  # the new file is half written
            assert len(temps) == 1 and 0 < temps[0].stat().st_size < 4 << 20
    finally:
        ended_by = fork_server.kill(pid)
    assert ended_by == signal.SIGKILL

    # the state file still names checkpoint 1, which is whole and restores; it holds the
    # second save's values only where that save had renamed its complete file into place
    assert tf.train.latest_checkpoint(str(ckpt)) == first
    replaced = stage == "before-state" and second_step == 1
    big = tf.Variable(tf.zeros([1 << 20]), name="big")
    with tf.Session() as sess:
        tf.train.Saver().restore(sess, first)
        assert np.all(sess.run(big) == (2.0 if replaced else 1.0))
    new = ckpt / "model.ckpt-2.safetensors"
    if stage == "before-state" and second_step == 2:  # complete, just not yet listed
        assert np.all(read_safetensors(new)[0]["big"] == 2.0)
    else:
        assert not new.exists()
    # a new save after the crash works, and removes the stray temporary file and the
    # checkpoint the state file never named
    with tf.Session() as sess:
        sess.write_variable("big", np.full(1 << 20, 3.0, np.float32))
        prefix = tf.train.Saver().save(sess, str(ckpt / "model.ckpt"), global_step=3)
    assert tf.train.latest_checkpoint(str(ckpt)) == prefix
    assert sorted(p.name for p in ckpt.iterdir()) == [
        "checkpoint", "model.ckpt-1.safetensors", "model.ckpt-3.safetensors"
    ]  # fmt: skip


# -- what interrupted saves leave is removed by the next save ---------------------------------
def _dead_pid():
    """The pid of a process that has ended."""
    proc = subprocess.Popen(["true"])
    proc.wait()
    return proc.pid


def leftovers(directory, saver_step):
    """A checkpoint directory as interrupted saves leave it: the state file names model.ckpt-3
    to -5; -1 (deleted too late) and -7 (saved, never named) are orphans; temporaries of a
    writer that is gone (C's and Python's names), and things that must stay: a temporary of a
    running process, another name's checkpoint, a file that only looks like a temporary."""
    for step in (3, 4, 5):
        saver_step(step)
    for orphan in (1, 7):
        (directory / f"model.ckpt-{orphan}.safetensors").write_bytes(
            (directory / "model.ckpt-5.safetensors").read_bytes()
        )
    dead = _dead_pid()
    stale = [f"checkpoint.tmp-{dead}-1", f"model.ckpt-8.safetensors.tmp-{dead}-7",
             f"model.ckpt-8.safetensors.tmp-{dead}-0a1b2c3d"]  # fmt: skip
    kept = [f"model.ckpt-9.safetensors.tmp-{os.getppid()}-1", "other-2.safetensors",
            "notes.tmp-x", "model.ckpt-x.safetensors"]  # fmt: skip
    for name in stale + kept:
        (directory / name).write_bytes(b"partial")
    return stale, kept


@pytest.mark.parametrize("max_to_keep", [3, None])
def test_a_first_save_removes_what_interrupted_saves_left(tmp_path, max_to_keep):
    v = tf.Variable(np.arange(3, dtype=np.float32), name="v")
    with tf.Session() as sess:
        sess.run(v.initializer)
        first = tf.train.Saver(max_to_keep=3)
        stale, kept = leftovers(
            tmp_path, lambda s: first.save(sess, str(tmp_path / "model.ckpt"), global_step=s)
        )
        orphans = ["model.ckpt-1.safetensors", "model.ckpt-7.safetensors"]
        # a new process's Saver: its first save cleans up and continues the state's list
        second = tf.train.Saver(max_to_keep=max_to_keep)
        second.save(sess, str(tmp_path / "model.ckpt"), global_step=6)
    names = sorted(p.name for p in tmp_path.iterdir())
    if max_to_keep:  # 3 rotated out: the newest three are kept, as in one process
        listed = [f"model.ckpt-{s}" for s in (4, 5, 6)]
        assert names == sorted(["checkpoint", *(f"{n}.safetensors" for n in listed), *kept])
    else:  # keep all: no checkpoint file is a leftover, only temporaries go
        listed = ["model.ckpt-6"]
        steps = (1, 3, 4, 5, 6, 7)
        assert names == sorted(["checkpoint", *(f"model.ckpt-{s}.safetensors" for s in steps),
                                *kept])  # fmt: skip
    state = tf.train.get_checkpoint_state(str(tmp_path))
    assert [os.path.basename(p) for p in state.all_model_checkpoint_paths] == listed
    assert not any((tmp_path / n).exists() for n in stale)
    assert max_to_keep is None or not any((tmp_path / n).exists() for n in orphans)


def test_saves_killed_again_and_again_leave_nothing_behind(fork_server, tmp_path):
    """The issue's 30 SIGKILLs during saves, bounded: each restart cleans what the killed
    process left, so temporaries and orphans never pile up."""
    ckpt = tmp_path / "ckpt"
    ckpt.mkdir()
    rng = np.random.default_rng(0)
    for k in range(6):
        pid = fork_server.start("killed_loop", ckpt, 1000 * k)
        try:
            assert fork_server.line() == "READY"
            time.sleep(float(rng.uniform(0.2, 0.6)))
        finally:
            ended_by = fork_server.kill(pid)
        assert ended_by == signal.SIGKILL
    v = tf.Variable(tf.zeros([1 << 18]), name="v")
    with tf.Session() as sess:
        sess.run(v.initializer)
        tf.train.Saver(max_to_keep=3).save(sess, str(ckpt / "model.ckpt"), global_step=9999)
    state = tf.train.get_checkpoint_state(str(ckpt))
    listed = {os.path.basename(p) + ".safetensors" for p in state.all_model_checkpoint_paths}
    files = {p.name for p in ckpt.iterdir()} - {"checkpoint"}
    assert files == listed and len(listed) <= 3, (files, listed)
