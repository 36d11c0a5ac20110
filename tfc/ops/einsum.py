"""`tf.einsum` and `tf.tensordot`, lowered to transposes, reshapes, sums and matrix products.

That is how TensorFlow computes them: each pair of operands becomes one (batched) matrix
product [batch..., M, K] x [batch..., K, N] after the labels only one side has and nothing
later needs are summed away. A label repeated within one operand takes the diagonal (a gather
of the flattened repeated dims). `...` stands for the leading dims that broadcast (NumPy's
rules, right-aligned). Ranks must be known when the graph is built.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from typing import Any

import numpy as np

import tfc.ops.array as _array
import tfc.ops.sequences as _sequences
from tfc.ir.graph import Tensor, name_scope
from tfc.ops.constant import convert_to_tensor
from tfc.ops.linalg import matmul
from tfc.ops.math import maximum
from tfc.ops.reduce import reduce_sum

__all__ = ["einsum", "tensordot"]

Labels = list[str]  # one label per dim: a letter, or "...k" for the k-th broadcast dim


# -- parsing ---------------------------------------------------------------------------------------
def _parse(equation: str, ranks: Sequence[int]) -> tuple[list[Labels], Labels]:
    """The labels of each operand's dims and of the output's."""
    equation = equation.replace(" ", "")
    if "->" in equation:
        lhs, rhs = equation.split("->", 1)
        if "->" in rhs:
            raise ValueError(f"einsum equation {equation!r} has more than one '->'")
    else:
        lhs, rhs = equation, None
    terms = lhs.split(",")
    if len(terms) != len(ranks):
        raise ValueError(
            f"einsum equation {equation!r} names {len(terms)} operands, but {len(ranks)} were given"
        )
    broadcast = 0
    for term in terms + ([rhs] if rhs is not None else []):
        if not re.fullmatch(r"[A-Za-z]*(\.\.\.)?[A-Za-z]*", term):
            raise ValueError(f"einsum subscripts {term!r} must be letters and at most one '...'")
    for term, rank in zip(terms, ranks):
        letters = len(term.replace("...", ""))
        if "..." in term:
            broadcast = max(broadcast, rank - letters)
            if rank < letters:
                raise ValueError(f"einsum subscripts {term!r} name more dims than rank {rank}")
        elif letters != rank:
            raise ValueError(
                f"einsum subscripts {term!r} have {letters} labels for an operand of rank {rank}"
            )
    inputs = [
        _expand(term, rank - len(term.replace("...", "")), broadcast)
        for term, rank in zip(terms, ranks)
    ]
    if rhs is None:  # implicit output: the broadcast dims, then the labels seen once, sorted
        counts: dict[str, int] = {}
        for labels in inputs:
            for label in labels:
                counts[label] = counts.get(label, 0) + 1
        once = sorted(k for k, n in counts.items() if n == 1 and not k.startswith("."))
        output = [f"...{k}" for k in range(broadcast)] + once
    else:
        if "..." not in rhs and any("..." in t for t in terms) and broadcast:
            raise ValueError(
                f"einsum equation {equation!r}: the output subscripts lack '...' but the inputs "
                "have broadcast dims"
            )
        output = _expand(rhs, broadcast, broadcast)
    seen = set()
    for label in output:
        if label in seen:
            raise ValueError(f"einsum output subscripts repeat the label {label!r}")
        seen.add(label)
        if not any(label in labels for labels in inputs):
            raise ValueError(
                f"Output subscripts contain the label {label} not present in the input subscripts"
            )
    return inputs, output


def _expand(term: str, count: int, broadcast: int) -> Labels:
    """A term's labels, '...' standing for its `count` broadcast dims: the last `count` of
    the equation's `broadcast` ones (they align from the right, as in NumPy)."""
    if "..." not in term:
        return list(term)
    before, after = term.split("...")
    return list(before) + [f"...{broadcast - count + k}" for k in range(count)] + list(after)


