"""`tf.train.Saver` and the checkpoint-directory functions, over safetensors checkpoint files.

A checkpoint is named by its prefix, as in TensorFlow ("dir/model.ckpt-1000"); its one data file
is `prefix + ".safetensors"` (no .index/.data pair: safetensors holds everything, and the
`safetensors` package reads it as is). Every function taking a prefix also takes that file's
path. The reading functions and `Saver.restore` also read checkpoints written by TensorFlow
(`prefix.index` + `prefix.data-*`, tfc/io/tensor_bundle.py), so a model trained in TF comes
in with its weights; `save` always writes safetensors. Tensors are named by their variables'
op names ("dense/kernel"), as in TF1; the file's metadata is {"format": "tfc",
"global_step": "<n>"} (the step when `save` is given one). The directory's
`checkpoint` file is TensorFlow's CheckpointState text, so TF's tools find the latest prefix.
Data and state files are each written atomically (temporary file, fsync, rename, directory
fsync); the data file first, so a state file never names a checkpoint that is not complete.
The first save of a Saver into a directory removes what interrupted saves left there
(temporary files of writers that are gone and, with max_to_keep, checkpoint files of its name
the state file does not list) and, when it has recorded none itself, takes over the
checkpoints the state file lists, so max_to_keep counts across processes as the native
executables' saves do.
"""

from __future__ import annotations

import glob
import logging
import os
import time
from typing import Any

import numpy as np

from tfc.io.checkpoint import (
    INDEX_SUFFIX,
    SUFFIX,
    CheckpointReader,
    CheckpointState,
    TensorBundleReader,
    clean_checkpoint_directory,
    find_checkpoint,
    format_checkpoint_state,
    open_checkpoint,
    parse_checkpoint_state,
    write_file_atomically,
    write_safetensors,
)
from tfc.io.meta_graph import MetaGraph, SaverDef
from tfc.ir import errors
from tfc.ir.graph import GraphKeys, Tensor, get_default_graph
from tfc.train.meta_graph_export import export_meta_graph
from tfc.variables import Variable

__all__ = [
    "Saver",
    "CheckpointState",
    "latest_checkpoint",
    "get_checkpoint_state",
    "update_checkpoint_state",
    "generate_checkpoint_state_proto",
    "checkpoint_exists",
    "get_checkpoint_mtimes",
    "remove_checkpoint",
    "load_checkpoint",
    "load_variable",
    "list_variables",
    "NewCheckpointReader",
]

_log = logging.getLogger("tfc")
_STATE_FILE = "checkpoint"


def _data_path(prefix: str) -> str:
    """The file of checkpoint `prefix` (a prefix, or the .safetensors path itself)."""
    prefix = os.fspath(prefix)
    return prefix if prefix.endswith(SUFFIX) else prefix + SUFFIX


def _found_file(checkpoint_prefix: str) -> str:
    """The file that holds checkpoint `checkpoint_prefix`: its .safetensors, or TF's .index."""
    kind, where = find_checkpoint(checkpoint_prefix)
    return where + INDEX_SUFFIX if kind == "tensorflow" else where


def checkpoint_exists(checkpoint_prefix: str) -> bool:
    """Whether the checkpoint `checkpoint_prefix` (a prefix, its .safetensors file, or a TF
    checkpoint's prefix or .index file) exists."""
    return os.path.isfile(_found_file(checkpoint_prefix))


def get_checkpoint_mtimes(checkpoint_prefixes: list[str]) -> list[float]:
    """The modification times of the checkpoints that exist (TF's semantics: others skipped)."""
    return [os.path.getmtime(_found_file(p)) for p in checkpoint_prefixes if checkpoint_exists(p)]


