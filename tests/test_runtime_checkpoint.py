"""runtime/src checkpoint I/O: C and Python read each other's files; corrupt ones are refused."""

import os
import subprocess

import numpy as np
import pytest
from test_checkpoint import _VALID, CORRUPTIONS, corrupt_file, leftovers

import tfc as tf
from tfc.backend.cc import compiler, runtime_dir
from tfc.io.checkpoint import CorruptCheckpointError, read_safetensors, write_safetensors

# A command-line driver: each command exercises one entry point and prints what it got, or
# "ERR <code> <message>" and exits 1.
DRIVER = r"""
#include "tfc_runtime.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static float W[6];
static double B[3];
static int64_t STEP;
static int32_t COUNTS[4];
static bool MASK[4];
static float EMPTY[1];

static int fixed_tensors(tfc_checkpoint_tensor *t) {
    for (int i = 0; i < 6; ++i) W[i] = 0.5f * (float)i - 1.0f;
    for (int i = 0; i < 3; ++i) B[i] = 0.25 * i + 1e-3;
    STEP = INT64_C(1234567890123);
    int32_t counts[4] = {-1, 2, -3, 2147483647};
    memcpy(COUNTS, counts, sizeof counts);
    bool mask[4] = {true, false, false, true};
    memcpy(MASK, mask, sizeof mask);
    memset(t, 0, 6 * sizeof *t);
    t[0] = (tfc_checkpoint_tensor){"W", TFC_CHECKPOINT_F32, 2, {2, 3}, W, sizeof W};
    t[1] = (tfc_checkpoint_tensor){"dense/bias", TFC_CHECKPOINT_F64, 1, {3}, B, sizeof B};
    t[2] = (tfc_checkpoint_tensor){"global_step", TFC_CHECKPOINT_I64, 0, {0}, &STEP, 8};
    t[3] = (tfc_checkpoint_tensor){"counts", TFC_CHECKPOINT_I32, 2, {2, 2}, COUNTS, 16};
    t[4] = (tfc_checkpoint_tensor){"mask", TFC_CHECKPOINT_BOOL, 1, {4}, MASK, 4};
    t[5] = (tfc_checkpoint_tensor){"empty", TFC_CHECKPOINT_F32, 2, {0, 5}, EMPTY, 0};
    return 6;
}

static int fail(int rc, const char *msg) {
    printf("ERR %d %s\n", rc, msg);
    return 1;
}

/* "name:DTYPE:d0,d1" (no dims for a scalar) */
static int parse_spec(char *spec, tfc_checkpoint_tensor *t) {
    static const char *codes[] = {"F32", "F64", "I32", "I64", "BOOL"};
    static const int dtypes[] = {TFC_CHECKPOINT_F32, TFC_CHECKPOINT_F64, TFC_CHECKPOINT_I32,
                                 TFC_CHECKPOINT_I64, TFC_CHECKPOINT_BOOL};
    static const int sizes[] = {4, 8, 4, 8, 1};
    char *c1 = strchr(spec, ':'), *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
    if (!c2) return -1;
    *c1 = *c2 = '\0';
    memset(t, 0, sizeof *t);
    t->name = spec;
    int size = 0;
    for (int i = 0; i < 5; ++i)
        if (strcmp(c1 + 1, codes[i]) == 0) t->dtype = dtypes[i], size = sizes[i];
    int64_t count = 1;
    for (char *d = c2 + 1; *d;) {
        t->dims[t->rank] = strtoll(d, &d, 10);
        count *= t->dims[t->rank++];
        if (*d == ',') ++d;
    }
    t->nbytes = count * size;
    t->data = malloc(t->nbytes > 0 ? (size_t)t->nbytes : 1);
    return 0;
}

int main(int argc, char **argv) {
    char msg[1024] = "";
    tfc_error err = {msg, sizeof msg, NULL};
    tfc_checkpoint_tensor t[64];
    char out[4096];
    int rc;
    if (argc < 2) return 2;
    const char *cmd = argv[1];
    if (strcmp(cmd, "write") == 0 && argc == 4) {
        int n = fixed_tensors(t);
        rc = tfc_checkpoint_write(argv[2], t, n, strcmp(argv[3], "-") ? argv[3] : NULL, &err);
        if (rc != TFC_OK) return fail(rc, msg);
        printf("OK\n");
    } else if (strcmp(cmd, "read") == 0 && argc >= 3 && argc - 3 <= 64) {
        int n = argc - 3;
        for (int i = 0; i < n; ++i)
            if (parse_spec(argv[3 + i], &t[i]) != 0) return 2;
        rc = tfc_checkpoint_read(argv[2], t, n, &err);
        if (rc == TFC_OK)
            for (int i = 0; i < n; ++i) {
                printf("%s ", t[i].name);
                for (int64_t k = 0; k < t[i].nbytes; ++k)
                    printf("%02x", ((unsigned char *)t[i].data)[k]);
                printf("\n");
            }
        for (int i = 0; i < n; ++i) free(t[i].data);
        if (rc != TFC_OK) return fail(rc, msg);
    } else if (strcmp(cmd, "meta") == 0 && argc == 4) {
        rc = tfc_checkpoint_read_metadata(argv[2], argv[3], out, sizeof out, &err);
        if (rc != TFC_OK) return fail(rc, msg);
        printf("%s\n", out);
    } else if (strcmp(cmd, "save") == 0 && argc == 6) {
        int n = fixed_tensors(t);
        STEP = strtoll(argv[4], NULL, 10);
        rc = tfc_checkpoint_save(argv[2], argv[3], STEP, t, n, atoi(argv[5]), out, sizeof out,
                                 &err);
        if (rc != TFC_OK) return fail(rc, msg);
        printf("%s\n", out);
    } else if (strcmp(cmd, "clean") == 0 && argc == 5) {
        int removed = -1;
        rc = tfc_checkpoint_clean(argv[2], argv[3], atoi(argv[4]), &removed, &err);
        if (rc != TFC_OK) return fail(rc, msg);
        printf("removed %d\n", removed);
    } else if (strcmp(cmd, "latest") == 0 && argc == 3) {
        rc = tfc_checkpoint_latest(argv[2], out, sizeof out, &err);
        if (rc != TFC_OK) return fail(rc, msg);
        printf("%s\n", out);
    } else if (strcmp(cmd, "state") == 0 && argc == 3) {
        tfc_checkpoint_state st;
        rc = tfc_checkpoint_state_read(argv[2], &st, &err);
        if (rc != TFC_OK) return fail(rc, msg);
        printf("%s\n", st.model_checkpoint_path ? st.model_checkpoint_path : "(none)");
        for (int i = 0; i < st.n_all; ++i) printf("%s\n", st.all_model_checkpoint_paths[i]);
        tfc_checkpoint_state_free(&st);
    } else if (strcmp(cmd, "write-state") == 0 && argc >= 4) {
        tfc_checkpoint_state st = {argv[3], argv + 4, argc - 4};
        rc = tfc_checkpoint_state_write(argv[2], &st, &err);
        if (rc != TFC_OK) return fail(rc, msg);
        printf("OK\n");
    } else if (strcmp(cmd, "write-bad") == 0 && argc == 4) {
        /* ill-formed requests: each must be refused before a file is created */
        int n = fixed_tensors(t);
        const char *meta = NULL;
        if (strcmp(argv[3], "nbytes") == 0) t[0].nbytes = 20;
        if (strcmp(argv[3], "dtype") == 0) t[1].dtype = 77;
        if (strcmp(argv[3], "rank") == 0) t[1].rank = TFC_CHECKPOINT_MAX_RANK + 1;
        if (strcmp(argv[3], "negative-dim") == 0) t[0].dims[1] = -3;
        if (strcmp(argv[3], "duplicate") == 0) t[3].name = "W";
        if (strcmp(argv[3], "reserved") == 0) t[2].name = "__metadata__";
        if (strcmp(argv[3], "null-data") == 0) t[0].data = NULL;
        if (strcmp(argv[3], "metadata-json") == 0) meta = "{\"a\": ";
        if (strcmp(argv[3], "metadata-number") == 0) meta = "{\"a\": 1}";
        if (strcmp(argv[3], "metadata-duplicate") == 0) meta = "{\"a\": \"1\", \"a\": \"2\"}";
        if (strcmp(argv[3], "bad-utf8-name") == 0) t[0].name = "W\xff";
        rc = tfc_checkpoint_write(argv[2], t, n, meta, &err);
        if (rc != TFC_OK) return fail(rc, msg);
        printf("OK\n");
    } else {
        return 2;
    }
    return 0;
}
"""

