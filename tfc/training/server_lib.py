"""`tf.train.Server`: one task of a TF1 cluster, run by tfc's compiled cluster runtime.

Where a cluster has a single task (create_local_server()), the server's target is this
process: tf.Session(server.target) runs here. On a larger cluster a worker's
tf.Session(server.target) (or MonitoredTrainingSession(master=...)) compiles the graph it
trains into the cluster's executables, and a ps task's join() receives the ps programs from
the workers and runs them (tfc/aot/cluster_session.py, docs/distributed.md "TF1 cluster
scripts").
"""

from __future__ import annotations

import socket
from typing import Any

from tfc.client.targets import cluster_runtime, register_cluster_task, register_server_target
from tfc.train.cluster_spec import ClusterSpec, ServerDef

__all__ = ["Server"]


def _server_def(
    server_or_cluster_def: Any,
    job_name: str | None,
    task_index: int | None,
    protocol: str | None,
    config: Any,
) -> ServerDef:
    if isinstance(server_or_cluster_def, ServerDef):
        given = server_or_cluster_def
        return ServerDef(
            cluster=given.cluster,
            job_name=given.job_name if job_name is None else job_name,
            task_index=given.task_index if task_index is None else task_index,
            protocol=given.protocol if protocol is None else protocol,
            default_session_config=config if config is not None else given.default_session_config,
        )
    try:
        cluster = ClusterSpec(server_or_cluster_def)
    except TypeError:
        raise TypeError(
            "Could not convert `server_or_cluster_def` to a `tf.train.ServerDef` or "
            "`tf.train.ClusterSpec`."
        ) from None
    if job_name is None:
        if len(cluster.jobs) != 1:
            raise ValueError("Must specify an explicit `job_name`.")
        job_name = cluster.jobs[0]
    if task_index is None:
        indices = cluster.task_indices(job_name)
        if len(indices) != 1:
            raise ValueError("Must specify an explicit `task_index`.")
        task_index = indices[0]
    return ServerDef(
        cluster=cluster.as_cluster_def(),
        job_name=job_name,
        task_index=task_index,
        protocol=protocol or "grpc",
        default_session_config=config,
    )


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server:
    """Task `job_name`:`task_index` of a cluster (a ClusterSpec, a dict or ClusterDef of one,
    or a ServerDef); the job and index may be left out where the cluster has one of each.

    `target` is "grpc://<the task's address>" (an address with port 0 gets a free port). A
    Session on the target runs in this process when the cluster has this one task; on a
    cluster of ps and worker tasks a worker's Session trains on the compiled cluster runtime
    and a ps task's join() serves it (docs/distributed.md, "TF1 cluster scripts").
    """

    def __init__(
        self,
        server_or_cluster_def: Any,
        job_name: str | None = None,
        task_index: int | None = None,
        protocol: str | None = None,
        config: Any = None,
        start: bool = True,
    ) -> None:
        self._server_def = _server_def(
            server_or_cluster_def, job_name, task_index, protocol, config
        )
        cluster = ClusterSpec(self._server_def.cluster)
        address = cluster.task_address(self._server_def.job_name, self._server_def.task_index)
        host, _, port = address.rpartition(":")
        if port == "0":  # as a TF server binds one: any free port
            address = f"{host}:{_free_port()}"
        self._cluster = cluster
        self._target = f"{self._server_def.protocol}://{address}"
        if start:
            self.start()

    @property
    def server_def(self) -> ServerDef:
        return self._server_def

    @property
    def target(self) -> str:
        """What tf.Session(target) and MonitoredTrainingSession(master=target) take."""
        return self._target

    @property
    def _task(self) -> str:
        return f"/job:{self._server_def.job_name}/task:{self._server_def.task_index}"

    @property
    def _is_single_task(self) -> bool:
        return sum(self._cluster.num_tasks(job) for job in self._cluster.jobs) == 1

    def start(self) -> None:
        """Make the target known to this process's sessions."""
        if self._is_single_task:
            register_server_target(self._target, None)
        else:
            register_cluster_task(self._target, self._resolved_server_def)

    @property
    def _resolved_server_def(self) -> ServerDef:
        """The ServerDef with this task's address as bound (port 0 resolved)."""
        spec = self._cluster.as_dict()
        job, task = self._server_def.job_name, self._server_def.task_index
        address = self._target.partition("://")[2]
        if isinstance(spec[job], dict):
            spec[job] = {**spec[job], task: address}
        else:
            spec[job] = [address if i == task else a for i, a in enumerate(spec[job])]
        return ServerDef(
            cluster=ClusterSpec(spec).as_cluster_def(),
            job_name=job,
            task_index=task,
            protocol=self._server_def.protocol,
            default_session_config=self._server_def.default_session_config,
        )

    def join(self) -> None:
        """A ps task's loop, as in TF1: wait for the workers' compiled ps programs and run
        them until every worker is done (then return, where TF1 blocks forever). A worker's
        join() waits for nothing: it returns at once."""
        cluster_runtime().join(self._resolved_server_def)

    @staticmethod
    def create_local_server(config: Any = None, start: bool = True) -> Server:
        """A one-task server of this process: sessions on its target run here."""
        return Server({"localhost": ["localhost:0"]}, protocol="grpc", config=config, start=start)