# -- operands: a tensor with one label per dim --------------------------------------------------
class _Operand:
    def __init__(self, tensor: Tensor, labels: Labels) -> None:
        self.tensor, self.labels = tensor, labels

    def dims(self) -> list[Any]:
        """Each dim's size: an int when static, else a scalar int32 tensor."""
        static = self.tensor._shape_tuple
        dynamic = None
        sizes: list[Any] = []
        for k, d in enumerate(static):
            if d is None:
                dynamic = _array.shape(self.tensor) if dynamic is None else dynamic
                d = dynamic[k]
            sizes.append(d)
        return sizes

    def size_of(self, label: str) -> Any:
        return self.dims()[self.labels.index(label)]

    def transpose(self, order: Labels) -> _Operand:
        perm = [self.labels.index(label) for label in order]
        if perm == list(range(len(perm))):
            return _Operand(self.tensor, list(order))
        return _Operand(_array.transpose(self.tensor, perm), list(order))

    def sum_out(self, labels: set) -> _Operand:
        axes = [k for k, label in enumerate(self.labels) if label in labels]
        if not axes:
            return self
        kept = [label for label in self.labels if label not in labels]
        return _Operand(reduce_sum(self.tensor, axes), kept)


def _product(sizes: Sequence[Any]) -> Any:
    if all(isinstance(s, int) for s in sizes):
        return math.prod(sizes)
    total: Any = 1
    for s in sizes:
        total = total * s
    return total


def _diagonal(op: _Operand) -> _Operand:
    """Each label repeated in one operand reduced to its diagonal: the repeated dims moved
    last and flattened (through [..., n, n, ...], so dims of different sizes fail), and the
    diagonal's elements gathered: positions k * (1 + n + n^2 + ...) for k < n."""
    while True:
        repeated = next((label for label in op.labels if op.labels.count(label) > 1), None)
        if repeated is None:
            return op
        where = [k for k, label in enumerate(op.labels) if label == repeated]
        static = {op.tensor._shape_tuple[k] for k in where} - {None}
        if len(static) > 1:
            raise ValueError(
                f"einsum: the dims of the repeated label {repeated!r} differ: {sorted(static)}"
            )
        dims = op.dims()
        n = static.pop() if static else dims[where[0]]
        kept = [k for k in range(len(op.labels)) if k not in where]
        moved = _array.transpose(op.tensor, kept + where)
        outer = [dims[k] for k in kept]
        square = _array.reshape(moved, outer + [n] * len(where))
        flat = _array.reshape(square, outer + [_product([n] * len(where))])
        powers = [_product([n] * j) for j in range(len(where))]
        stride = sum(powers) if isinstance(n, int) else _sum(powers)
        picks = _sequences.range(n) * stride
        diagonal = _array.gather(flat, picks, axis=len(kept))
        op = _Operand(diagonal, [op.labels[k] for k in kept] + [repeated])


def _sum(values: Sequence[Any]) -> Any:
    total: Any = 0
    for v in values:
        total = total + v
    return total


def _contract(a: _Operand, b: _Operand, keep: set) -> _Operand:
    """a and b as one operand holding every label in `keep` (the output's and later
    operands'): a batched matrix product over the labels both have."""
    a = a.sum_out({lb for lb in a.labels if lb not in b.labels and lb not in keep})
    b = b.sum_out({lb for lb in b.labels if lb not in a.labels and lb not in keep})
    batch = [lb for lb in a.labels if lb in b.labels and lb in keep]
    summed = [lb for lb in a.labels if lb in b.labels and lb not in keep]
    a_free = [lb for lb in a.labels if lb not in b.labels]
    b_free = [lb for lb in b.labels if lb not in a.labels]
    for label in summed:
        sa, sb = a.size_of(label), b.size_of(label)
        if isinstance(sa, int) and isinstance(sb, int) and sa != sb:
            raise ValueError(
                f"einsum: label {label!r} is {sa} in one operand and {sb} in the other"
            )
    a = a.transpose(batch + a_free + summed)
    b = b.transpose(batch + summed + b_free)
    a_dims, b_dims = a.dims(), b.dims()
    nb = len(batch)
    m, k = _product(a_dims[nb : nb + len(a_free)]), _product(a_dims[nb + len(a_free) :])
    n = _product(b_dims[nb + len(summed) :])
    left = _array.reshape(a.tensor, a_dims[:nb] + [m, k])
    right = _array.reshape(b.tensor, b_dims[:nb] + [k, n])
    product = matmul(left, right)  # batch dims broadcast as in NumPy (size 1 against n)
    batch_dims = [_broadcast_size(x, y) for x, y in zip(a_dims[:nb], b_dims[:nb])]
    free_dims = a_dims[nb : nb + len(a_free)] + b_dims[nb + len(summed) :]
    shaped = _array.reshape(product, batch_dims + free_dims)
    return _Operand(shaped, batch + a_free + b_free)