def remove_checkpoint(checkpoint_prefix: str, checkpoint_format_version: Any = None,
                      meta_graph_suffix: str = "meta") -> None:  # fmt: skip
    """Delete a checkpoint's files: its .safetensors file or TF's .index and .data-* files, and
    its .meta file."""
    prefix = os.fspath(checkpoint_prefix)
    paths = [_data_path(prefix), f"{prefix}.{meta_graph_suffix}"]
    if not prefix.endswith(SUFFIX):
        paths.append(prefix + INDEX_SUFFIX)
        paths += glob.glob(glob.escape(prefix) + ".data-[0-9][0-9][0-9][0-9][0-9]-of-[0-9]*")
    for path in paths:
        try:
            os.unlink(path)
        except FileNotFoundError:
            pass


# -- the `checkpoint` state file -----------------------------------------------------------------
def _state_path(checkpoint_dir: str, latest_filename: str | None) -> str:
    return os.path.join(checkpoint_dir, latest_filename or _STATE_FILE)


def generate_checkpoint_state_proto(
    save_dir: str,
    model_checkpoint_path: str,
    all_model_checkpoint_paths: list[str] | None = None,
    all_model_checkpoint_timestamps: list[float] | None = None,
    last_preserved_timestamp: float | None = None,
) -> CheckpointState:
    """`tf.train.generate_checkpoint_state_proto`: the CheckpointState naming
    model_checkpoint_path as the newest (added last to all_model_checkpoint_paths when it is
    not already there); with a relative save_dir, relative paths become relative to it."""
    paths = list(all_model_checkpoint_paths or [])
    if not paths or paths[-1] != model_checkpoint_path:
        paths.append(model_checkpoint_path)
    timestamps = list(all_model_checkpoint_timestamps or [])
    if timestamps and len(timestamps) != len(paths):
        raise ValueError(
            "Checkpoint timestamps, if provided, must match checkpoint paths (got paths "
            f"{paths} and timestamps {timestamps})"
        )
    if not os.path.isabs(save_dir):
        if not os.path.isabs(model_checkpoint_path):
            model_checkpoint_path = os.path.relpath(model_checkpoint_path, save_dir)
        paths = [p if os.path.isabs(p) else os.path.relpath(p, save_dir) for p in paths]
    return CheckpointState(
        model_checkpoint_path=model_checkpoint_path,
        all_model_checkpoint_paths=paths,
        all_model_checkpoint_timestamps=timestamps,
        last_preserved_timestamp=last_preserved_timestamp or 0.0,
    )


def get_checkpoint_state(
    checkpoint_dir: str, latest_filename: str | None = None
) -> CheckpointState | None:
    """The directory's CheckpointState with paths joined to it; None without a state file.

    As in TensorFlow, a state file that cannot be parsed is logged and ignored (None).
    """
    path = _state_path(os.fspath(checkpoint_dir), latest_filename)
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except FileNotFoundError:
        return None
    try:
        state = parse_checkpoint_state(text)
    except (ValueError, UnicodeDecodeError) as e:
        _log.warning("%s: %s; checkpoint state ignored", path, e)
        return None
    if not state.model_checkpoint_path:
        raise ValueError(f"Invalid checkpoint state loaded from {checkpoint_dir}")
    if not os.path.isabs(state.model_checkpoint_path):
        state.model_checkpoint_path = os.path.join(checkpoint_dir, state.model_checkpoint_path)
    state.all_model_checkpoint_paths = [
        p if os.path.isabs(p) else os.path.join(checkpoint_dir, p)
        for p in state.all_model_checkpoint_paths
    ]
    return state


