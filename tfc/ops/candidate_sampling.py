"""Candidate samplers: UniformCandidateSampler and LogUniformCandidateSampler (tf.nn's and
tf.random's uniform_candidate_sampler and log_uniform_candidate_sampler), the samplers behind
nce_loss and sampled_softmax_loss (tfc/ops/sampled_losses.py).

Each draws `num_sampled` classes in [0, range_max) from its Philox stream exactly as
TensorFlow's kernel does (a SimplePhilox over 2048 * num_sampled reserved 32-bit samples;
log-uniform: exp(double uniform * log1p(range_max)) - 1; uniform: a rejection-sampled 64-bit
integer), with `unique` drawing until that many distinct classes came up. The expected counts
are TF's: p * num_sampled, or 1 - (1 - p)^tries after `tries` draws for a unique batch. The
kernel keeps one byte per class in scratch memory (which classes came up).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

import tfc.ops.philox as philox
from tfc.ir import dtypes as _dt
from tfc.ir import errors
from tfc.ir.graph import Tensor, name_scope
from tfc.ir.tensor_shape import shape_str
from tfc.ops.constant import convert_to_tensor, is_tensor_like
from tfc.ops.flops import no_flops
from tfc.ops.kernels import Kernel, Param, ScanSpec, c_literal
from tfc.ops.random import seed_attrs
from tfc.ops.registry import VALUE_DEPENDENT_REASON, OpContext, OpDef, apply_op, register

__all__ = [
    "uniform_candidate_sampler",
    "log_uniform_candidate_sampler",
    "fixed_unigram_candidate_sampler",
    "all_candidate_sampler",
    "compute_accidental_hits",
]

_SAMPLERS = {
    "UniformCandidateSampler": "uniform",
    "LogUniformCandidateSampler": "log_uniform",
    "AliasCandidateSampler": "alias",
    "AllCandidateSampler": "all",
}


def _infer(ctx: OpContext) -> list:
    if ctx.in_dtypes[0] != _dt.int64:
        raise TypeError(
            f"Input 'true_classes' of '{ctx.type}' Op has type {ctx.in_dtypes[0].name} that "
            f"does not match expected type of int64"
        )
    num_true, num_sampled = int(ctx.attrs["num_true"]), int(ctx.attrs["num_sampled"])
    range_max, unique = _range_max(ctx), bool(ctx.attrs["unique"])
    if num_true < 1 or num_sampled < 1 or range_max < 1:
        raise ValueError(
            f"num_true ({num_true}), num_sampled ({num_sampled}) and range_max ({range_max}) "
            f"of '{ctx.name}' must be positive"
        )
    if unique and num_sampled > range_max:
        raise ValueError(
            f"Sampler's range is too small: '{ctx.name}' asks for {num_sampled} unique "
            f"classes out of range_max = {range_max}"
        )
    classes = ctx.in_shapes[0]
    if classes is not None and len(classes) != 2:
        raise ctx.error(f"true_classes must be a matrix, got shape {shape_str(classes)}")
    if classes is not None and classes[1] is not None and classes[1] != num_true:
        raise ctx.error(
            f"true_classes must have num_true columns, expected: {num_true} got: {classes[1]}"
        )
    if ctx.type == "AliasCandidateSampler":
        for i, (what, dtype) in enumerate(_ALIAS_INPUTS, start=1):
            if ctx.in_dtypes[i] != dtype or ctx.in_shapes[i] != (range_max,):
                got = f"{ctx.in_dtypes[i].name} {shape_str(ctx.in_shapes[i])}"
                raise ctx.error(f"{what} must be {dtype.name} [{range_max}], got {got}")
    batch = None if classes is None else classes[0]
    return [
        (_dt.int64, (num_sampled,)),
        (_dt.float32, (batch, num_true)),
        (_dt.float32, (num_sampled,)),
    ]


# the alias sampler's table inputs after true_classes (tfc/ops/candidate_sampling.py's
# fixed_unigram_candidate_sampler makes them)
_ALIAS_INPUTS = (("prob", _dt.float32), ("alt", _dt.int32), ("probability", _dt.float32))


def _range_max(ctx: OpContext) -> int:
    """The sampler's range (AllCandidateSampler's: its num_sampled, every class once)."""
    if ctx.type == "AllCandidateSampler":
        return int(ctx.attrs["num_sampled"])
    return int(ctx.attrs["range_max"])


def _probability(kind: str, value: np.ndarray, range_max: int, table: Any = None) -> np.ndarray:
    """TF's Probability(value) (computed in double, returned as float); the alias sampler's
    from its table of class probabilities."""
    if kind == "alias":
        return np.asarray(table[np.asarray(value)], np.float32)
    if kind == "uniform":
        return np.full(np.shape(value), np.float32(1.0 / range_max), np.float32)
    v = np.asarray(value, np.float64)
    return (np.log((v + 2.0) / (v + 1.0)) / math.log1p(range_max)).astype(np.float32)


def _expected(p: np.ndarray, num_sampled: int, tries: int) -> np.ndarray:
    """TF's ExpectedCountHelper, in float as its kernel computes it."""
    p = np.asarray(p, np.float32)
    if tries == num_sampled:
        return (p * np.float32(num_sampled)).astype(np.float32)
    return (-np.expm1(np.float32(tries) * np.log1p(-p))).astype(np.float32)


