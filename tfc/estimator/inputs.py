"""`tf.estimator.inputs.numpy_input_fn`: an input_fn that batches NumPy arrays."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from tfc.data.dataset import Dataset

__all__ = ["numpy_input_fn"]

# the feature key of an array `x` (TF1's name, so its error messages read the same)
_DIRECT_KEY = "__direct_np_input_key__"
_TARGET_KEY = "__target_key__"


def _as_ordered_dict(x: Any) -> dict[str, np.ndarray]:
    if isinstance(x, dict):
        if not x:
            raise ValueError("x cannot be an empty dict")
        return {k: np.asarray(x[k]) for k in sorted(x)}
    if isinstance(x, np.ndarray):
        return {_DIRECT_KEY: x}
    raise TypeError(f"x must be a dict or array; got {type(x).__name__}")


def numpy_input_fn(
    x: Any,
    y: Any = None,
    batch_size: int = 128,
    num_epochs: int | None = 1,
    shuffle: bool | None = None,
    queue_capacity: int = 1000,
    num_threads: int = 1,
) -> Callable[[], Any]:
    """An input_fn over `x` (an array, or a dict of arrays by feature name) and `y` (an array,
    a dict of arrays, or None), `batch_size` rows at a time, for `num_epochs` passes (None:
    forever, every batch full; otherwise the last batch may be smaller).

    With `shuffle`, rows come in random order through a buffer of `queue_capacity` rows (TF1's
    shuffling queue), seeded by the graph seed. The input_fn returns (features, labels)
    tensors, or features alone when `y` is None; features are a tensor when `x` is an array.
    Rows are read in the session's own thread, so `num_threads` only has to be positive.
    """
    if not isinstance(shuffle, bool):
        raise ValueError(
            "shuffle must be provided and explicitly set as boolean (it is recommended to set "
            f"it as True for training); got {shuffle}"
        )
    for name, value in [("batch_size", batch_size), ("queue_capacity", queue_capacity)]:
        if int(value) <= 0:
            raise ValueError(f"{name} must be positive, got {value}")
    if num_epochs is not None and int(num_epochs) <= 0:
        raise ValueError(f"num_epochs must be None or positive, got {num_epochs}")
    if int(num_threads) <= 0:
        raise ValueError(f"num_threads must be positive, got {num_threads}")

    def input_fn() -> Any:
        data = _as_ordered_dict(x)
        feature_keys = list(data)
        target_keys: list[str] | str | None
        if y is None:
            target_keys = None
        elif isinstance(y, dict):
            if not y:
                raise ValueError("y cannot be empty dict, use None instead.")
            target_keys = sorted(y)
            duplicates = set(feature_keys) & set(target_keys)
            if duplicates:
                raise ValueError(
                    f"{len(duplicates)} duplicate keys are found in both x and y: {duplicates}"
                )
            data.update({k: np.asarray(y[k]) for k in target_keys})
        else:
            target_keys = _TARGET_KEY
            data[_TARGET_KEY] = np.asarray(y)
        if len({v.shape[0] if v.ndim else None for v in data.values()}) != 1:
            shapes_x = {k: data[k].shape for k in feature_keys}
            if target_keys is None:
                shapes_y = None
            elif isinstance(target_keys, str):
                shapes_y = data[target_keys].shape
            else:
                shapes_y = {k: data[k].shape for k in target_keys}
            raise ValueError(
                "Length of tensors in x and y is mismatched. All elements in x and y must have "
                f"the same length.\nShapes in x: {shapes_x}\nShapes in y: {shapes_y}\n"
            )
        dataset = Dataset.from_tensor_slices(data)
        if shuffle:
            dataset = dataset.shuffle(int(queue_capacity))
        dataset = dataset.repeat(num_epochs).batch(int(batch_size))
        batch = dataset.make_one_shot_iterator().get_next()
        features = (
            batch[_DIRECT_KEY] if isinstance(x, np.ndarray) else {k: batch[k] for k in feature_keys}
        )
        if target_keys is None:
            return features
        if isinstance(target_keys, str):
            return features, batch[target_keys]
        return features, {k: batch[k] for k in target_keys}

    return input_fn
