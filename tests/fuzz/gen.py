"""The generator's machinery: values with what is known about them, feeds in an op's domain,
statements built and shape-checked as they are made.

A `Gen` makes one case. Rows of the op table (tests/fuzz/ops.py) ask it for operands
(`pick`: an earlier value of the wanted dtype and rank, or a new feed), turn them into a
statement (`emit`), and it runs the statement at once in a graph of its own, so every value's
static shape is known to the rows that come after. A row whose statement the frontend refuses
is rejected (counted by op: either the row's constraints are too loose or the frontend is
wrong; the long mode prints the counts).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Any

import numpy as np

import tfc as tf

from .case import Built, Case, Stmt, namespace, run_stmt

FLOATS = ("float32", "float64")
INTS = ("int32", "int64")

# what the feeds of a domain hold: floats on a grid of 1/64 (exact in every float type, so
# discontinuous ops see the same inputs everywhere, ties and .5 included), ints in a range
GRID = 64
FLOAT_DOMAINS: dict[str, tuple[float, float]] = {
    "any": (-3.0, 3.0),
    "pos": (0.25, 3.0),
    "nonneg": (0.0, 3.0),
    "unit": (-0.875, 0.875),
    "unitpos": (0.125, 0.875),
    "gt1": (1.25, 4.0),
}
INT_DOMAINS: dict[str, tuple[int, int]] = {
    "any": (-6, 6),
    "pos": (1, 6),
    "nonneg": (0, 6),
    "nonzero": (-6, 6),  # without 0
    "small": (0, 3),
}
# a value of unknown range into a domain (floats): statements over "{x}"
ADAPTERS: dict[str, str] = {
    "pos": "tf.abs({x}) + 0.25",
    "nonneg": "tf.abs({x})",
    "unit": "tf.tanh({x}) * 0.875",
    "unitpos": "tf.sigmoid({x}) * 0.75 + 0.125",
    "gt1": "tf.abs({x}) + 1.25",
    "nonzero": "tf.abs({x}) + 1",
    "small": "tf.minimum(tf.abs({x}), 3)",
}
# adapters whose operations are exact (an exact value stays exact)
EXACT_ADAPTERS = ("pos", "nonneg", "gt1", "nonzero", "small")


class Rejected(Exception):
    """A row could not make a valid statement here (the reason says why)."""


@dataclass
class Val:
    """A value of the case: its name, dtype name, static shape, and what is known of it."""

    name: str
    dtype: str
    shape: tuple[int, ...]
    exact: bool  # the same bits in every implementation (feeds, IEEE-exact ops on them)
    domain: str = "any"  # the domain it is known to lie in
    depth: int = 0  # inexact operations behind it
    source: str = "op"  # "feed", "var", "const" or "op"

    def __str__(self) -> str:
        return self.name

    @property
    def kind(self) -> str:
        return {"float32": "f", "float64": "f", "int32": "i", "int64": "i", "bool": "b"}[self.dtype]

    @property
    def size(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64))

    @property
    def rank(self) -> int:
        return len(self.shape)


def in_domain(val: Val, domain: str) -> bool:
    if domain == "any" or val.domain == domain:
        return True
    narrower = {
        "pos": {"gt1", "unitpos"},
        "nonneg": {"pos", "gt1", "unitpos"},
        "unit": {"unitpos"},
        "nonzero": {"pos", "gt1", "unitpos"},
    }
    return val.domain in narrower.get(domain, set())


class Gen:
    """Makes one case: see the module docstring. `max_size` bounds every value's elements."""

    def __init__(self, rng: np.random.Generator, origin: str = "", max_size: int = 384) -> None:
        self.rng = rng
        self.max_size = max_size
        self.case = Case([], {}, [], origin=origin)
        self.vals: list[Val] = []
        self.by_name: dict[str, Val] = {}
        self.graph = tf.Graph()
        self.built = Built({}, {}, {})
        self.env = namespace(self.case, self.built)
        self.count = 0
        self.consumed: set[str] = set()
        self.rejected: Counter = Counter()  # rows refused, by op
        self.last_rejection = ""  # why the last one was
        self.fetch_also: set[str] = set()

    # -- names and statements --------------------------------------------------------------------
    def _name(self, prefix: str = "v") -> str:
        self.count += 1
        return f"{prefix}{self.count}"

    def emit(
        self,
        expr: str,
        inputs: list[Val],
        n_out: int = 1,
        exact: bool | None = None,
        inexact: int = 1,
        domain: str = "any",
        kind: str = "op",
        fetch: bool | None = None,
        seq: bool = False,
    ) -> list[Val]:
        """Run `expr` (over the inputs' names) as a statement with `n_out` outputs; its values
        are exact when every input is and `exact` allows it (None: when every input is an int
        or bool), and lie `inexact` more operations deep. Raises Rejected when the frontend
        refuses it."""
        names = tuple(self._name("t" if kind == "train" else "v") for _ in range(n_out))
        stmt = Stmt(names, expr, kind, seq or n_out > 1)
        try:
            with self.graph.as_default():
                run_stmt(stmt, self.env)
        except Exception as e:  # noqa: BLE001 - any refusal rejects the statement
            raise Rejected(f"{stmt.line()}: {type(e).__name__}: {e}") from None
        self.case.stmts.append(stmt)
        self.consumed.update(v.name for v in inputs)
        if kind == "train":
            return []
        depth = max((v.depth for v in inputs), default=0) + inexact
        outs = []
        for name in names:
            t = self.env[name]
            if t is None:  # a gradient that does not exist
                continue
            shape = tuple(t.shape.as_list())
            dtype = t.dtype.name
            if None in shape or dtype not in (*FLOATS, *INTS, "bool"):
                continue
            # exact: the same bits everywhere. Int and bool results of exact inputs are, float
            # results only of the ops the row names exact (correctly rounded, or a choice)
            is_exact = all(v.exact for v in inputs) and (
                exact if exact is not None else dtype not in FLOATS
            )
            val = Val(name, dtype, shape, is_exact, domain, depth)
            outs.append(self._add(val))
            if fetch:
                self.fetch_also.add(name)
        return outs

    def _add(self, val: Val) -> Val:
        self.vals.append(val)
        self.by_name[val.name] = val
        self.case.depth[val.name] = val.depth
        return val

    # -- sources ---------------------------------------------------------------------------------
    def values(self, dtype: str, shape: tuple, domain: str = "any") -> np.ndarray:
        rng = self.rng
        if dtype == "bool":
            return rng.random(shape) < 0.5
        if dtype in INTS:
            lo, hi = INT_DOMAINS.get(domain, INT_DOMAINS["any"])
            v = rng.integers(lo, hi + 1, size=shape)
            if domain == "nonzero":
                v = np.where(v == 0, 1, v)
            return v.astype(dtype)
        if domain == "order":  # a small integer order (Polygamma's n)
            return rng.integers(0, 3, size=shape).astype(dtype)
        lo, hi = FLOAT_DOMAINS.get(domain, FLOAT_DOMAINS["any"])
        v = rng.integers(int(lo * GRID), int(hi * GRID) + 1, size=shape) / GRID
        return v.astype(dtype)

    def feed(self, dtype: str, shape: tuple, domain: str = "any") -> Val:
        name = self._name()
        self.case.values[name] = self.values(dtype, tuple(shape), domain)
        stmt = Stmt((name,), f'feed("{name}")', "feed")
        with self.graph.as_default():
            run_stmt(stmt, self.env)
        self.case.stmts.append(stmt)
        return self._add(Val(name, dtype, tuple(shape), True, domain, 0, "feed"))

    def var(self, dtype: str, shape: tuple, domain: str = "any", pool: bool = True) -> Val:
        """A variable; with `pool` False no later row reads it (a scatter's own)."""
        name = self._name()
        self.case.values[name] = self.values(dtype, tuple(shape), domain)
        stmt = Stmt((name,), f'var("{name}")', "var")
        with self.graph.as_default():
            run_stmt(stmt, self.env)
        self.case.stmts.append(stmt)
        val = Val(name, dtype, tuple(shape), True, domain, 0, "var")
        return self._add(val) if pool else val

    def const_expr(self, value: Any, dtype: str) -> str:
        """A small constant as statement text."""
        array = np.asarray(value, dtype=dtype)
        if array.dtype.kind == "f":
            text = repr(np.vectorize(lambda x: float(x), otypes=[object])(array).tolist())
        else:
            text = repr(array.tolist())
        return f"const({text}, np.{dtype})"

    def const(self, dtype: str, shape: tuple, domain: str = "any") -> Val:
        out = self.emit(self.const_expr(self.values(dtype, shape, domain), dtype), [], exact=True)
        out[0].domain, out[0].source, out[0].depth = domain, "const", 0
        return out[0]

    # -- shapes ----------------------------------------------------------------------------------
    def dim(self) -> int:
        return int(self.rng.choice([1, 1, 2, 2, 3, 3, 4, 5, 6, 7, 8, 9, 12, 16]))

    def shape(self, rank: int | None = None, max_size: int | None = None) -> tuple[int, ...]:
        if rank is None:
            rank = int(self.rng.choice([0, 1, 1, 2, 2, 2, 3, 3, 4]))
        max_size = max_size or self.max_size
        for _ in range(20):
            shape = tuple(self.dim() for _ in range(rank))
            if np.prod(shape, dtype=np.int64) <= max_size:
                return shape
        return (1,) * rank

    # -- operands --------------------------------------------------------------------------------
    def dtype_of(self, kinds: str | tuple) -> str:
        kinds = (kinds,) if isinstance(kinds, str) else kinds
        choices = [
            d for d in ("float32", "float32", "float32", "float64", "int32", "int64", "bool")
            if Val("", d, (), True).kind in "".join(kinds) or d in kinds
        ]  # fmt: skip
        return str(self.rng.choice(choices))

    def candidates(
        self,
        dtypes: tuple,
        rank: int | tuple | None = None,
        exact: bool = False,
        where: Any = None,
    ) -> list[Val]:
        ranks = (rank,) if isinstance(rank, int) else rank
        return [
            v for v in self.vals
            if v.dtype in dtypes and (ranks is None or v.rank in ranks)
            and (v.exact or not exact) and (where is None or where(v))
            and 0 < v.size <= self.max_size
        ]  # fmt: skip

    def choose(self, vals: list[Val]) -> Val:
        """An earlier value, the recent and the unconsumed ones first (chains, not stars)."""
        weights = np.array(
            [(1.0 + i) ** 1.5 * (3.0 if v.name not in self.consumed else 1.0)
             for i, v in enumerate(vals)]
        )  # fmt: skip
        return vals[int(self.rng.choice(len(vals), p=weights / weights.sum()))]

    def pick(
        self,
        dtypes: tuple | str = FLOATS,
        rank: int | tuple | None = None,
        exact: bool = False,
        domain: str = "any",
        fresh: float = 0.15,
        shape: tuple | None = None,
        where: Any = None,
    ) -> Val:
        """An operand: an earlier value matching, adapted into `domain` (floats; ints and bools
        are fed), or a new feed."""
        dtypes = (dtypes,) if isinstance(dtypes, str) else tuple(dtypes)
        wanted = where
        if shape is not None:
            wanted = lambda v: v.shape == tuple(shape) and (where is None or where(v))  # noqa: E731
        found = self.candidates(dtypes, rank, exact, wanted)
        if domain != "any":
            found = [
                v for v in found
                if in_domain(v, domain) or (v.kind == "f" and domain in ADAPTERS
                                            and (not exact or domain in EXACT_ADAPTERS))
            ]  # fmt: skip
        if found and self.rng.random() > fresh:
            return self.adapt(self.choose(found), domain)
        dtype = str(self.rng.choice(dtypes))
        if shape is None:  # a new feed (or constant) of a random shape that `where` accepts
            for _ in range(30):
                r = rank if rank is None or isinstance(rank, int) else int(self.rng.choice(rank))
                shape = self.shape(r)
                if where is None or where(Val("", dtype, shape, True)):
                    break
            else:
                raise Rejected("no operand of the wanted shape")
        source = self.rng.random()
        if source < 0.1 and int(np.prod(shape)) <= 8:
            return self.const(dtype, tuple(shape), domain)
        return self.feed(dtype, tuple(shape), domain)

    def adapt(self, val: Val, domain: str) -> Val:
        if in_domain(val, domain):
            return val
        if val.kind != "f" and domain != "any":
            raise Rejected(f"an int value outside domain {domain}")
        expr = ADAPTERS[domain].format(x=val.name)
        exact = domain in EXACT_ADAPTERS
        out = self.emit(expr, [val], exact=exact, inexact=0 if exact else 1)
        out[0].domain = domain
        return out[0]

    def broadcast_partner(
        self, a: Val, dtypes: tuple | None = None, domain: str = "any", exact: bool = False
    ) -> Val:
        """A second operand that broadcasts with `a`: its shape, a suffix of it, some dims 1,
        a scalar, or an earlier value that happens to broadcast."""
        dtypes = dtypes or (a.dtype,)
        compatible = [
            v for v in self.candidates(dtypes, exact=exact,
                                       where=lambda v: _broadcasts(a.shape, v.shape))
            if np.prod(np.broadcast_shapes(a.shape, v.shape)) <= self.max_size
        ]  # fmt: skip
        if domain != "any":
            compatible = [
                v for v in compatible
                if in_domain(v, domain) or (v.kind == "f" and domain in ADAPTERS
                                            and (not exact or domain in EXACT_ADAPTERS))
            ]  # fmt: skip
        r = self.rng.random()
        if compatible and r < 0.45:
            return self.adapt(self.choose(compatible), domain)
        if r < 0.6:
            shape = a.shape
        elif r < 0.75:
            shape = ()
        elif r < 0.87:
            shape = a.shape[int(self.rng.integers(0, a.rank + 1)) :]
        else:
            shape = tuple(d if self.rng.random() < 0.5 else 1 for d in a.shape)
            if self.rng.random() < 0.3:  # a dim of its own where `a` has 1
                shape = tuple(
                    self.dim() if d == 1 and s == 1 else d for d, s in zip(shape, a.shape)
                )
                if np.prod(np.broadcast_shapes(a.shape, shape)) > self.max_size:
                    shape = a.shape
        dtype = str(self.rng.choice(dtypes))
        if int(np.prod(shape)) <= 4 and self.rng.random() < 0.25:
            return self.const(dtype, tuple(shape), domain)
        return self.feed(dtype, tuple(shape), domain)


def _broadcasts(a: tuple, b: tuple) -> bool:
    try:
        np.broadcast_shapes(a, b)
    except ValueError:
        return False
    return True