def _reference(ctx: OpContext, true_classes: np.ndarray, *tables: np.ndarray) -> list:
    kind = _SAMPLERS[ctx.type]
    num_sampled, range_max = int(ctx.attrs["num_sampled"]), _range_max(ctx)
    flat = np.asarray(true_classes).ravel()
    bad = np.flatnonzero((flat < 0) | (flat >= range_max))
    if bad.size:  # TF's kernel checks them before drawing
        i = int(bad[0])
        raise errors.InvalidArgumentError(
            None, None, f"true_classes[{i}] = {int(flat[i])} is not in [0, {range_max})"
        )
    base, key = philox.reserve_samples(ctx.state.rng_state(ctx.name, ctx.attrs), 512 * num_sampled)
    stream = philox.PhiloxStream(base, key)
    log_range = math.log1p(range_max)

    def sample() -> int:
        if kind == "alias":  # DistributionSampler::Sample: a float, then a bucket
            r = float(philox.u32_to_f32(np.array([stream.single()]))[0])
            bucket = _uniform32(stream, range_max)
            return bucket if r < tables[0][bucket] else int(tables[1][bucket])
        if kind == "log_uniform":
            d = float(philox.u64_to_f64(np.uint32(stream.single()), np.uint32(stream.single())))
            return (int(math.exp(d * log_range)) - 1) % range_max
        return _uniform64(stream, range_max)

    picked: list[int] = []
    tries = 0
    if kind == "all":  # every class once, each expected once
        ones = np.ones(np.shape(true_classes), np.float32)
        return [np.arange(num_sampled, dtype=np.int64), ones, np.ones(num_sampled, np.float32)]
    if ctx.attrs["unique"]:
        seen: set[int] = set()
        while len(picked) < num_sampled:
            tries += 1
            value = sample()
            if value not in seen:
                seen.add(value)
                picked.append(value)
    else:
        picked = [sample() for _ in range(num_sampled)]
        tries = num_sampled
    sampled = np.array(picked, np.int64)
    return [
        sampled,
        _expected(_probability(kind, true_classes, range_max, *tables[2:]), num_sampled, tries),
        _expected(_probability(kind, sampled, range_max, *tables[2:]), num_sampled, tries),
    ]


def _uniform64(stream: philox.PhiloxStream, n: int) -> int:
    """SimplePhilox::Uniform64: a 64-bit word (low word first), masked for a power of two, else
    rejected below 2^64 mod n's remainder + 1 and taken mod n (ExactUniformInt)."""

    def word() -> int:
        lo = stream.single()
        return lo | stream.single() << 32

    if n & (n - 1) == 0:
        return word() & (n - 1)
    rem = ((2**64 - 1) % n) + 1
    while True:
        value = word()
        if value >= rem:
            return value % n


