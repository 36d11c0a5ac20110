"""`tf.train.ClusterSpec`: the jobs of a cluster and the network address of each task, as TF1
describes a cluster to `replica_device_setter`, `tf.train.Server` and `tfc compile --cluster`.

ClusterDef, JobDef and ServerDef hold the fields of TF's protocol buffers of those names as
plain data (tfc sends no protocol buffers anywhere).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

__all__ = ["ClusterDef", "ClusterSpec", "JobDef", "ServerDef"]


@dataclass
class JobDef:
    """One job: its name and each task's "host:port" by task index."""

    name: str = ""
    tasks: dict[int, str] = field(default_factory=dict)


@dataclass
class ClusterDef:
    """The jobs of a cluster, sorted by name."""

    job: list[JobDef] = field(default_factory=list)


@dataclass
class ServerDef:
    """One task of a cluster: the cluster, its job and index, the protocol, and the default
    configuration of the sessions it serves."""

    cluster: ClusterDef = field(default_factory=ClusterDef)
    job_name: str = ""
    task_index: int = 0
    protocol: str = ""
    default_session_config: Any = None


class ClusterSpec:
    """A cluster: job name -> task index -> "host:port".

    Built from a dict of job names to lists of addresses (task i at position i) or to dicts
    {task index: address} (a sparse job), from a ClusterDef, or from another ClusterSpec.
    """

    def __init__(self, cluster: Any) -> None:
        if isinstance(cluster, ClusterSpec):
            cluster = cluster.as_cluster_def()
        if isinstance(cluster, ClusterDef):
            self._jobs = {job.name: dict(job.tasks) for job in cluster.job}
        elif isinstance(cluster, dict):
            self._jobs = {}
            for job_name, tasks in cluster.items():
                if isinstance(tasks, (list, tuple)):
                    self._jobs[job_name] = dict(enumerate(tasks))
                elif isinstance(tasks, dict):
                    self._jobs[job_name] = {int(i): task for i, task in tasks.items()}
                else:
                    raise TypeError(
                        f"The tasks for job {job_name!r} must be a list or a dictionary from "
                        "integers to strings."
                    )
        else:
            raise TypeError(
                "`cluster` must be a dictionary mapping one or more job names to lists of "
                "network addresses, or a `ClusterDef` protocol buffer"
            )
        for job_name, tasks in self._jobs.items():
            if not isinstance(job_name, str):
                raise TypeError(f"Job name {job_name!r} must be bytes or unicode")
            for address in tasks.values():
                if not isinstance(address, str):
                    raise TypeError(f"Task address {address!r} must be bytes or unicode")

    def __bool__(self) -> bool:
        return bool(self._jobs)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, ClusterSpec):
            return self._jobs == other._jobs
        return self._jobs == other

    def __ne__(self, other: object) -> bool:
        return not self == other

    __hash__ = None  # type: ignore[assignment]  # mutable-looking, compared by value

    def __repr__(self) -> str:
        jobs = self.as_dict()
        items = ", ".join(f"{k!r}: {jobs[k]!r}" for k in sorted(jobs))
        return "ClusterSpec({" + items + "})"

    @property
    def jobs(self) -> list[str]:
        """The job names, in the order they were given."""
        return list(self._jobs)

    def _job(self, job_name: str) -> dict[int, str]:
        try:
            return self._jobs[job_name]
        except KeyError:
            raise ValueError(f"No such job in cluster: {job_name!r}") from None

    def num_tasks(self, job_name: str) -> int:
        return len(self._job(job_name))

    def task_indices(self, job_name: str) -> list[int]:
        return sorted(self._job(job_name))

    def task_address(self, job_name: str, task_index: int) -> str:
        job = self._job(job_name)
        try:
            return job[task_index]
        except KeyError:
            raise ValueError(f"No task with index {task_index!r} in job {job_name!r}") from None

    def job_tasks(self, job_name: str) -> list[str | None]:
        """The job's addresses by task index; None for an index a sparse job lacks."""
        job = self._job(job_name)
        tasks: list[str | None] = [None] * (max(job) + 1 if job else 0)
        for i, address in job.items():
            tasks[i] = address
        return tasks

    def as_dict(self) -> dict[str, Any]:
        """Job name -> list of addresses, or {task index: address} for a sparse job."""
        result: dict[str, Any] = {}
        for job_name in self.jobs:
            indices = self.task_indices(job_name)
            if indices and max(indices) + 1 != len(indices):
                result[job_name] = {i: self.task_address(job_name, i) for i in indices}
            else:
                result[job_name] = self.job_tasks(job_name) if indices else {}
        return result

    def as_cluster_def(self) -> ClusterDef:
        """The cluster as a ClusterDef: jobs sorted by name, tasks by index."""
        return ClusterDef(
            [
                JobDef(name, dict(sorted(tasks.items())))
                for name, tasks in sorted(self._jobs.items())
            ]
        )