# The tensors the driver writes, as NumPy sees them.
FIXED = {
    "W": (0.5 * np.arange(6, dtype=np.float32) - 1.0).reshape(2, 3),
    "dense/bias": 0.25 * np.arange(3) + 1e-3,
    "global_step": np.array(1234567890123, dtype=np.int64),
    "counts": np.array([[-1, 2], [-3, 2147483647]], dtype=np.int32),
    "mask": np.array([True, False, False, True]),
    "empty": np.zeros((0, 5), dtype=np.float32),
}
SPECS = ["W:F32:2,3", "dense/bias:F64:3", "global_step:I64:", "counts:I32:2,2", "mask:BOOL:4",
         "empty:F32:0,5"]  # fmt: skip
# The runtime's checkpoint I/O (runtime/src holds other parts too, some with a main of their own).
CHECKPOINT_SOURCES = [
    "tfc_file.c",
    "tfc_json.c",
    "tfc_safetensors_header.c",
    "tfc_safetensors.c",
    "tfc_safetensors_write.c",
    "tfc_checkpoint_state.c",
    "tfc_checkpoint.c",
]
CC_FLAGS = ["-std=c11", "-Wall", "-Wextra", "-Werror", "-pedantic"]
SANITIZE = ["-fsanitize=address,undefined", "-fno-sanitize-recover=all", "-fno-omit-frame-pointer"]