def _uniform32(stream: philox.PhiloxStream, n: int) -> int:
    """SimplePhilox::Uniform: ExactUniformInt over 32-bit words."""
    if n & (n - 1) == 0:
        return stream.single() & (n - 1)
    rem = ((2**32 - 1) % n) + 1
    while True:
        value = stream.single()
        if value >= rem:
            return value % n


def _lower(ctx: OpContext) -> list:
    num_sampled, range_max = int(ctx.attrs["num_sampled"]), _range_max(ctx)
    batch = ctx.in_shapes[0][0]
    values = {
        "kind": _SAMPLERS[ctx.type],
        "unique": bool(ctx.attrs["unique"]),
        "num_sampled": num_sampled,
        "range_max": c_literal(range_max, _dt.int64),
        "log_range": repr(math.log1p(range_max)),
        "inv_range": repr(float(np.float32(1.0 / range_max))) + "f",
        "true_count": c_literal(batch * int(ctx.attrs["num_true"]), _dt.int64),
        "samples128": c_literal(512 * num_sampled, _dt.int64),
        # ExactUniformInt's rejection bound for a range that is not a power of two
        "reject_below": f"{((2**64 - 1) % range_max) + 1}ull",
        "reject_below32": f"{((2**32 - 1) % range_max) + 1}u",
        "power_of_two": range_max & (range_max - 1) == 0,
    }
    params = [
        Param("sampled", "int64_t", False, "out0"),
        Param("true_expected", "float", False, "out1"),
        Param("sampled_expected", "float", False, "out2"),
        Param("true_classes", "int64_t", True, "in0"),
        Param("state", "uint64_t", False, "state"),
    ]
    if values["unique"]:
        params.append(Param("seen", "unsigned char", False, "scratch"))
    if values["kind"] == "alias":
        params += [Param("prob", "float", True, "in1"), Param("alt", "int32_t", True, "in2"),
                   Param("probability", "float", True, "in3")]  # fmt: skip
    spec = ScanSpec(_dt.float32, num_sampled, values)
    return [Kernel("candidate_sampler", params, spec, can_fail=True)]


for _type in _SAMPLERS:
    register(
        OpDef(
            _type,
            infer=_infer,
            reference=_reference,
            lower=_lower,
            flops=no_flops,
            scratch=lambda ctx: _range_max(ctx) if ctx.attrs["unique"] else 0,
            random=True,
            differentiable=False,
            input_names=("true_classes",)
            + (tuple(n for n, _ in _ALIAS_INPUTS) if _type == "AliasCandidateSampler" else ()),
        )
    )


def _classes(true_classes: Any) -> Tensor:
    if is_tensor_like(true_classes):
        classes = convert_to_tensor(true_classes, name="true_classes")
    else:  # lists and arrays become int64, as TF converts them for the op
        classes = convert_to_tensor(true_classes, dtype=_dt.int64, name="true_classes")
    if classes.dtype != _dt.int64:
        raise TypeError(f"true_classes must be int64, got {classes.dtype.name}")
    return classes


def _sampler(op_type: str, true_classes: Any, num_true: int, num_sampled: int, unique: bool,
             range_max: int, seed: int | None, name: str | None) -> tuple:  # fmt: skip
    with name_scope(name, op_type, [true_classes]) as scope:
        classes = _classes(true_classes)
        attrs = seed_attrs(seed) | {
            "num_true": int(num_true),
            "num_sampled": int(num_sampled),
            "unique": bool(unique),
            "range_max": int(range_max),
        }
        return tuple(apply_op(op_type, [classes], attrs, name=scope).outputs)


def uniform_candidate_sampler(true_classes: Any, num_true: int, num_sampled: int, unique: bool,
                              range_max: int, seed: int | None = None,
                              name: str | None = None) -> tuple:  # fmt: skip
    """`tf.nn.uniform_candidate_sampler`: (sampled_candidates [num_sampled] int64,
    true_expected_count [batch, num_true], sampled_expected_count [num_sampled]) for classes
    drawn uniformly from [0, range_max)."""
    return _sampler("UniformCandidateSampler", true_classes, num_true, num_sampled, unique,
                    range_max, seed, name)  # fmt: skip