def _broadcast_size(x: Any, y: Any) -> Any:
    if isinstance(x, int) and isinstance(y, int):
        if x != y and 1 not in (x, y):
            raise ValueError(f"einsum: broadcast dims of sizes {x} and {y} do not match")
        return max(x, y)
    if isinstance(x, int) and x != 1:
        return x
    if isinstance(y, int) and y != 1:
        return y
    return maximum(x, y)  # sizes known only at run time: the larger one


def einsum(equation: str, *inputs: Any, **kwargs: Any) -> Tensor:
    """`tf.einsum`: the sum over the labels not in the output of the products of the
    operands' elements, with NumPy's subscripts ('ij,jk->ik', 'bij,bkj->bik', 'ii->i',
    '...ij,...jk->...ik'; an implicit output is the labels seen once, sorted)."""
    name = kwargs.pop("name", None)
    if kwargs:
        raise TypeError(f"Invalid keyword arguments for einsum: {', '.join(kwargs)}")
    if not inputs:
        raise ValueError("einsum needs at least one operand")
    with name_scope(name, "einsum") as scope:
        tensors = [convert_to_tensor(x) for x in inputs]
        for t in tensors:
            if t._shape_tuple is None:
                raise ValueError(f"einsum needs the rank of every operand; {t.name}'s is unknown")
        dtype = tensors[0].dtype
        if any(t.dtype != dtype for t in tensors):
            raise TypeError(
                f"einsum operands must have one dtype, got {[t.dtype.name for t in tensors]}"
            )
        labels, output = _parse(equation, [len(t._shape_tuple) for t in tensors])
        operands = [_diagonal(_Operand(t, lb)) for t, lb in zip(tensors, labels)]
        result = operands[0]
        for i, other in enumerate(operands[1:], start=1):
            keep = set(output).union(*(op.labels for op in operands[i + 1 :]))
            result = _contract(result, other, keep)
        result = result.sum_out({lb for lb in result.labels if lb not in output})
        result = result.transpose(output)
        return _array.identity(result.tensor, name=scope)


# -- tensordot ------------------------------------------------------------------------------------
def tensordot(a: Any, b: Any, axes: Any, name: str | None = None) -> Tensor:
    """`tf.tensordot`: the sum over a's dims `axes[0]` and b's dims `axes[1]` of the products;
    an int N takes a's last N dims and b's first N. The result's dims are a's free dims, then
    b's. Ranks must be known when the graph is built."""
    with name_scope(name, "Tensordot") as scope:
        a, b = convert_to_tensor(a, name="a"), convert_to_tensor(b, name="b")
        if a._shape_tuple is None or b._shape_tuple is None:
            raise ValueError("tensordot needs the ranks of a and b when the graph is built")
        ra, rb = len(a._shape_tuple), len(b._shape_tuple)
        a_axes, b_axes = _tensordot_axes(axes, ra, rb)
        letters = iter("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ")
        a_labels = [next(letters) for _ in range(ra)]
        b_labels = [next(letters) for _ in range(rb)]
        for i, j in zip(a_axes, b_axes):
            b_labels[j] = a_labels[i]
        out = [lb for k, lb in enumerate(a_labels) if k not in a_axes]
        out += [lb for k, lb in enumerate(b_labels) if k not in b_axes]
        equation = f"{''.join(a_labels)},{''.join(b_labels)}->{''.join(out)}"
        return einsum(equation, a, b, name=scope)


def _tensordot_axes(axes: Any, ra: int, rb: int) -> tuple[list[int], list[int]]:
    if isinstance(axes, Tensor):
        raise ValueError("tensordot's axes must be Python values in tfc (they decide the shapes)")
    if isinstance(axes, (int, np.integer)):
        n = int(axes)
        if n < 0 or n > min(ra, rb):
            raise ValueError(f"'axes' must be at most the rank of a and b and >= 0, got {n}")
        return list(range(ra - n, ra)), list(range(n))
    if len(axes) != 2:
        raise ValueError("'axes' must be an int or a pair of lists of axes")
    a_axes, b_axes = ([int(v)] if np.ndim(v) == 0 else [int(x) for x in v] for v in axes)
    if len(a_axes) != len(b_axes):
        raise ValueError(
            f"Different number of contraction axes 'a' and 'b', {len(a_axes)} != {len(b_axes)}."
        )
    a_axes = [x + ra if x < 0 else x for x in a_axes]
    b_axes = [x + rb if x < 0 else x for x in b_axes]
    if any(not 0 <= x < ra for x in a_axes) or any(not 0 <= x < rb for x in b_axes):
        raise ValueError(f"tensordot axes {axes} are out of range for ranks {ra} and {rb}")
    return a_axes, b_axes