def update_checkpoint_state(
    save_dir: str,
    model_checkpoint_path: str,
    all_model_checkpoint_paths: list[str] | None = None,
    latest_filename: str | None = None,
    all_model_checkpoint_timestamps: list[float] | None = None,
    last_preserved_timestamp: float | None = None,
    save_relative_paths: bool = False,
) -> None:
    """Write the directory's `checkpoint` state file atomically (TF's update_checkpoint_state)."""
    save_dir = os.fspath(save_dir)
    paths = list(all_model_checkpoint_paths or [])
    if not paths or paths[-1] != model_checkpoint_path:
        paths.append(model_checkpoint_path)

    def stored(p: str) -> str:
        # relative to the directory when asked, or when the directory itself is relative (TF)
        if save_relative_paths and os.path.isabs(p):
            return os.path.relpath(p, save_dir)
        if not os.path.isabs(save_dir) and not os.path.isabs(p):
            return os.path.relpath(p, save_dir)
        return p

    state = CheckpointState(
        stored(model_checkpoint_path),
        [stored(p) for p in paths],
        list(all_model_checkpoint_timestamps or []),
        last_preserved_timestamp or 0.0,
    )
    state_file = _state_path(save_dir, latest_filename)
    if os.path.abspath(state_file) == os.path.abspath(_data_path(model_checkpoint_path)):
        raise RuntimeError(
            f"Save path '{model_checkpoint_path}' conflicts with path used for checkpoint "
            "state.  Please use a different save path."
        )
    write_file_atomically(state_file, [format_checkpoint_state(state).encode("utf-8")])


def latest_checkpoint(checkpoint_dir: str, latest_filename: str | None = None) -> str | None:
    """The prefix of the newest checkpoint the directory's state file names, if it exists."""
    state = get_checkpoint_state(checkpoint_dir, latest_filename)
    if state and state.model_checkpoint_path:
        if checkpoint_exists(state.model_checkpoint_path):
            return state.model_checkpoint_path
        _log.error("Couldn't match files for checkpoint %s", state.model_checkpoint_path)
    return None


# -- reading checkpoints directly ----------------------------------------------------------------
def _resolve(ckpt_dir_or_file: str) -> str:
    ckpt_dir_or_file = os.fspath(ckpt_dir_or_file)
    if os.path.isdir(ckpt_dir_or_file):
        latest = latest_checkpoint(ckpt_dir_or_file)
        if latest is None:
            raise ValueError(f"Couldn't find 'checkpoint' file or checkpoints in given directory "
                             f"{ckpt_dir_or_file}")  # fmt: skip
        return latest
    return ckpt_dir_or_file


def load_checkpoint(ckpt_dir_or_file: str) -> CheckpointReader | TensorBundleReader:
    """A reader of the checkpoint (a directory's latest, a prefix, a .safetensors file, or a
    TensorFlow checkpoint's prefix or .index file)."""
    return open_checkpoint(_resolve(ckpt_dir_or_file))


NewCheckpointReader = load_checkpoint


def load_variable(ckpt_dir_or_file: str, name: str) -> np.ndarray:
    """One tensor of a checkpoint (`name` may carry TF's ":0" suffix)."""
    if name.endswith(":0"):
        name = name[:-2]
    with load_checkpoint(ckpt_dir_or_file) as reader:
        return reader.get_tensor(name)


def list_variables(ckpt_dir_or_file: str) -> list[tuple[str, list[int]]]:
    """(name, shape) of every tensor of a checkpoint, sorted by name."""
    with load_checkpoint(ckpt_dir_or_file) as reader:
        return sorted(reader.get_variable_to_shape_map().items())


# -- Saver ---------------------------------------------------------------------------------------
def _variable_op(value: Any) -> Any:
    """The VariableV2 op of a Variable or of a variable's ref tensor; TypeError otherwise."""
    op = value.op if isinstance(value, (Variable, Tensor)) else None
    if op is None or op.type != "VariableV2":
        raise TypeError(f"Variable to save is not a Variable: {value!r}")
    return op