def log_uniform_candidate_sampler(true_classes: Any, num_true: int, num_sampled: int,
                                  unique: bool, range_max: int, seed: int | None = None,
                                  name: str | None = None) -> tuple:  # fmt: skip
    """`tf.nn.log_uniform_candidate_sampler`: like the uniform one, with class k drawn with
    probability log((k + 2) / (k + 1)) / log(range_max + 1) (Zipf-like: classes sorted by
    decreasing frequency)."""
    return _sampler("LogUniformCandidateSampler", true_classes, num_true, num_sampled, unique,
                    range_max, seed, name)  # fmt: skip


def candidate_sampler_outputs(sampler: tuple) -> tuple[Tensor, Tensor, Tensor]:
    """The three outputs of a sampler call (for the sampled losses' `sampled_values`)."""
    if len(sampler) != 3:
        raise ValueError(f"sampled_values must be 3 tensors, got {len(sampler)}")
    return tuple(convert_to_tensor(t) for t in sampler)  # type: ignore[return-value]


def _alias_table(weights: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """TF's DistributionSampler (Walker's alias method) over float weights: per bucket the
    float probability of keeping it and the class taken otherwise; built as TF builds it (in
    double, the pairing by the ends of the low and high lists) so the same draws pick the same
    classes."""
    n = len(weights)
    total = 0.0
    for w in weights:
        total += float(w)
    scaled = [float(np.float32(w) * np.float32(n)) / total for w in weights]
    alt = [-1] * n
    low = [i for i in range(n) if scaled[i] < 1.0]
    high = [i for i in range(n) if scaled[i] >= 1.0]
    while high and low:
        small, large = low.pop(), high.pop()
        alt[small] = large
        scaled[large] -= 1.0 - scaled[small]
        (low if scaled[large] < 1.0 else high).append(large)
    prob = np.array(scaled, np.float32)
    for i in high + low:  # rounding leaves some near 1: they keep their bucket
        prob[i], alt[i] = 1.0, i
    return prob, np.array(alt, np.int32)


def fixed_unigram_candidate_sampler(true_classes: Any, num_true: int, num_sampled: int,
                                    unique: bool, range_max: int, vocab_file: str = "",
                                    distortion: float = 1.0, num_reserved_ids: int = 0,
                                    num_shards: int = 1, shard: int = 0,
                                    unigrams: Any = (), seed: int | None = None,
                                    name: str | None = None) -> tuple:  # fmt: skip
    """`tf.nn.fixed_unigram_candidate_sampler`: classes drawn in proportion to
    unigram^distortion (word2vec's negative sampling with 0.75), from `unigrams` or the last
    comma-separated field of each line of `vocab_file`; the first `num_reserved_ids` classes
    are never drawn; `num_shards`/`shard` keep every num_shards-th class. TF's draws for the
    same seeds (its alias table is built here, when the graph is built: the op takes it as
    inputs)."""
    if bool(vocab_file) == bool(len(unigrams)):
        raise ValueError("fixed_unigram_candidate_sampler needs exactly one of vocab_file and "
                         "unigrams")  # fmt: skip
    if not 0 <= shard < num_shards:
        raise ValueError(f"shard must be in [0, num_shards = {num_shards}), got {shard}")
    if vocab_file:
        with open(vocab_file) as f:
            unigrams = [float(line.rstrip("\n").split(",")[-1]) for line in f if line.strip()]
    weights = [0.0 for k in range(num_reserved_ids) if k % num_shards == shard]
    word_id = len(weights)
    for u in unigrams:  # TF numbers the unigrams from there, per shard
        if word_id % num_shards == shard:
            weights.append(float(np.float32(float(np.float32(u)) ** float(np.float32(distortion)))))
        word_id += 1
    if len(weights) != range_max:
        raise ValueError(f"range is {range_max} must be equal to weights size {len(weights)}")
    w32 = np.array(weights, np.float32)
    total = np.float32(0)
    for w in w32:  # TF's float running total
        total = np.float32(total + w)
    prob, alt = _alias_table(w32)
    with name_scope(name, "FixedUnigramCandidateSampler", [true_classes]) as scope:
        classes = _classes(true_classes)
        attrs = seed_attrs(seed) | {
            "num_true": int(num_true),
            "num_sampled": int(num_sampled),
            "unique": bool(unique),
            "range_max": int(range_max),
        }
        tables = [convert_to_tensor(prob), convert_to_tensor(alt),
                  convert_to_tensor((w32 / total).astype(np.float32))]  # fmt: skip
        op = apply_op("AliasCandidateSampler", [classes, *tables], attrs, name=scope)
        return tuple(op.outputs)


def all_candidate_sampler(true_classes: Any, num_true: int, num_sampled: int, unique: bool,
                          seed: int | None = None, name: str | None = None) -> tuple:  # fmt: skip
    """`tf.nn.all_candidate_sampler`: every class of [0, num_sampled) once, in order, each with
    expected count 1 (a full softmax through the sampled losses' code)."""
    with name_scope(name, "AllCandidateSampler", [true_classes]) as scope:
        attrs = seed_attrs(seed) | {
            "num_true": int(num_true),
            "num_sampled": int(num_sampled),
            "unique": bool(unique),
        }
        op = apply_op("AllCandidateSampler", [_classes(true_classes)], attrs, name=scope)
        return tuple(op.outputs)


# -- ComputeAccidentalHits ----------------------------------------------------------------------
def _hits_infer(ctx: OpContext) -> list:
    true, sampled = ctx.in_shapes
    if ctx.in_dtypes != [_dt.int64, _dt.int64]:
        raise TypeError(f"true_classes and sampled_candidates of '{ctx.name}' must be int64, got "
                        f"{ctx.in_dtypes[0].name} and {ctx.in_dtypes[1].name}")  # fmt: skip
    num_true = int(ctx.attrs["num_true"])
    if true is not None and (len(true) != 2 or true[1] not in (None, num_true)):
        raise ctx.error(f"true_classes must be a matrix of num_true = {num_true} columns, got "
                        f"shape {shape_str(true)}")  # fmt: skip
    if sampled is not None and len(sampled) != 1:
        raise ctx.error(f"sampled_candidates must be a vector, got shape {shape_str(sampled)}")
    return [(_dt.int32, (None,)), (_dt.int64, (None,)), (_dt.float32, (None,))]


def _hits_reference(ctx: OpContext, true: np.ndarray, sampled: np.ndarray) -> list:
    """TF's order: rows, then their true classes; a class sampled twice hits at its last
    position."""
    position = {int(v): k for k, v in enumerate(sampled)}
    hits = [(i, position[int(c)]) for i in range(true.shape[0]) for c in true[i]
            if int(c) in position]  # fmt: skip
    rows = np.array([i for i, _ in hits], np.int32)
    ids = np.array([k for _, k in hits], np.int64)
    return [rows, ids, np.full(len(hits), -np.finfo(np.float32).max, np.float32)]


register(
    OpDef(
        "ComputeAccidentalHits",
        infer=_hits_infer,
        reference=_hits_reference,
        differentiable=False,
        in_python=VALUE_DEPENDENT_REASON,
        input_names=("true_classes", "sampled_candidates"),
    )
)


def compute_accidental_hits(true_classes: Any, sampled_candidates: Any, num_true: int,
                            seed: int | None = None, name: str | None = None) -> tuple:  # fmt: skip
    """`tf.nn.compute_accidental_hits`: (indices [n] int32, ids [n] int64, weights [n]) of the
    n (row, sampled position) pairs whose sampled class is one of the row's true classes, each
    with weight -FLT_MAX. n depends on the values, so the op runs in a Session's Python stage
    (native builds refuse it); the sampled losses find the same hits with static shapes."""
    with name_scope(name, "ComputeAccidentalHits", [true_classes, sampled_candidates]) as scope:
        attrs = seed_attrs(seed) | {"num_true": int(num_true)}
        inputs = [_classes(true_classes), _classes(sampled_candidates)]
        return tuple(apply_op("ComputeAccidentalHits", inputs, attrs, name=scope).outputs)
