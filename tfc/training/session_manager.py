"""`tf.train.SessionManager`: a Session made ready to train, restored from the latest checkpoint
of a directory when there is one, else initialized."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import numpy as np

import tfc.logging as tf_logging
from tfc.client.session import Session
from tfc.ir import errors
from tfc.ir.graph import Graph, get_default_graph
from tfc.train.saver import Saver, get_checkpoint_state
from tfc.train.scaffold import UninitializedVariables

__all__ = ["SessionManager"]


def _name_of(obj: Any) -> str:
    return "None" if obj is None else getattr(obj, "name", f"<no name for {type(obj)}>")


class SessionManager:
    """Creates Sessions of `graph` and checks that they are ready.

    A model is ready when `ready_op` is: an empty tensor (TF1's convention: the names of what
    is not initialized yet), an UninitializedVariables check finding nothing, or None (no
    check). `local_init_op` runs on every new session once `ready_for_local_init_op` is
    ready (the global variables are set, by init_op or a checkpoint).
    """

    def __init__(
        self,
        local_init_op: Any = None,
        ready_op: Any = None,
        ready_for_local_init_op: Any = None,
        graph: Graph | None = None,
        recovery_wait_secs: float = 30,
        local_init_run_options: Any = None,
        local_init_feed_dict: dict | None = None,
    ) -> None:
        if ready_for_local_init_op is not None and local_init_op is None:
            raise ValueError(
                "If you pass a ready_for_local_init_op you must also pass a local_init_op , "
                f"ready_for_local_init_op [{ready_for_local_init_op}]"
            )
        self._local_init_op = local_init_op
        self._ready_op = ready_op
        self._ready_for_local_init_op = ready_for_local_init_op
        self._graph = graph if graph is not None else get_default_graph()
        self._recovery_wait_secs = recovery_wait_secs
        self._local_init_run_options = local_init_run_options
        self._local_init_feed_dict = local_init_feed_dict

    # -- the three ways to a session ----------------------------------------------------------
    def prepare_session(
        self,
        master: str,
        init_op: Any = None,
        saver: Saver | None = None,
        checkpoint_dir: str | None = None,
        checkpoint_filename_with_path: str | None = None,
        wait_for_checkpoint: bool = False,
        max_wait_secs: float = 7200,
        config: Any = None,
        init_feed_dict: dict | None = None,
        init_fn: Callable[[Session], Any] | None = None,
    ) -> Session:
        """A ready session: restored by `saver` from `checkpoint_filename_with_path` or the
        latest checkpoint of `checkpoint_dir` (waiting for one up to `max_wait_secs` with
        `wait_for_checkpoint`), else initialized by `init_op` then `init_fn(session)`; then the
        local init op. RuntimeError when the model is still not ready."""
        sess, restored = self._restore_checkpoint(
            master, saver, checkpoint_dir, checkpoint_filename_with_path,
            wait_for_checkpoint, max_wait_secs, config,
        )  # fmt: skip
        if not restored:
            if init_op is None and not init_fn and self._local_init_op is None:
                raise RuntimeError(
                    "Model is not initialized and no init_op or init_fn or local_init_op was given"
                )
            if init_op is not None:
                sess.run(init_op, feed_dict=init_feed_dict)
            if init_fn:
                init_fn(sess)
        ran_local_init, message = self._try_run_local_init_op(sess)
        if not ran_local_init:
            raise RuntimeError(
                "Init operations did not make model ready for local_init.  Init op: "
                f"{_name_of(init_op)}, init fn: {init_fn}, error: {message}"
            )
        ready, message = self._model_ready(sess)
        if not ready:
            raise RuntimeError(
                f"Init operations did not make model ready.  Init op: {_name_of(init_op)}, init "
                f"fn: {init_fn}, local_init_op: {self._local_init_op}, error: {message}"
            )
        return sess

    def recover_session(
        self,
        master: str,
        saver: Saver | None = None,
        checkpoint_dir: str | None = None,
        checkpoint_filename_with_path: str | None = None,
        wait_for_checkpoint: bool = False,
        max_wait_secs: float = 7200,
        config: Any = None,
    ) -> tuple[Session, bool]:
        """(session, whether a checkpoint made it ready): restored as prepare_session does,
        but never initialized; the session is returned either way."""
        sess, restored = self._restore_checkpoint(
            master, saver, checkpoint_dir, checkpoint_filename_with_path,
            wait_for_checkpoint, max_wait_secs, config,
        )  # fmt: skip
        ran_local_init, message = self._try_run_local_init_op(sess)
        if not restored:
            return sess, False
        source = checkpoint_dir or checkpoint_filename_with_path
        if not ran_local_init:
            tf_logging.info(
                "Restoring model from %s did not make model ready for local init: %s",
                source,
                message,
            )
            return sess, False
        ready, message = self._model_ready(sess)
        if not ready:
            tf_logging.info("Restoring model from %s did not make model ready: %s", source, message)
            return sess, False
        tf_logging.info("Restored model from %s", source)
        return sess, True

    def wait_for_session(
        self, master: str, config: Any = None, max_wait_secs: float | None = float("inf")
    ) -> Session:
        """A new session that the local init op alone makes ready, as a non-chief worker's.

        TF1's non-chief worker waits here (up to `max_wait_secs`) until the chief, through the
        shared server, has initialized the model. A tfc Session holds its own variables in this
        process, out of any chief's reach, so waiting could never help: a session that is not
        ready raises DeadlineExceededError at once, saying so.
        """
        sess = Session(master, graph=self._graph, config=config)
        ready_message = None
        ran_local_init, local_message = self._try_run_local_init_op(sess)
        if ran_local_init:
            ready, ready_message = self._model_ready(sess)
            if ready:
                return sess
        sess.close()
        raise errors.DeadlineExceededError(
            None,
            None,
            f"Session was not ready ({ready_message or local_message}) and cannot become "
            "ready by waiting: a tfc Session keeps its variables in this process, where no "
            "chief initializes them for another session. Initialize it as the chief does "
            "(is_chief=True, ChiefSessionCreator), or run the workers of a cluster as "
            "compiled executables: tfc compile MODEL.py --cluster (docs/distributed.md)",
        )

    # -- helpers --------------------------------------------------------------------------------
    def _restore_checkpoint(
        self,
        master: str,
        saver: Saver | None,
        checkpoint_dir: str | None,
        checkpoint_filename_with_path: str | None,
        wait_for_checkpoint: bool,
        max_wait_secs: float,
        config: Any,
    ) -> tuple[Session, bool]:
        """A new session, and whether a checkpoint was restored into it."""
        if checkpoint_dir and checkpoint_filename_with_path:
            raise ValueError(
                "Can not provide both checkpoint_dir and checkpoint_filename_with_path."
            )
        sess = Session(master, graph=self._graph, config=config)
        if not saver or not (checkpoint_dir or checkpoint_filename_with_path):
            return sess, False
        if checkpoint_filename_with_path:
            saver.restore(sess, checkpoint_filename_with_path)
            return sess, True
        waited = 0.0
        state = get_checkpoint_state(checkpoint_dir)
        while state is None or not state.model_checkpoint_path:
            if not wait_for_checkpoint or waited >= max_wait_secs:
                return sess, False
            tf_logging.info("Waiting for checkpoint to be available.")
            time.sleep(self._recovery_wait_secs)
            waited += self._recovery_wait_secs
            state = get_checkpoint_state(checkpoint_dir)
        saver.restore(sess, state.model_checkpoint_path)
        saver.recover_last_checkpoints(list(state.all_model_checkpoint_paths))
        return sess, True

    def _model_ready(self, sess: Session) -> tuple[bool, str | None]:
        return _ready(self._ready_op, sess, "Model not ready")

    def _try_run_local_init_op(self, sess: Session) -> tuple[bool, str | None]:
        """(whether the local init op ran, or there is none; why not)."""
        if self._local_init_op is None:
            return True, None
        ready, message = _ready(
            self._ready_for_local_init_op, sess, "Model not ready for local init"
        )
        if not ready:
            return False, message
        tf_logging.info("Running local_init_op.")
        sess.run(
            self._local_init_op,
            feed_dict=self._local_init_feed_dict,
            options=self._local_init_run_options,
        )
        tf_logging.info("Done running local_init_op.")
        return True, None


def _ready(check: Any, sess: Session, what: str) -> tuple[bool, str | None]:
    """(whether `check` finds the model ready, the names of what is not)."""
    if check is None:
        return True, None
    if isinstance(check, UninitializedVariables):
        names = check.names(sess)
    else:
        try:
            value = sess.run(check)
        except errors.FailedPreconditionError as e:
            if "uninitialized" not in str(e):
                tf_logging.warning("%s : error [%s]", what, e)
                raise
            return False, str(e)
        if value is None or np.size(value) == 0:
            return True, None
        names = [v.decode() if isinstance(v, bytes) else str(v) for v in np.ravel(value)]
    if not names:
        return True, None
    return False, "Variables not initialized: " + ", ".join(names)
