"""Philox-4x32-10: the C runtime and tfc.philox against Random123's known answers and each other."""

import subprocess

import numpy as np
import pytest

from tfc.backend.cc import compiler, runtime_dir
from tfc.ops import philox

# Random123's kat_vectors for philox4x32 with 10 rounds: counter words, key words, result words
KNOWN_ANSWERS = [
    ((0, 0, 0, 0), (0, 0), (0x6627E8D5, 0xE169C58D, 0xBC57AC4C, 0x9B00DBD8)),
    ((0xFFFFFFFF,) * 4, (0xFFFFFFFF,) * 2, (0x408F276D, 0x41C83B0E, 0xA20BC7C6, 0x6D5451FD)),
    (
        (0x243F6A88, 0x85A308D3, 0x13198A2E, 0x03707344),
        (0xA4093822, 0x299F31D0),
        (0xD16CFE09, 0x94FDCCEB, 0x5001E420, 0x24126EA1),
    ),
]

# Reads commands from stdin: "block c0 c1 c2 c3 k0 k1" prints the Philox block;
# "<distribution> seed seed2 used n" runs tfc_random_<distribution> on that state and prints
# the values (hex floats, exact) and the state's new sample count.
DRIVER = r"""
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include "tfc_philox.h"

static float f32[4096];
static double f64[4096];
static const struct { const char *name; void (*fn)(float *, int64_t, uint64_t *); } F32[] = {
    {"uniform_f32", tfc_random_uniform_f32},
    {"normal_f32", tfc_random_normal_f32},
    {"truncated_normal_f32", tfc_random_truncated_normal_f32},
};
static const struct { const char *name; void (*fn)(double *, int64_t, uint64_t *); } F64[] = {
    {"uniform_f64", tfc_random_uniform_f64},
    {"normal_f64", tfc_random_normal_f64},
    {"truncated_normal_f64", tfc_random_truncated_normal_f64},
};

int main(void) {
    char cmd[32];
    while (scanf("%31s", cmd) == 1) {
        if (strcmp(cmd, "block") == 0) {
            uint32_t c[4], k[2], o[4];
            if (scanf("%" SCNu32 " %" SCNu32 " %" SCNu32 " %" SCNu32 " %" SCNu32 " %" SCNu32,
                      &c[0], &c[1], &c[2], &c[3], &k[0], &k[1]) != 6) return 2;
            tfc_philox_block(c, k, o);
            printf("%" PRIu32 " %" PRIu32 " %" PRIu32 " %" PRIu32 "\n", o[0], o[1], o[2], o[3]);
            continue;
        }
        uint64_t state[3];
        int64_t n;
        if (scanf("%" SCNu64 " %" SCNu64 " %" SCNu64 " %" SCNd64, &state[0], &state[1],
                  &state[2], &n) != 4 || n < 0 || n > 4096) return 2;
        int found = 0;
        for (int k = 0; k < 3; ++k) {
            if (strcmp(cmd, F32[k].name) == 0) F32[k].fn(f32, n, state), found = 32;
            if (strcmp(cmd, F64[k].name) == 0) F64[k].fn(f64, n, state), found = 64;
        }
        if (!found) return 3;
        for (int64_t i = 0; i < n; ++i) printf("%a ", found == 32 ? (double)f32[i] : f64[i]);
        printf("%" PRIu64 "\n", state[2]);
    }
    return 0;
}
"""


@pytest.fixture(scope="module")
def driver(tmp_path_factory):
    """Runs the compiled driver on a list of command lines; returns its output lines."""
    root = tmp_path_factory.mktemp("philox")
    source, binary = root / "driver.c", root / "driver"
    source.write_text(DRIVER)
    include = runtime_dir() / "include"
    cmd = [compiler(), "-std=c11", "-O2", "-Wall", "-Wextra", "-Werror", f"-I{include}"]
    subprocess.run([*cmd, str(source), "-o", str(binary), "-lm"], check=True)

    def run(lines: list[str]) -> list[str]:
        result = subprocess.run(
            [str(binary)], input="\n".join(lines) + "\n", capture_output=True, text=True
        )
        assert result.returncode == 0, result.stderr
        return result.stdout.splitlines()

    return run


def _block_lines(counters: np.ndarray, keys: np.ndarray) -> list[str]:
    return ["block " + " ".join(str(int(v)) for v in (*c, *k)) for c, k in zip(counters, keys)]


def test_c_block_matches_known_answers(driver):
    counters = np.array([c for c, _, _ in KNOWN_ANSWERS], dtype=np.uint32)
    keys = np.array([k for _, k, _ in KNOWN_ANSWERS], dtype=np.uint32)
    got = [tuple(int(w) for w in line.split()) for line in driver(_block_lines(counters, keys))]
    assert got == [want for _, _, want in KNOWN_ANSWERS]


@pytest.mark.parametrize("ctr,key,want", KNOWN_ANSWERS)
def test_numpy_blocks_match_known_answers(ctr, key, want):
    got = philox.philox_blocks(np.array([ctr], dtype=np.uint32), key)
    assert got.dtype == np.uint32
    assert tuple(int(w) for w in got[0]) == want


def test_c_and_numpy_blocks_agree_on_random_counters_and_keys(driver):
    rng = np.random.default_rng(20240611)
    counters = rng.integers(0, 2**32, size=(300, 4), dtype=np.uint64).astype(np.uint32)
    keys = rng.integers(0, 2**32, size=(300, 2), dtype=np.uint64).astype(np.uint32)
    got = np.array(
        [[int(w) for w in line.split()] for line in driver(_block_lines(counters, keys))],
        dtype=np.uint32,
    )
    want = np.concatenate(
        [philox.philox_blocks(c[None, :], (int(k[0]), int(k[1]))) for c, k in zip(counters, keys)]
    )
    np.testing.assert_array_equal(got, want)
    assert len(np.unique(got[:, 0])) > 290  # the outputs are not degenerate


# States whose sample count is about to carry out of its low 64 bits: the 128-bit counter
# arithmetic (PhiloxRandom::Skip) must carry into seed2's half in C and NumPy alike.
STATES = [(87654321, 7, 0), (5, 2**63 + 3, 2**64 - 256 * 3), (2**40 + 1, 2**64 - 1, 2**64 - 1)]
DISTRIBUTIONS = ["uniform", "normal", "truncated_normal"]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_c_distributions_match_numpy_twins_across_counter_carry(driver, dtype):
    tag = "f32" if dtype == "float32" else "f64"
    cases = [(d, s, n) for d in DISTRIBUTIONS for s in STATES for n in (1, 7, 64)]
    lines = [f"{d}_{tag} {s[0]} {s[1]} {s[2]} {n}" for d, s, n in cases]
    for (dist, state, n), line in zip(cases, driver(lines)):
        fields = line.split()
        got = np.array([float.fromhex(v) for v in fields[:-1]]).astype(dtype)
        twin_state = np.array(state, dtype=np.uint64)
        want = getattr(philox, dist)(twin_state, n, np.dtype(dtype))
        assert int(fields[-1]) == int(twin_state[2]), f"{dist} {state} {n}: samples reserved"
        if dist == "uniform":
            np.testing.assert_array_equal(got, want, err_msg=f"{dist} {state} {n}")
        else:  # sin/log of libm and NumPy may differ in the last bit
            np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-7, err_msg=f"{dist} {n}")
        if dist == "truncated_normal":
            assert np.all(np.abs(got) < 2.0)
