"""einsum and tensordot: compiled C vs the interpreter vs numpy.einsum / numpy.tensordot."""

import numpy as np
import pytest
from opcheck import CaseBatch

import tfc as tf

RNG = np.random.default_rng(5)

# equation, operand shapes
EQUATIONS = [
    ("ij,jk->ik", [(3, 4), (4, 5)]),
    ("ij,kj->ik", [(3, 4), (5, 4)]),
    ("ji,jk->ik", [(4, 3), (4, 5)]),
    ("bij,bjk->bik", [(2, 3, 4), (2, 4, 5)]),
    ("bij,bkj->bki", [(2, 3, 4), (2, 5, 4)]),
    ("i,i->", [(6,), (6,)]),
    ("i,j->ij", [(3,), (4,)]),
    ("ij,kl->ijkl", [(2, 3), (4, 2)]),
    ("ij->ji", [(3, 5)]),
    ("ij->", [(3, 5)]),
    ("ijk->kj", [(2, 3, 4)]),
    ("ii->i", [(4, 4)]),
    ("ii", [(4, 4)]),
    ("iji->j", [(3, 2, 3)]),
    ("bii->bi", [(2, 3, 3)]),
    ("ij,jk", [(3, 4), (4, 2)]),  # implicit output: i, k
    ("ba,ca", [(3, 4), (2, 4)]),  # implicit output: sorted labels
    ("ij,ij->ij", [(3, 4), (3, 4)]),  # element-wise product
    ("ij,ij->i", [(3, 4), (3, 4)]),
    ("abc,cd,db->a", [(2, 3, 4), (4, 5), (5, 3)]),  # three operands
    ("ij,jk,kl->il", [(2, 3), (3, 4), (4, 5)]),
    ("bhqd,bhkd->bhqk", [(2, 2, 3, 4), (2, 2, 5, 4)]),  # attention scores
    ("bhqk,bhkd->bqhd", [(2, 2, 3, 5), (2, 2, 5, 4)]),
    ("...ij,...jk->...ik", [(5, 2, 3), (3, 4)]),  # broadcast dims of different ranks
    ("...ij,...jk->...ik", [(2, 1, 2, 3), (4, 3, 2)]),  # size-1 broadcast dims
    ("i...,i...->...", [(3, 2, 2), (3, 2, 2)]),
    ("ij,jk->ki", [(2, 3), (3, 1)]),
    ("ik,k->i", [(3, 0), (0,)]),  # an empty contraction: zeros
]


def build() -> CaseBatch:
    b = CaseBatch()
    with b.graph.as_default():
        for dtype in ("float32", "float64"):
            for k, (equation, shapes) in enumerate(EQUATIONS):
                values = [RNG.standard_normal(s).astype(dtype) for s in shapes]
                # half the operands fed with unknown dims: the reshapes then use run-time sizes
                operands = [
                    b.feed(v, [None] * v.ndim) if (k + j) % 2 else tf.constant(v)
                    for j, v in enumerate(values)
                ]
                want = np.einsum(equation, *[v.astype(np.float64) for v in values])
                b.add(f"einsum-{dtype}-{equation}-{shapes}", tf.einsum(equation, *operands),
                      np.asarray(want).astype(dtype))  # fmt: skip
            a = RNG.standard_normal((2, 3, 4)).astype(dtype)
            c = RNG.standard_normal((4, 3, 5)).astype(dtype)
            for axes in ([[1, 2], [1, 0]], 1, [[0], [1]], [2, 0], 0):
                if axes == [[0], [1]]:
                    aa, cc = a, RNG.standard_normal((3, 2)).astype(dtype)
                else:
                    aa, cc = a, c
                want = np.tensordot(aa.astype(np.float64), cc.astype(np.float64), axes)
                b.add(f"tensordot-{dtype}-{axes}", tf.tensordot(aa, b.feed(cc), axes),
                      want.astype(dtype))  # fmt: skip
    return b


EINSUM = build()


@pytest.mark.parametrize("case", EINSUM.ids())
def test_einsum(case):
    EINSUM.check(case)


def test_einsum_is_a_matmul_with_views():
    """'ij,jk->ik' is one MatMul (as TF lowers it), with no transpose."""
    graph = tf.Graph()
    with graph.as_default():
        tf.einsum(
            "ij,jk->ik", tf.placeholder(tf.float32, [3, 4]), tf.placeholder(tf.float32, [4, 5])
        )
        ops = [op.type for op in graph.get_operations()]
    assert ops.count("MatMul") == 1 and "Transpose" not in ops


def test_einsum_errors():
    a = tf.placeholder(tf.float32, [2, 3])
    b = tf.placeholder(tf.float32, [4, 4])
    with pytest.raises(ValueError, match="label 'j' is 3 in one operand and 4 in the other"):
        tf.einsum("ij,jk->ik", a, b)
    with pytest.raises(ValueError, match="label k not present in the input subscripts"):
        tf.einsum("ij->jk", a)
    with pytest.raises(ValueError, match="names 2 operands, but 1 were given"):
        tf.einsum("ij,jk->ik", a)
    with pytest.raises(ValueError, match="have 3 labels for an operand of rank 2"):
        tf.einsum("ijk->i", a)
    with pytest.raises(ValueError, match="repeat the label"):
        tf.einsum("ij->ii", a)
    with pytest.raises(ValueError, match="letters and at most one"):
        tf.einsum("i1,j->ij", a, b)
    with pytest.raises(ValueError, match="lack '...'"):
        tf.einsum("...ij->ij", tf.placeholder(tf.float32, [5, 2, 3]))
    with pytest.raises(ValueError, match="rank of every operand"):
        tf.einsum("ij->ji", tf.placeholder(tf.float32))
    with pytest.raises(ValueError, match=r"the dims of the repeated label 'i' differ: \[2, 3\]"):
        tf.einsum("ii->i", a)
    with pytest.raises(TypeError, match="one dtype"):
        tf.einsum("i,i->", tf.constant([1.0]), tf.constant([1.0], tf.float64))


def test_a_diagonal_of_unequal_run_time_dims_fails():
    x = tf.placeholder(tf.float32, [None, None])
    y = tf.einsum("ii->i", x)
    with tf.Session() as sess:
        assert sess.run(y, {x: np.eye(3) * 2}).tolist() == [2.0, 2.0, 2.0]
        with pytest.raises(tf.errors.InvalidArgumentError, match="Cannot reshape"):
            sess.run(y, {x: np.ones((2, 3))})


def test_tensordot_errors():
    a = tf.placeholder(tf.float32, [2, 3])
    with pytest.raises(ValueError, match="Different number of contraction axes"):
        tf.tensordot(a, a, [[0, 1], [0]])
    with pytest.raises(ValueError, match="at most the rank"):
        tf.tensordot(a, a, 3)
    with pytest.raises(ValueError, match="out of range"):
        tf.tensordot(a, a, [[2], [0]])
