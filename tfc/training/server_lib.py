"""`tf.train.Server`: one task of a TF1 cluster, as a description tfc can act on.

tfc serves no remote sessions: a distributed model is compiled into executables that run its
tasks (`tfc compile MODEL.py --cluster`, docs/distributed.md). A Server's ClusterSpec and task
are what that compile needs. Where a cluster has a single task (create_local_server()), the
server's target is this process: tf.Session(server.target) runs here. A Session on a task of
a larger cluster, or join() of its ps task, is refused with the commands that run it.
"""

from __future__ import annotations

import json
import socket
from typing import Any

from tfc.client.targets import register_server_target
from tfc.ir import errors
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
    Session on the target runs in this process when the cluster has this one task; otherwise
    tf.Session(target) and join() raise UnimplementedError naming the `tfc compile --cluster`
    and `tfc launch` commands that run the cluster.
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
            tasks = sum(self._cluster.num_tasks(job) for job in self._cluster.jobs)
            register_server_target(
                self._target,
                f"the server of {self._task} is one of the {tasks} tasks of "
                f"{self._cluster!r}, whose sessions would run their ops on the other tasks",
            )

    def join(self) -> None:
        """TF1's ps tasks block here serving the workers; tfc's ps task is a compiled
        executable instead, so this raises UnimplementedError saying how to run it."""
        cluster = json.dumps(self._cluster.as_dict(), sort_keys=True)
        job, task = self._server_def.job_name, self._server_def.task_index
        raise errors.UnimplementedError(
            None,
            None,
            f"Server.join() of {self._task}: tfc serves no remote sessions; it compiles the "
            "model into executables that run each task of the cluster. With the cluster in "
            f"cluster.json ({cluster}): `tfc compile MODEL.py --cluster cluster.json -o OUT` "
            f"(or tfc.compile(..., cluster=ClusterSpec)), then `OUT/train --job {job} --task "
            f"{task} --cluster cluster.json` on this task's host, or every task on this "
            "machine with `tfc launch OUT --ps N --workers M` (docs/distributed.md)",
        )

    @staticmethod
    def create_local_server(config: Any = None, start: bool = True) -> Server:
        """A one-task server of this process: sessions on its target run here."""
        return Server({"localhost": ["localhost:0"]}, protocol="grpc", config=config, start=start)
