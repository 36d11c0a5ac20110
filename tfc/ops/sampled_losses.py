"""`tf.nn.nce_loss` and `tf.nn.sampled_softmax_loss`: TF1's sampled losses over a large class
table, built as TF1 builds them (nn_impl._compute_sampled_logits): the true and the sampled
classes' rows of `weights` and `biases` looked up in one embedding_lookup (so their gradients
are rows: IndexedSlices, tfc/ops/indexed_slices.py), logits corrected by log(expected count)
of the candidate sampler (tfc/ops/candidate_sampling.py, log-uniform unless `sampled_values`
says otherwise).

One difference in form: TF removes accidental hits (a sampled class that is one of the row's
true classes) with ComputeAccidentalHits, whose output size depends on the values, and a
SparseToDense; a compiled program has static shapes, so here the hits are found by comparing
every true class with every sampled one, giving the same -FLT_MAX added to the same logits.
"""

from __future__ import annotations

from typing import Any

import numpy as np

import tfc.ops.array as _array
from tfc.ir import dtypes as _dt
from tfc.ir.graph import Tensor, name_scope
from tfc.ops.candidate_sampling import candidate_sampler_outputs, log_uniform_candidate_sampler
from tfc.ops.constant import constant, convert_to_tensor
from tfc.ops.embedding import embedding_lookup
from tfc.ops.linalg import matmul
from tfc.ops.logic import equal, where
from tfc.ops.math import cast, log
from tfc.ops.nn_loss import sigmoid_cross_entropy_with_logits, softmax_cross_entropy_with_logits_v2
from tfc.ops.reduce import reduce_any, reduce_sum

__all__ = ["nce_loss", "sampled_softmax_loss"]


def compute_sampled_logits(weights: Any, biases: Any, labels: Any, inputs: Any,
                           num_sampled: int, num_classes: int, num_true: int = 1,
                           sampled_values: Any = None, subtract_log_q: bool = True,
                           remove_accidental_hits: bool = False,
                           partition_strategy: str = "mod", name: str | None = None,
                           seed: int | None = None) -> tuple[Tensor, Tensor]:  # fmt: skip
    """(logits [batch, num_true + num_sampled], labels of the same shape: 1/num_true for the
    true classes, 0 for the sampled ones), as TF1's _compute_sampled_logits gives them."""
    with name_scope(name, "compute_sampled_logits"):
        inputs = convert_to_tensor(inputs, name="inputs")
        labels = convert_to_tensor(labels, name="labels")
        if inputs._shape_tuple is not None and len(inputs._shape_tuple) != 2:
            raise ValueError(f"inputs must be [batch_size, dim], got shape {inputs.get_shape()}")
        if labels.dtype != _dt.int64:
            labels = cast(labels, _dt.int64)
        if labels._shape_tuple is not None and len(labels._shape_tuple) != 2:
            raise ValueError(
                f"labels must be [batch_size, num_true], got shape {labels.get_shape()}"
            )
        labels_flat = _array.reshape(labels, [-1])
        if sampled_values is None:
            sampled_values = log_uniform_candidate_sampler(
                labels, num_true, num_sampled, True, num_classes, seed=seed
            )
        sampled, true_expected, sampled_expected = (
            _array.stop_gradient(t) for t in candidate_sampler_outputs(sampled_values)
        )
        sampled = cast(sampled, _dt.int64)
        n_true = _array.size(labels_flat)
        all_ids = _array.concat([labels_flat, sampled], 0)
        all_w = embedding_lookup(weights, all_ids, partition_strategy=partition_strategy)
        if all_w.dtype != inputs.dtype:
            all_w = cast(all_w, inputs.dtype)
        true_w = all_w[:n_true]
        sampled_w = all_w[n_true:]
        sampled_logits = matmul(inputs, sampled_w, transpose_b=True)
        all_b = embedding_lookup(biases, all_ids, partition_strategy=partition_strategy)
        if all_b.dtype != inputs.dtype:
            all_b = cast(all_b, inputs.dtype)
        true_b, sampled_b = all_b[:n_true], all_b[n_true:]
        # each row's inputs dotted with the weights of its num_true classes
        dim = _array.shape(true_w)[1:2]
        true_rows = _array.reshape(true_w, _array.concat([[-1, num_true], dim], 0))
        true_logits = reduce_sum(_array.expand_dims(inputs, 1) * true_rows, 2)
        true_logits += _array.reshape(true_b, [-1, num_true])
        sampled_logits += sampled_b
        if remove_accidental_hits:
            hit = reduce_any(equal(_array.expand_dims(labels, 2), sampled), 1)
            lowest = constant(-np.finfo(np.float32).max, dtype=sampled_logits.dtype)
            sampled_logits += where(hit, _array.fill(_array.shape(hit), lowest),
                                    _array.zeros_like(sampled_logits))  # fmt: skip
        if subtract_log_q:
            true_logits -= log(cast(true_expected, true_logits.dtype))
            sampled_logits -= log(cast(sampled_expected, sampled_logits.dtype))
        out_logits = _array.concat([true_logits, sampled_logits], 1)
        out_labels = _array.concat(
            [_array.ones_like(true_logits) / num_true, _array.zeros_like(sampled_logits)], 1
        )
        return out_logits, out_labels


def nce_loss(weights: Any, biases: Any, labels: Any, inputs: Any, num_sampled: int,
             num_classes: int, num_true: int = 1, sampled_values: Any = None,
             remove_accidental_hits: bool = False, partition_strategy: str = "mod",
             name: str = "nce_loss") -> Tensor:  # fmt: skip
    """`tf.nn.nce_loss`: noise-contrastive estimation, the per-example loss [batch]: logistic
    losses of the true classes (label 1/num_true) and `num_sampled` sampled ones (label 0).
    `weights` [num_classes, dim] (or its shards), `biases` [num_classes], `labels` [batch,
    num_true] class ids, `inputs` [batch, dim]."""
    logits, labels = compute_sampled_logits(
        weights, biases, labels, inputs, num_sampled, num_classes, num_true=num_true,
        sampled_values=sampled_values, subtract_log_q=True,
        remove_accidental_hits=remove_accidental_hits, partition_strategy=partition_strategy,
        name=name,
    )  # fmt: skip
    losses = sigmoid_cross_entropy_with_logits(labels=labels, logits=logits, name="sampled_losses")
    return reduce_sum(losses, 1)


def sampled_softmax_loss(weights: Any, biases: Any, labels: Any, inputs: Any, num_sampled: int,
                         num_classes: int, num_true: int = 1, sampled_values: Any = None,
                         remove_accidental_hits: bool = True, partition_strategy: str = "mod",
                         name: str = "sampled_softmax_loss",
                         seed: int | None = None) -> Tensor:  # fmt: skip
    """`tf.nn.sampled_softmax_loss`: the softmax cross-entropy over the true classes and
    `num_sampled` sampled ones, per example [batch] (arguments as nce_loss's)."""
    logits, labels = compute_sampled_logits(
        weights, biases, labels, inputs, num_sampled, num_classes, num_true=num_true,
        sampled_values=sampled_values, subtract_log_q=True,
        remove_accidental_hits=remove_accidental_hits, partition_strategy=partition_strategy,
        name=name, seed=seed,
    )  # fmt: skip
    labels = _array.stop_gradient(labels, name="labels_stop_gradient")
    return softmax_cross_entropy_with_logits_v2(labels=labels, logits=logits)
