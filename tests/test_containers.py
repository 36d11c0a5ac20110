"""Resource containers (whitepaper 4.7): tf.container scopes, state shared by the sessions of an
in-process server's target (as TF1's), and Session.reset(target, containers)."""

from __future__ import annotations

import threading

import numpy as np
import pytest

import tfc as tf

T = tf.RunOptions(timeout_in_ms=10_000)


@pytest.fixture(autouse=True)
def fresh_graph():
    tf.reset_default_graph()
    yield


@pytest.fixture
def server():
    return tf.train.Server.create_local_server()


def test_container_scopes_name_the_container_of_stateful_ops():
    with tf.container("c1"):
        v = tf.Variable(1.0, name="v")
        q = tf.FIFOQueue(2, tf.float32, shapes=[[]])
        with tf.container("c2"):
            inner = tf.Variable(2.0, name="inner")
        after = tf.Variable(3.0, name="after")
    outside = tf.Variable(4.0, name="outside")
    assert v.op.get_attr("container") == "c1" and after.op.get_attr("container") == "c1"
    assert q.queue_ref.get_attr("container") == "c1"
    assert inner.op.get_attr("container") == "c2"
    assert "container" not in outside.op.node_def.attr  # the default container
    assert tf.get_default_graph().current_container == ""
    with pytest.raises(TypeError, match="must be a string"):
        with tf.container(3):
            pass


def test_sessions_of_this_process_keep_their_own_state():
    """As TF1's in-process sessions: a variable initialized in one is not in another."""
    with tf.container("c1"):
        v = tf.Variable(1.0)
    inc = tf.assign_add(v, 1.0)
    first = tf.Session()
    first.run(v.initializer)
    first.run(inc)
    second = tf.Session()
    with pytest.raises(tf.errors.FailedPreconditionError):
        second.run(v)
    assert first.run(v) == 2.0
    first.close()
    second.close()


def test_reset_of_this_process_closes_its_sessions():
    v = tf.Variable(1.0)
    sessions = [tf.Session(), tf.Session()]
    for sess in sessions:
        sess.run(v.initializer)
    tf.Session.reset("")
    for sess in sessions:
        with pytest.raises(tf.errors.CancelledError, match="Session has been closed"):
            sess.run(v)
    fresh = tf.Session()
    with pytest.raises(tf.errors.FailedPreconditionError):
        fresh.run(v)
    fresh.close()


def test_sessions_on_a_servers_target_share_variables_and_shared_queues(server):
    with tf.container("c1"):
        v = tf.Variable(1.0, name="v")
    w = tf.Variable(2.0, name="w")
    inc = tf.assign_add(v, 1.0)
    shared = tf.FIFOQueue(4, tf.float32, shapes=[[]], shared_name="shared_q")
    private = tf.FIFOQueue(4, tf.float32, shapes=[[]])
    a = tf.Session(server.target)
    a.run(tf.global_variables_initializer())
    a.run([inc, shared.enqueue(7.0), private.enqueue(8.0)], options=T)
    b = tf.Session(server.target)
    assert b.run([v, w]) == [2.0, 2.0]  # the variables a initialized and updated
    assert b.run(shared.size()) == 1 and b.run(private.size()) == 0  # as TF1
    assert b.run(shared.dequeue(), options=T) == 7.0
    assert a.run(private.size()) == 1
    a.close()
    assert b.run(v) == 2.0  # the state outlives a session
    b.close()


def test_reset_of_a_servers_target_clears_its_containers(server):
    with tf.container("c1"):
        v = tf.Variable(1.0, name="v")
        queue = tf.FIFOQueue(4, tf.float32, shapes=[[]], shared_name="q")
    w = tf.Variable(2.0, name="w")
    a = tf.Session(server.target)
    a.run(tf.global_variables_initializer())
    a.run(queue.enqueue(5.0), options=T)
    waiting = tf.Session(server.target)
    other = tf.FIFOQueue(4, tf.float32, shapes=[[]], shared_name="other")
    with tf.container("c1"):
        empty = tf.FIFOQueue(4, tf.float32, shapes=[[]], shared_name="empty")
    box = {}

    def wait():
        try:
            waiting.run(empty.dequeue())
        except Exception as e:  # noqa: BLE001 - inspected below
            box["error"] = e

    thread = threading.Thread(target=wait, daemon=True)
    thread.start()
    thread.join(0.1)
    tf.Session.reset(server.target, ["c1"])
    thread.join(10)
    assert isinstance(box["error"], tf.errors.CancelledError)  # its queue was dropped
    with pytest.raises(tf.errors.AbortedError, match="Session.reset"):
        a.run(w)
    c = tf.Session(server.target)
    assert c.run(w) == 2.0  # the default container was kept
    with pytest.raises(tf.errors.FailedPreconditionError):
        c.run(v)
    assert c.run(queue.size()) == 0  # a new, empty queue
    c.run(other.enqueue(1.0), options=T)
    tf.Session.reset(server.target)  # every container
    d = tf.Session(server.target)
    with pytest.raises(tf.errors.FailedPreconditionError):
        d.run(w)
    assert d.run(other.size()) == 0
    d.close()
    with pytest.raises(TypeError, match="list of strings"):
        tf.Session.reset(server.target, "c1")


def test_graphs_sharing_a_target_must_agree_on_a_variables_shape(server):
    tf.Variable(np.zeros(3, np.float32), name="x")
    with tf.Session(server.target) as sess:
        sess.run(tf.global_variables_initializer())
    other = tf.Graph()
    with other.as_default():
        x = tf.Variable(np.zeros(4, np.float32), name="x")
        with tf.Session(server.target) as sess:
            with pytest.raises(tf.errors.InvalidArgumentError, match="Trying to share variable x"):
                sess.run(x.initializer)