class Saver:
    """`tf.train.Saver`: saves and restores variables as safetensors checkpoints.

    `var_list` is None (all global variables), a list of Variables (saved under their op
    names), or a dict checkpoint key -> Variable; `saver_def` (a tfc meta graph's SaverDef)
    names them and the options instead. `sharded`, `write_version`, `name` and
    `restore_sequentially` are accepted for TF's signature and change nothing: one file is
    written per checkpoint. `save` writes no .meta file (`write_meta_graph` changes nothing);
    `export_meta_graph` writes one.
    """

    def __init__(
        self,
        var_list: Any = None,
        reshape: bool = False,
        sharded: bool = False,
        max_to_keep: int | None = 5,
        keep_checkpoint_every_n_hours: float = 10000.0,
        name: str | None = None,
        restore_sequentially: bool = False,
        saver_def: Any = None,
        builder: Any = None,
        defer_build: bool = False,
        allow_empty: bool = False,
        write_version: Any = None,
        pad_step_number: bool = False,
        save_relative_paths: bool = False,
        filename: str | None = None,
    ) -> None:
        if builder is not None or saver_def is not None and not isinstance(saver_def, SaverDef):
            raise ValueError(
                "tfc's Saver builds no save/restore ops, so it takes no builder, and as "
                "saver_def only the SaverDef of a tfc meta graph"
            )
        if saver_def is not None:  # the variables it names, in the default graph
            graph = get_default_graph()
            var_list = {
                key: graph.get_operation_by_name(op).outputs[0]
                for key, op in saver_def.var_list.items()
            }
            max_to_keep = saver_def.max_to_keep
            keep_checkpoint_every_n_hours = saver_def.keep_checkpoint_every_n_hours
            sharded = saver_def.sharded
            pad_step_number = saver_def.pad_step_number
            save_relative_paths = saver_def.save_relative_paths
        if defer_build and var_list is not None:
            raise ValueError(
                "If `var_list` is provided then build cannot be deferred. Either set "
                "defer_build=False or var_list=None."
            )
        self._var_list_arg = var_list
        self._reshape = reshape
        self._sharded = sharded
        self._max_to_keep = max_to_keep
        self._keep_every_n_hours = keep_checkpoint_every_n_hours
        self._allow_empty = allow_empty
        self._pad_step_number = pad_step_number
        self._save_relative_paths = save_relative_paths
        self._filename = filename
        self._last_checkpoints: list[tuple[str, float]] = []
        self._checkpoints_to_be_deleted: list[tuple[str, float]] = []
        self._prepared: set[tuple[str, str, str]] = set()  # (directory, name, state file)
        self._next_checkpoint_time = time.time() + keep_checkpoint_every_n_hours * 3600
        self._vars: dict[str, Any] | None = None
        if not defer_build:
            self.build()

    def build(self) -> None:
        """Resolve the variables to save (done at construction unless `defer_build`)."""
        var_list = self._var_list_arg
        if var_list is None:
            var_list = get_default_graph().get_collection(GraphKeys.GLOBAL_VARIABLES)
        if isinstance(var_list, dict):
            items = list(var_list.items())
        else:
            items = []
            for v in var_list:
                items.append((_variable_op(v).name, v))
        ops: dict[str, Any] = {}
        for key, v in items:
            if not isinstance(key, str):
                raise TypeError(f"checkpoint key {key!r} of var_list is not a str")
            if key in ops:
                raise ValueError(f"At least two variables have the same name: {key}")
            ops[key] = _variable_op(v)
        if not ops and not self._allow_empty:
            raise ValueError("No variables to save")
        self._vars = ops

    @property
    def saver_def(self) -> SaverDef:
        """What rebuilds this Saver in an imported meta graph: keys, variables and options."""
        return SaverDef(
            var_list={key: op.name for key, op in self._built().items()},
            max_to_keep=self._max_to_keep,
            keep_checkpoint_every_n_hours=self._keep_every_n_hours,
            sharded=self._sharded,
            pad_step_number=self._pad_step_number,
            save_relative_paths=self._save_relative_paths,
        )

    def as_saver_def(self) -> SaverDef:
        return self.saver_def

    def export_meta_graph(
        self,
        filename: str | None = None,
        collection_list: list[str] | None = None,
        as_text: bool = False,
        export_scope: str | None = None,
        clear_devices: bool = False,
        clear_extraneous_savers: bool = False,
        strip_default_attrs: bool = False,
        save_debug_info: bool = False,
    ) -> MetaGraph:
        """`tf.train.export_meta_graph` of the default graph, with this Saver in it."""
        return export_meta_graph(
            filename,
            saver_def=self.saver_def,
            collection_list=collection_list,
            as_text=as_text,
            export_scope=export_scope,
            clear_devices=clear_devices,
        )

    @property
    def _is_empty(self) -> bool:
        return not self._vars

    def _built(self) -> dict[str, Any]:
        if self._vars is None:
            self.build()
        assert self._vars is not None
        return self._vars

    # -- which checkpoints are kept --------------------------------------------------------------
    @property
    def last_checkpoints(self) -> list[str]:
        """The prefixes of the checkpoints this Saver keeps, oldest first."""
        return [p for p, _ in self._last_checkpoints]

    def set_last_checkpoints(self, last_checkpoints: list[str]) -> None:
        self._last_checkpoints = [(p, time.time()) for p in last_checkpoints]

    def set_last_checkpoints_with_time(self, last_checkpoints_with_time: list) -> None:
        self._last_checkpoints = [(p, float(t)) for p, t in last_checkpoints_with_time]

    def recover_last_checkpoints(self, checkpoint_paths: list[str]) -> None:
        """Adopt the checkpoints of a previous process (those that still exist) as kept ones."""
        kept = []
        for path in checkpoint_paths:
            try:
                mtimes = get_checkpoint_mtimes([path])
            except OSError:  # deleted meanwhile by another process: nothing to keep
                continue
            if mtimes:
                kept.append((path, mtimes[0]))
        self.set_last_checkpoints_with_time(kept)

    def _record_last_checkpoint(self, path: str) -> None:
        if not self._max_to_keep:
            return
        self._last_checkpoints = [p for p in self._last_checkpoints if p[0] != path]
        self._last_checkpoints.append((path, time.time()))
        if len(self._last_checkpoints) > self._max_to_keep:
            self._checkpoints_to_be_deleted.append(self._last_checkpoints.pop(0))

    def _prepare_directory(self, parent: str, save_path: str, latest_filename: str) -> None:
        """Before the first save into `parent`: remove what interrupted saves left there, and
        continue the state file's list of kept checkpoints when this Saver has none yet."""
        key = (os.path.abspath(parent), os.path.basename(save_path), latest_filename)
        if key in self._prepared:
            return
        self._prepared.add(key)
        # checkpoints kept for keep_checkpoint_every_n_hours are dropped from the state file on
        # purpose: with it, no checkpoint file is taken for a leftover
        keep = self._max_to_keep if self._keep_every_n_hours >= 10000.0 else None
        for path in clean_checkpoint_directory(parent, key[1], keep, latest_filename):
            _log.info("removed %s, left by an interrupted save", path)
        if self._max_to_keep and not self._last_checkpoints:
            try:
                state = get_checkpoint_state(parent, latest_filename)
            except ValueError:
                state = None
            if state is not None:
                self.recover_last_checkpoints(state.all_model_checkpoint_paths)

    def _maybe_delete_old_checkpoints(self, meta_graph_suffix: str) -> None:
        while self._checkpoints_to_be_deleted:
            path, saved_at = self._checkpoints_to_be_deleted.pop(0)
            # keep one checkpoint per keep_checkpoint_every_n_hours of training, as TF does
            if saved_at > self._next_checkpoint_time:
                self._next_checkpoint_time += self._keep_every_n_hours * 3600
                continue
            try:
                remove_checkpoint(path, meta_graph_suffix=meta_graph_suffix)
            except OSError as e:
                _log.warning("Ignoring: %s", e)

    # -- save and restore ------------------------------------------------------------------------
    def save(
        self,
        sess: Any,
        save_path: str,
        global_step: Any = None,
        latest_filename: str | None = None,
        meta_graph_suffix: str = "meta",
        write_meta_graph: bool = True,
        write_state: bool = True,
        strip_default_attrs: bool = False,
    ) -> str | None:
        """Write the variables' values from `sess`; returns the checkpoint prefix.

        The prefix is `save_path`, or `save_path-<global_step>` (`global_step` an int, or a
        tensor or variable evaluated in `sess`); the file is the prefix plus ".safetensors".
        """
        if not hasattr(sess, "read_variable"):
            raise TypeError(f"'sess' must be a Session; {sess}")
        save_path = os.fspath(save_path)
        latest_filename = latest_filename or _STATE_FILE
        step = None
        if global_step is not None:
            is_number = isinstance(global_step, (int, np.integer))
            step = global_step if is_number else sess.run(global_step)
            step = int(np.asarray(step))
            checkpoint_file = (
                f"{save_path}-{step:08d}" if self._pad_step_number else f"{save_path}-{step}"
            )
        else:
            checkpoint_file = save_path
            if os.path.basename(save_path) == latest_filename and not self._sharded:
                raise ValueError(
                    f"'latest_filename' collides with 'save_path': '{latest_filename}' and "
                    f"'{save_path}'"
                )
        variables = self._built()
        if self._is_empty:
            return None
        parent = os.path.dirname(save_path)
        if not os.path.isdir(parent or "."):
            raise ValueError(f"Parent directory of {save_path} doesn't exist, can't save.")
        _check_graph(sess, variables)
        values = {key: sess.read_variable(op.name) for key, op in variables.items()}
        if write_state:
            self._prepare_directory(parent or ".", save_path, latest_filename)
        metadata = {"format": "tfc"}
        if step is not None:
            metadata["global_step"] = str(step)
        write_safetensors(_data_path(checkpoint_file), values, metadata)
        if write_state:
            self._record_last_checkpoint(checkpoint_file)
            update_checkpoint_state(
                parent or ".",
                checkpoint_file,
                self.last_checkpoints,
                latest_filename,
                save_relative_paths=self._save_relative_paths,
            )
            self._maybe_delete_old_checkpoints(meta_graph_suffix)
        return checkpoint_file

    def restore(self, sess: Any, save_path: str | None) -> None:
        """Set the variables in `sess` from checkpoint `save_path` (a prefix or its file).

        Every variable is checked (present, same dtype, same shape, or the same element count
        with `reshape=True`) before any is written, so a failed restore changes nothing.
        """
        variables = self._built()
        if self._is_empty:
            return
        if save_path is None:
            raise ValueError("Can't load save_path when it is None.")
        save_path = os.fspath(save_path)
        if not checkpoint_exists(save_path):
            raise ValueError(f"The passed save_path is not a valid checkpoint: {save_path}")
        _check_graph(sess, variables)
        values = {}
        with open_checkpoint(save_path) as reader:
            failed = f"Restoring from checkpoint {reader.path} failed"
            for key, op in variables.items():
                info = reader.tensors.get(key)
                if info is None:
                    raise errors.NotFoundError(
                        None, op, f"{failed}: Key {key} not found in checkpoint"
                    )
                dtype = op.outputs[0].dtype
                if info.np_dtype != dtype.np:
                    raise errors.InvalidArgumentError(
                        None,
                        op,
                        f"{failed}: tensor_name = {key}; expected dtype {dtype.tf_name} does "
                        f"not equal original dtype {info.tf_dtype_name}",
                    )
                shape = tuple(op.outputs[0].shape.as_list())
                if info.shape != shape and not (
                    self._reshape and np.prod(info.shape) == np.prod(shape)
                ):
                    raise errors.InvalidArgumentError(
                        None,
                        op,
                        f"{failed}: variable {key}: Assign requires shapes of both tensors to "
                        f"match. lhs shape= {list(shape)} rhs shape= {list(info.shape)}",
                    )
                values[op.name] = reader.get_tensor(key).reshape(shape)
        for name, value in values.items():
            sess.write_variable(name, value)


def _check_graph(sess: Any, variables: dict[str, Any]) -> None:
    """Refuse before touching anything when a variable is not in the session's graph."""
    for op in variables.values():
        if op.graph is not sess.graph:
            raise ValueError(f"Variable {op.name} is not in the graph of the session {sess}")
