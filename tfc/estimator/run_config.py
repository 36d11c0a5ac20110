"""`tf.estimator.RunConfig`: where an Estimator keeps its checkpoints and how often it saves."""

from __future__ import annotations

from typing import Any

__all__ = ["RunConfig"]

DEFAULT_SEED = 42  # tfc estimators are reproducible unless RunConfig(tf_random_seed=...) says so
_USE_DEFAULT = object()
_UNSUPPORTED = ("train_distribute", "eval_distribute", "experimental_distribute", "protocol")


class RunConfig:
    """An Estimator's run settings, as TF1's RunConfig (a single local worker, the chief).

    Checkpoints are saved every `save_checkpoints_secs` (600 by default) or every
    `save_checkpoints_steps` steps, keeping `keep_checkpoint_max`. `session_config` goes to
    the Session; `device_fn` places the ops as tf.device(device_fn) would. tfc writes no
    summaries, so `save_summary_steps` changes nothing; distribution strategies and RPC
    protocols are not part of tfc (tfc compile --cluster builds distributed training).
    """

    def __init__(
        self,
        model_dir: str | None = None,
        tf_random_seed: int | None = DEFAULT_SEED,
        save_summary_steps: int = 100,
        save_checkpoints_steps: Any = _USE_DEFAULT,
        save_checkpoints_secs: Any = _USE_DEFAULT,
        session_config: Any = None,
        keep_checkpoint_max: int | None = 5,
        keep_checkpoint_every_n_hours: float = 10000,
        log_step_count_steps: int | None = 100,
        train_distribute: Any = None,
        device_fn: Any = None,
        protocol: Any = None,
        eval_distribute: Any = None,
        experimental_distribute: Any = None,
        experimental_max_worker_delay_secs: Any = None,
        session_creation_timeout_secs: int = 7200,
        checkpoint_save_graph_def: bool = True,
    ) -> None:
        given = dict(locals())
        for name in _UNSUPPORTED:
            if given[name] is not None:
                raise NotImplementedError(
                    f"RunConfig({name}=...) is not supported: tfc's Estimator runs one local "
                    "worker (tfc compile --cluster builds distributed training)"
                )
        if save_checkpoints_steps is _USE_DEFAULT and save_checkpoints_secs is _USE_DEFAULT:
            save_checkpoints_steps, save_checkpoints_secs = None, 600
        elif save_checkpoints_secs is _USE_DEFAULT:
            save_checkpoints_secs = None
        elif save_checkpoints_steps is _USE_DEFAULT:
            save_checkpoints_steps = None
        elif save_checkpoints_steps is not None and save_checkpoints_secs is not None:
            raise ValueError(
                "`save_checkpoints_steps` and `save_checkpoints_secs` cannot be both set."
            )
        for name, value in [
            ("save_checkpoints_steps", save_checkpoints_steps),
            ("save_checkpoints_secs", save_checkpoints_secs),
            ("log_step_count_steps", log_step_count_steps),
        ]:
            if value is not None and value <= 0:
                raise ValueError(f"{name} must be positive or None, got {value}")
        if device_fn is not None and not callable(device_fn):
            raise ValueError(f"device_fn must be callable, got {device_fn}")
        self._settings = {k: v for k, v in given.items() if k != "self"}
        self._settings["save_checkpoints_steps"] = save_checkpoints_steps
        self._settings["save_checkpoints_secs"] = save_checkpoints_secs

    def replace(self, **kwargs: Any) -> RunConfig:
        """A copy with some settings changed."""
        unknown = sorted(set(kwargs) - set(self._settings))
        if unknown:
            raise ValueError(
                f"Replacing {unknown} is not supported. Allowed: {sorted(self._settings)}"
            )
        settings = {**self._settings, **kwargs}
        # setting one save interval clears the other, as TF1's replace does
        both = "save_checkpoints_steps" in kwargs and "save_checkpoints_secs" in kwargs
        if not both and kwargs.get("save_checkpoints_steps") is not None:
            settings["save_checkpoints_secs"] = None
        elif not both and kwargs.get("save_checkpoints_secs") is not None:
            settings["save_checkpoints_steps"] = None
        return RunConfig(**settings)

    def __repr__(self) -> str:
        return f"RunConfig({', '.join(f'{k}={v!r}' for k, v in self._settings.items())})"

    # -- the settings ----------------------------------------------------------------------------
    @property
    def model_dir(self) -> str | None:
        return self._settings["model_dir"]

    @property
    def tf_random_seed(self) -> int | None:
        return self._settings["tf_random_seed"]

    @property
    def save_summary_steps(self) -> int:
        return self._settings["save_summary_steps"]

    @property
    def save_checkpoints_steps(self) -> int | None:
        return self._settings["save_checkpoints_steps"]

    @property
    def save_checkpoints_secs(self) -> float | None:
        return self._settings["save_checkpoints_secs"]

    @property
    def session_config(self) -> Any:
        return self._settings["session_config"]

    @property
    def keep_checkpoint_max(self) -> int | None:
        return self._settings["keep_checkpoint_max"]

    @property
    def keep_checkpoint_every_n_hours(self) -> float:
        return self._settings["keep_checkpoint_every_n_hours"]

    @property
    def log_step_count_steps(self) -> int | None:
        return self._settings["log_step_count_steps"]

    @property
    def device_fn(self) -> Any:
        return self._settings["device_fn"]

    @property
    def session_creation_timeout_secs(self) -> int:
        return self._settings["session_creation_timeout_secs"]

    @property
    def checkpoint_save_graph_def(self) -> bool:
        return self._settings["checkpoint_save_graph_def"]

    # -- the cluster: one local chief worker -----------------------------------------------------
    train_distribute = None
    eval_distribute = None
    experimental_distribute = None
    protocol = None
    cluster_spec = None
    service = None
    master = ""
    evaluation_master = ""
    task_type = "worker"
    task_id = 0
    global_id_in_cluster = 0
    is_chief = True
    num_ps_replicas = 0
    num_worker_replicas = 1
