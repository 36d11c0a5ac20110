"""tf.train.ClusterSpec and tf.train.Server: a cluster as data that replica_device_setter and
`tfc compile --cluster` take; a server whose target runs sessions here when it is the only task,
and otherwise says how tfc runs the cluster (compiled executables)."""

import json
import sys
from pathlib import Path

import numpy as np
import pytest

import tfc as tf
from tfc.aot import ModelError
from tfc.aot import compile as tfc_compile

ROOT = Path(__file__).resolve().parents[1]
CLUSTER = {"worker": ["w0:2222", "w1:2222", "w2:2222"], "ps": ["p0:2222", "p1:2222"]}


def test_cluster_spec_describes_jobs_and_tasks():
    spec = tf.train.ClusterSpec(CLUSTER)
    assert spec.jobs == ["worker", "ps"]  # as given
    assert [spec.num_tasks(j) for j in spec.jobs] == [3, 2]
    assert spec.task_indices("ps") == [0, 1]
    assert spec.task_address("worker", 2) == "w2:2222"
    assert spec.job_tasks("ps") == ["p0:2222", "p1:2222"]
    assert spec.as_dict() == CLUSTER
    cluster_def = spec.as_cluster_def()
    assert [(j.name, j.tasks) for j in cluster_def.job] == [
        ("ps", {0: "p0:2222", 1: "p1:2222"}),
        ("worker", {0: "w0:2222", 1: "w1:2222", 2: "w2:2222"}),
    ]
    assert tf.train.ClusterSpec(cluster_def) == spec == tf.train.ClusterSpec(spec)
    # as TF's, a ClusterSpec equals the {job: {task index: address}} it holds
    assert spec == {job: dict(enumerate(tasks)) for job, tasks in CLUSTER.items()}
    assert spec != CLUSTER and spec != tf.train.ClusterSpec({"ps": ["p0:2222"]})
    assert repr(spec) == (
        "ClusterSpec({'ps': ['p0:2222', 'p1:2222'], 'worker': ['w0:2222', 'w1:2222', 'w2:2222']})"
    )
    assert not tf.train.ClusterSpec({}) and spec

    sparse = tf.train.ClusterSpec({"worker": {1: "w1:2222", 3: "w3:2222"}})
    assert sparse.as_dict() == {"worker": {1: "w1:2222", 3: "w3:2222"}}
    assert sparse.job_tasks("worker") == [None, "w1:2222", None, "w3:2222"]
    assert sparse.num_tasks("worker") == 2

    with pytest.raises(ValueError, match="No such job in cluster: 'chief'"):
        spec.num_tasks("chief")
    with pytest.raises(ValueError, match="No task with index 5 in job 'ps'"):
        spec.task_address("ps", 5)
    with pytest.raises(TypeError, match="must be a list or a dictionary"):
        tf.train.ClusterSpec({"ps": "p0:2222"})
    with pytest.raises(TypeError, match="`cluster` must be a dictionary"):
        tf.train.ClusterSpec(["p0:2222"])


def test_cluster_spec_matches_tensorflow():
    tf1 = pytest.importorskip("tensorflow").compat.v1
    for cluster in (CLUSTER, {"worker": {1: "w1:2222", 3: "w3:2222"}, "ps": ["p:1"]}):
        want, got = tf1.train.ClusterSpec(cluster), tf.train.ClusterSpec(cluster)
        assert got.jobs == want.jobs
        assert got.as_dict() == want.as_dict()
        assert repr(got) == repr(want)
        for job in want.jobs:
            assert got.job_tasks(job) == want.job_tasks(job)
            assert got.task_indices(job) == want.task_indices(job)
        assert [(j.name, dict(j.tasks)) for j in got.as_cluster_def().job] == [
            (j.name, dict(j.tasks)) for j in want.as_cluster_def().job
        ]


def test_replica_device_setter_takes_the_ps_tasks_from_a_cluster_spec():
    spec = tf.train.ClusterSpec(CLUSTER)
    for cluster in (spec, spec.as_cluster_def(), CLUSTER):
        tf.reset_default_graph()
        with tf.device(tf.train.replica_device_setter(cluster=cluster)):
            a = tf.Variable(1.0, name="a")
            b = tf.Variable(2.0, name="b")
            c = tf.Variable(3.0, name="c")
            total = a + b + c
        assert [v.op.device for v in (a, b, c)] == [
            "/job:ps/task:0",
            "/job:ps/task:1",
            "/job:ps/task:0",
        ]
        assert total.op.device == "/job:worker"
    assert tf.train.replica_device_setter(cluster={"worker": ["w:1"]}) is None  # no ps job


