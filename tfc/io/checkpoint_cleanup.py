"""Removing what interrupted saves leave in a checkpoint directory, before a run saves there."""

from __future__ import annotations

import os
import re

from tfc.io.atomic_write import remove_stale_temporaries
from tfc.io.checkpoint_state import parse_checkpoint_state
from tfc.io.safetensors import SUFFIX

__all__ = ["clean_checkpoint_directory"]


def _file_id(path: str) -> tuple[int, int] | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_dev, st.st_ino


def clean_checkpoint_directory(
    directory: str | os.PathLike,
    basename: str,
    max_to_keep: int | None,
    state_filename: str = "checkpoint",
) -> list[str]:
    """Remove from `directory` the temporary files of writers that are gone and, when
    `max_to_keep` is set (old checkpoints are deleted, so one the state file does not name is
    a leftover), the files `basename`-STEP.safetensors that the state file does not name: a
    save killed after writing its file but before the state file named it, or after the state
    file dropped the oldest but before its file was deleted. Without a readable state file no
    checkpoint is removed. The runtime's tfc_checkpoint_clean does the same for the native
    executables. The paths removed."""
    directory = os.fspath(directory)
    removed = remove_stale_temporaries(directory)
    if not max_to_keep:
        return removed
    try:
        with open(os.path.join(directory, state_filename), encoding="utf-8") as f:
            state = parse_checkpoint_state(f.read())
    except (OSError, ValueError, UnicodeDecodeError):
        return removed
    named = set()
    for prefix in [state.model_checkpoint_path, *state.all_model_checkpoint_paths]:
        if prefix:
            full = os.path.join(directory, prefix)  # an absolute prefix stays as it is
            file_id = _file_id(full if full.endswith(SUFFIX) else full + SUFFIX)
            if file_id is not None:
                named.add(file_id)
    stepped = re.compile(re.escape(basename) + r"-\d+" + re.escape(SUFFIX))
    for name in os.listdir(directory):
        path = os.path.join(directory, name)
        if stepped.fullmatch(name) and not os.path.islink(path) and os.path.isfile(path):
            if _file_id(path) not in named:
                os.unlink(path)
                removed.append(path)
    return removed