def _build(root, name, flags):
    include = runtime_dir() / "include"
    source = root / "driver.c"
    source.write_text(DRIVER)
    binary = root / name
    cmd = [compiler(), *CC_FLAGS, *flags, f"-I{include}", str(source)]
    cmd += [str(runtime_dir() / "src" / c_file) for c_file in CHECKPOINT_SOURCES]
    cmd += ["-o", str(binary), "-lm"]
    subprocess.run(cmd, check=True, capture_output=True, text=True)
    return binary


class Driver:
    def __init__(self, binary, env=None):
        self.binary = binary
        self.env = env

    def __call__(self, *args, ok=True):
        proc = subprocess.run(
            [str(self.binary), *map(str, args)],
            capture_output=True,
            text=True,
            errors="replace",  # messages quote names, which may be invalid UTF-8
            env=self.env,
            timeout=60,
        )
        # a sanitizer report is a failure whatever the exit status
        assert "Sanitizer" not in proc.stderr and "runtime error" not in proc.stderr, proc.stderr
        assert proc.returncode == (0 if ok else 1), (proc.returncode, proc.stdout, proc.stderr)
        return proc.stdout


@pytest.fixture(scope="module")
def drivers(tmp_path_factory):
    """The driver built plainly (-O2) and with AddressSanitizer + UBSan (-O1), both -Werror."""
    root = tmp_path_factory.mktemp("ckpt_driver")
    plain = Driver(_build(root, "plain", ["-O2"]))
    libasan = subprocess.run(
        [compiler(), "-print-file-name=libasan.so"], capture_output=True, text=True
    ).stdout.strip()
    if not os.path.isabs(libasan):
        return plain, None
    env = dict(os.environ, UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1")
    env["ASAN_OPTIONS"] = "detect_leaks=1:abort_on_error=0"
    sanitized = Driver(_build(root, "sanitized", ["-O1", "-g", *SANITIZE]), env)
    probe = subprocess.run([str(sanitized.binary)], capture_output=True, text=True, env=env)
    if "LeakSanitizer has encountered a fatal error" in probe.stderr:  # no ptrace here
        env["ASAN_OPTIONS"] = "detect_leaks=0:abort_on_error=0"
    return plain, sanitized


@pytest.fixture(params=["plain", "sanitized"])
def driver(request, drivers):
    plain, sanitized = drivers
    if request.param == "sanitized" and sanitized is None:
        pytest.skip("the C compiler has no AddressSanitizer runtime")
    return plain if request.param == "plain" else sanitized


def _hex_lines(arrays):
    return [f"{name} {np.ascontiguousarray(a).astype(a.dtype.newbyteorder('<')).tobytes().hex()}"
            for name, a in arrays.items()]  # fmt: skip


def test_c_writes_the_bytes_python_and_the_reference_write(driver, tmp_path, safetensors):
    path = tmp_path / "c.safetensors"
    assert driver("write", path, '{"global_step": "7", "format": "tfc"}') == "OK\n"
    arrays, metadata = read_safetensors(path)
    assert metadata == {"format": "tfc", "global_step": "7"}
    assert arrays.keys() == FIXED.keys()
    for name, want in FIXED.items():
        assert arrays[name].dtype == want.dtype and arrays[name].shape == want.shape, name
        np.testing.assert_array_equal(arrays[name], want)
    reference = safetensors.numpy.load_file(str(path))
    for name, want in FIXED.items():
        np.testing.assert_array_equal(reference[name], want)
    # the same tensors written by tfc's Python writer: the same file, byte for byte
    write_safetensors(tmp_path / "py.safetensors", FIXED, {"format": "tfc", "global_step": "7"})
    assert path.read_bytes() == (tmp_path / "py.safetensors").read_bytes()
    # and by the reference writer (one metadata key: its map order is unspecified)
    driver("write", tmp_path / "c1.safetensors", '{"format":"tfc"}')
    safetensors.numpy.save_file(
        dict(FIXED), str(tmp_path / "ref.safetensors"), metadata={"format": "tfc"}
    )
    assert (tmp_path / "c1.safetensors").read_bytes() == (tmp_path / "ref.safetensors").read_bytes()
    assert [p.name for p in tmp_path.iterdir() if ".tmp-" in p.name] == []


def test_c_reads_what_python_and_the_reference_wrote(driver, tmp_path, safetensors):
    write_safetensors(tmp_path / "py.safetensors", FIXED, {"format": "tfc", "global_step": "3"})
    safetensors.numpy.save_file(dict(FIXED), str(tmp_path / "ref.safetensors"))
    for name in ("py", "ref"):
        out = driver("read", tmp_path / f"{name}.safetensors", *SPECS)
        assert out.splitlines() == _hex_lines(FIXED)
    # a subset, in any order
    out = driver("read", tmp_path / "py.safetensors", "mask:BOOL:4", "W:F32:2,3")
    assert out.splitlines() == _hex_lines({"mask": FIXED["mask"], "W": FIXED["W"]})
    assert driver("meta", tmp_path / "py.safetensors", "global_step") == "3\n"
    out = driver("meta", tmp_path / "ref.safetensors", "global_step", ok=False)
    assert out.startswith("ERR 5 ") and "has no metadata 'global_step'" in out


@pytest.mark.parametrize(
    "spec, code, message",
    [
        ("V:F32:2,3", 5, "Key V not found in checkpoint"),
        ("W:F64:2,3", 3, "tensor_name = W; expected dtype double does not equal original dtype"),
        ("W:F32:3,2", 3, "lhs shape= [3, 2] rhs shape= [2, 3]"),
        ("W:F32:6", 3, "lhs shape= [6] rhs shape= [2, 3]"),
        ("global_step:I64:1", 3, "lhs shape= [1] rhs shape= []"),
    ],
)
def test_c_refuses_tensors_that_do_not_match(driver, tmp_path, spec, code, message):
    path = tmp_path / "model.ckpt-3.safetensors"
    write_safetensors(path, FIXED)
    out = driver("read", path, "mask:BOOL:4", spec, ok=False)
    assert out.startswith(f"ERR {code} Restoring from checkpoint {path} failed"), out
    assert message in out


@pytest.mark.parametrize(
    "case, message",
    [
        ("nbytes", "tensor 'W' has nbytes 20, but its dtype and dims make 24"),
        ("dtype", "tensor 'dense/bias' has unknown dtype code 77"),
        ("rank", "tensor 'dense/bias' has rank 17"),
        ("negative-dim", "tensor 'W' has negative dimension -3"),
        ("duplicate", "two tensors are named 'W'"),
        ("reserved", "'__metadata__' is reserved"),
        ("null-data", "tensor 'W' has no data buffer"),
        ("metadata-json", "metadata is not valid JSON"),
        ("metadata-number", "metadata value of 'a' is not a string"),
        ("metadata-duplicate", "metadata has duplicate key 'a'"),
        ("bad-utf8-name", "is not valid UTF-8"),
    ],
)
def test_c_writer_refuses_ill_formed_requests(driver, tmp_path, case, message):
    path = tmp_path / "x.safetensors"
    out = driver("write-bad", path, case, ok=False)
    assert out.startswith(f"ERR 3 checkpoint {path}") and message in out, out
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("case", sorted(CORRUPTIONS))
def test_c_refuses_corrupt_files_as_python_does(drivers, tmp_path, case):
    """Every corrupt file: code DATA_LOSS, the file and the problem named, no sanitizer report,
    and the very message Python's reader gives (JSON syntax errors: the same start)."""
    plain, sanitized = drivers
    path, problem = corrupt_file(tmp_path, case)
    with pytest.raises(CorruptCheckpointError) as info:
        read_safetensors(path)
    python_message = str(info.value)
    for driver in filter(None, (plain, sanitized)):
        out = driver("read", path, "W:F32:2,3", "b:F64:3", "flag:BOOL:2", ok=False)
        assert out.startswith("ERR 15 "), out
        message = out[len("ERR 15 ") :].rstrip("\n")
        assert message.startswith(f"checkpoint {path} ") and problem in message, message
        if "invalid JSON" in python_message:
            # the parsers word syntax errors differently; both must call them invalid JSON
            assert message.split("invalid JSON")[0] == python_message.split("invalid JSON")[0]
        else:
            assert message == python_message


def _mutations(base: bytes, count: int, seed: int):
    """Deterministic damage to a valid file: byte flips, truncations, header edits, appends."""
    rng = np.random.default_rng(seed)
    n = int.from_bytes(base[:8], "little")
    for _ in range(count):
        data = bytearray(base)
        kind = rng.integers(0, 4)
        if kind == 0:
            for _ in range(rng.integers(1, 4)):
                data[rng.integers(0, len(data))] = rng.integers(0, 256)
        elif kind == 1:
            data = data[: rng.integers(0, len(data))]
        elif kind == 2:
            data[rng.integers(8, 8 + n)] = rng.choice(list(b'{}[],:"0123456789-.eE \\uFIB'))
        else:
            data += rng.integers(0, 256, rng.integers(1, 9), dtype=np.uint8).tobytes()
        yield bytes(data)


def test_c_and_python_agree_on_damaged_files(drivers, tmp_path):
    """Differential fuzzing: each reader accepts exactly the files the other accepts, and the
    sanitized C reader never reads out of bounds, overflows or leaks, whatever the bytes."""
    plain, sanitized = drivers
    driver = sanitized or plain
    path = tmp_path / "f.safetensors"
    specs = ["W:F32:2,3", "b:F64:3", "flag:BOOL:2"]
    refused = 0
    for data in _mutations(_VALID, 150, seed=2024):
        path.write_bytes(data)
        try:
            read_safetensors(path)
            python_ok = True
        except CorruptCheckpointError:
            python_ok, refused = False, refused + 1
        proc = subprocess.run(
            [str(driver.binary), "read", str(path), *specs],
            capture_output=True,
            env=driver.env,
            timeout=60,
        )
        stderr = proc.stderr.decode(errors="replace")
        assert "Sanitizer" not in stderr and "runtime error" not in stderr, stderr
        out = proc.stdout.decode(errors="replace")
        # a damaged name makes a valid file without the requested tensor: accepted, not found
        c_ok = proc.returncode == 0 or out.startswith(("ERR 5 Restoring", "ERR 3 Restoring"))
        assert c_ok == python_ok, (data, out)
        if not c_ok:
            assert out.startswith(f"ERR 15 checkpoint {path} "), out
    assert 50 < refused < 150  # the damage is varied: some files stay valid


def test_c_saves_like_the_saver_and_python_restores(driver, tmp_path):
    ckpt = tmp_path / "run"
    ckpt.mkdir()
    prefixes = [driver("save", ckpt, "model.ckpt", step, 2).strip() for step in (10, 20, 30)]
    assert prefixes == [str(ckpt / f"model.ckpt-{s}") for s in (10, 20, 30)]
    assert sorted(p.name for p in ckpt.iterdir()) == [
        "checkpoint",
        "model.ckpt-20.safetensors",
        "model.ckpt-30.safetensors",
    ]
    assert (ckpt / "checkpoint").read_text() == (
        'model_checkpoint_path: "model.ckpt-30"\n'
        'all_model_checkpoint_paths: "model.ckpt-20"\n'
        'all_model_checkpoint_paths: "model.ckpt-30"\n'
    )
    assert tf.train.latest_checkpoint(str(ckpt)) == str(ckpt / "model.ckpt-30")
    assert driver("latest", ckpt) == f"{ckpt / 'model.ckpt-30'}\n"
    assert driver("meta", f"{prefixes[-1]}.safetensors", "global_step") == "30\n"

    # Python's Saver restores the native checkpoint into a graph with the same variables
    variables = {
        name: tf.Variable(np.zeros(a.shape, a.dtype), name=name.split("/")[-1])
        for name, a in FIXED.items()
    }
    saver = tf.train.Saver(variables, max_to_keep=2)
    with tf.Session() as sess:
        saver.restore(sess, tf.train.latest_checkpoint(str(ckpt)))
        got = sess.run(variables)
        for name, want in FIXED.items():
            want = np.array(30) if name == "global_step" else want
            np.testing.assert_array_equal(got[name], want)
        # ... and saves on top: the native side finds and reads Python's checkpoint
        saver.recover_last_checkpoints(
            tf.train.get_checkpoint_state(str(ckpt)).all_model_checkpoint_paths
        )
        sess.run(variables["W"].assign(variables["W"] * 2.0))
        saver.save(sess, str(ckpt / "model.ckpt"), global_step=40)
    assert driver("latest", ckpt) == f"{ckpt / 'model.ckpt-40'}\n"
    assert not (ckpt / "model.ckpt-20.safetensors").exists()
    want = dict(FIXED, W=FIXED["W"] * 2, global_step=np.array(30))
    out = driver("read", ckpt / "model.ckpt-40.safetensors", *SPECS)
    assert out.splitlines() == _hex_lines(want)
    # saving again continues the list the state file holds
    driver("save", ckpt, "model.ckpt", 50, 2)
    assert driver("state", ckpt).splitlines() == [
        "model.ckpt-50",
        str(ckpt / "model.ckpt-40"),
        "model.ckpt-50",
    ]
    assert not (ckpt / "model.ckpt-30.safetensors").exists()


def test_c_state_file_round_trip_and_errors(driver, tmp_path):
    odd = 'dir "quoted"/caf\u00e9\\x\tmodel'
    assert driver("write-state", tmp_path, odd, "a", odd) == "OK\n"
    state = tf.train.get_checkpoint_state(str(tmp_path))
    assert state.model_checkpoint_path == os.path.join(str(tmp_path), odd)
    assert driver("state", tmp_path).splitlines()[0] == odd
    tf.train.update_checkpoint_state(str(tmp_path), odd, ["b", odd])
    assert driver("state", tmp_path).splitlines()[1:] == ["b", odd]
    # TensorFlow's own state files carry timestamps and may use single quotes and comments
    (tmp_path / "checkpoint").write_text(
        "# written by TF\nmodel_checkpoint_path: 'm-2'\nall_model_checkpoint_paths: \"m-1\"\n"
        'all_model_checkpoint_paths: "m-" "2"\nall_model_checkpoint_timestamps: 1.5e9\n'
        "last_preserved_timestamp: 1699999999.25\n"
    )
    assert driver("state", tmp_path).splitlines() == ["m-2", "m-1", "m-2"]
    out = driver("latest", tmp_path, ok=False)
    assert out.startswith(f"ERR 5 checkpoint state file in {tmp_path} names m-2")
    (tmp_path / "checkpoint").write_text('model_checkpoint_path: "m-2"\nbogus: "x"\n')
    out = driver("state", tmp_path, ok=False)
    assert (
        out
        == f"ERR 15 checkpoint state file {tmp_path}/checkpoint line 2: unexpected field bogus\n"
    )
    (tmp_path / "checkpoint").write_text('model_checkpoint_path: "unterminated\n')
    assert "line 1: unterminated string" in driver("state", tmp_path, ok=False)
    out = driver("latest", tmp_path / "nowhere", ok=False)
    assert out.startswith("ERR 5 checkpoint state file") and "does not exist" in out


def test_c_reports_missing_files(driver, tmp_path):
    out = driver("read", tmp_path / "none.safetensors", "W:F32:2,3", ok=False)
    assert out == f"ERR 5 checkpoint {tmp_path / 'none.safetensors'} does not exist\n"
    out = driver("read", tmp_path, "W:F32:2,3", ok=False)
    assert out == f"ERR 3 checkpoint {tmp_path} is not a regular file\n"
    out = driver("write", tmp_path / "no" / "dir.safetensors", "-", ok=False)
    assert out.startswith("ERR 5 ") and "creating a temporary file failed" in out


@pytest.mark.parametrize("max_to_keep", [3, 0])
def test_c_removes_what_interrupted_saves_left(driver, tmp_path, max_to_keep):
    ckpt = tmp_path / "run"
    ckpt.mkdir()
    stale, kept = leftovers(ckpt, lambda s: driver("save", ckpt, "model.ckpt", s, 3))
    orphans = ["model.ckpt-1.safetensors", "model.ckpt-7.safetensors"]
    removed = len(stale) + (len(orphans) if max_to_keep else 0)
    assert driver("clean", ckpt, "model.ckpt", max_to_keep) == f"removed {removed}\n"
    named = [f"model.ckpt-{s}.safetensors" for s in (3, 4, 5)]
    left = sorted(p.name for p in ckpt.iterdir())
    assert left == sorted(["checkpoint", *named, *kept, *([] if max_to_keep else orphans)])
    assert driver("latest", ckpt) == f"{ckpt / 'model.ckpt-5'}\n"
    # nothing to do the second time; an absolute state file path names the same files
    driver("write-state", ckpt, str(ckpt / "model.ckpt-5"), str(ckpt / "model.ckpt-4"),
           "model.ckpt-5")  # fmt: skip
    assert driver("clean", ckpt, "model.ckpt", 3) == ("removed 1\n" if max_to_keep else
                                                       "removed 3\n")  # fmt: skip
    assert not (ckpt / "model.ckpt-3.safetensors").exists()
    assert (ckpt / "model.ckpt-4.safetensors").exists()
    # without a state file no checkpoint is taken for a leftover
    (ckpt / "checkpoint").unlink()
    assert driver("clean", ckpt, "model.ckpt", 3) == "removed 0\n"
    assert driver("clean", tmp_path / "absent", "model.ckpt", 3) == "removed 0\n"