def test_a_server_of_a_cluster_describes_its_task_and_runs_on_the_cluster_runtime(monkeypatch):
    server = tf.train.Server(tf.train.ClusterSpec(CLUSTER), job_name="worker", task_index=1)
    assert server.target == "grpc://w1:2222"
    definition = server.server_def
    assert (definition.job_name, definition.task_index, definition.protocol) == (
        "worker",
        1,
        "grpc",
    )
    assert tf.train.ClusterSpec(definition.cluster).as_dict() == CLUSTER
    # a worker's session is the compiled cluster's (tests/test_cluster_tf1.py runs one); what
    # it cannot fetch is named
    with tf.Graph().as_default() as graph:
        v = tf.Variable(1.0, name="v")
        sess = tf.Session(server.target)
        assert sess.graph is graph and "v" in sess.initialized_variables()
        assert sess.run(tf.global_variables_initializer()) is None  # the ps initializes
        with pytest.raises(tf.errors.FailedPreconditionError, match="after its first train step"):
            sess.run(v.value())
        with pytest.raises(tf.errors.UnimplementedError, match="fetching 'Const:0'"):
            sess.run(tf.constant(2.0))
        sess.close()

    ps_server = tf.train.Server(CLUSTER, job_name="ps", task_index=0, start=True)
    with pytest.raises(tf.errors.UnimplementedError, match="a ps task calls server.join()"):
        tf.Session(ps_server.target)
    monkeypatch.delenv("TFC_CLUSTER_TOKEN", raising=False)
    with pytest.raises(tf.errors.PermissionDeniedError, match="TFC_CLUSTER_TOKEN"):
        ps_server.join()  # p0:2222 is beyond loopback: not without a shared secret

    with pytest.raises(ValueError, match="Must specify an explicit `job_name`"):
        tf.train.Server(CLUSTER)
    with pytest.raises(ValueError, match="Must specify an explicit `task_index`"):
        tf.train.Server(CLUSTER, job_name="ps")
    with pytest.raises(TypeError, match="Could not convert `server_or_cluster_def`"):
        tf.train.Server("p0:2222")
    again = tf.train.Server(definition, task_index=2, start=False)
    assert again.target == "grpc://w2:2222" and again.server_def.job_name == "worker"
    with pytest.raises(tf.errors.UnimplementedError, match="no tf.train.Server of this process"):
        tf.Session("grpc://elsewhere:2222")


def test_a_local_server_runs_sessions_here():
    server = tf.train.Server.create_local_server()
    other = tf.train.Server.create_local_server()
    assert server.target.startswith("grpc://localhost:") and server.target != other.target
    assert int(server.target.rpartition(":")[2]) > 0
    x = tf.placeholder(tf.float32, [3])
    v = tf.Variable(np.arange(3, dtype=np.float32))
    with tf.Session(server.target) as sess:
        sess.run(v.initializer)
        np.testing.assert_array_equal(sess.run(v * x, {x: [2, 2, 2]}), [0.0, 2.0, 4.0])
    single = tf.train.Server({"local": ["localhost:0"]})  # job and task inferred
    assert single.server_def.job_name == "local" and single.server_def.task_index == 0
    with tf.Session(single.target) as sess:
        assert sess.run(tf.constant(3.0) * 2.0) == 6.0


def _distributed_sources(outdir):
    return {p.name: p.read_bytes() for p in sorted(Path(outdir).iterdir()) if p.is_file()}


def test_tfc_compile_takes_a_cluster_spec_as_it_takes_a_cluster_file(tmp_path):
    sys.path.insert(0, str(ROOT / "samples"))
    try:
        import digits_model
    finally:
        sys.path.remove(str(ROOT / "samples"))
    cluster = {"ps": ["127.0.0.1:7001"], "worker": ["127.0.0.1:7002", "127.0.0.1:7003"]}
    (tmp_path / "cluster.json").write_text(json.dumps(cluster))
    from_file = tfc_compile(digits_model, tmp_path / "file", cluster=tmp_path / "cluster.json",
                            build=False, name="digits")  # fmt: skip
    from_spec = tfc_compile(digits_model, tmp_path / "spec", cluster=tf.train.ClusterSpec(cluster),
                            build=False, name="digits")  # fmt: skip
    file_sources = _distributed_sources(from_file.outdir)
    assert file_sources and file_sources == _distributed_sources(from_spec.outdir)
    assert any(b"127.0.0.1:7003" in text for text in file_sources.values())
    sparse = tf.train.ClusterSpec({"ps": ["127.0.0.1:7001"], "worker": {1: "127.0.0.1:7003"}})
    with pytest.raises(ModelError, match='ClusterSpec: "worker" must be a non-empty list'):
        tfc_compile(digits_model, tmp_path / "sparse", cluster=sparse, build=False)
