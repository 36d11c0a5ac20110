"""plan_memory: storage kinds, arena reuse, in-place reuse, and the plan checked by the verifier."""

import numpy as np
import pytest
from passcheck import assert_graph, feed, front, program, run

import tfc as tf
from tfc.passes.memory import ARENA_ALIGN, STRATEGIES, Buffer, OverlapIndex, plan_memory
from tfc.passes.schedule import schedule_graph
from tfc.passes.verify import GraphInvariantError, verify_graph


def _plan(fetches, feeds=(), targets=()):
    """The memory plan of a program, scheduled first (the plan follows the schedule)."""
    return run(plan_memory, run(schedule_graph, front(program(fetches, feeds, targets))))


def _storage(g, name):
    return g.node(name)["storage"][0]


def test_storage_kinds():
    x = tf.placeholder(tf.float32, [4], name="x")
    v = tf.Variable(tf.ones([4]), name="v")
    c = tf.constant([1.0, 2.0, 3.0, 4.0], name="c")
    t = tf.add(x, c, name="t")
    tf.multiply(t, v, name="r")
    g = _plan([("r", 0)], feeds=[feed("x", (4,))])
    # an intermediate in the arena; a fetched value written straight to the caller
    assert_graph(
        g,
        """
        x = Feed() -> float32[4] {dtype=float32, index=0, shape=(4,)}  @ feed 0
        v = VariableV2() -> float32[4] {dtype=float32, shape=(4,)}  @ var v
        v/read = Identity(v:0) -> float32[4] {_class=['loc:@v']}  @ alias v:0
        c = Const() -> float32[4] {dtype=float32, value=[1.0, 2.0, 3.0, 4.0]}  @ const c
        t = Add(x:0, c:0) -> float32[4]  @ arena 0
        r = Mul(t:0, v/read:0) -> float32[4]  @ output 0
        fetches: r:0
        """,
    )


def test_buffers_whose_lifetimes_do_not_overlap_share_space():
    x = tf.placeholder(tf.float32, [16, 16], name="x")
    h = x
    for i in range(6):  # a chain of matmuls: each intermediate dies when the next is made
        h = tf.matmul(h, x, name=f"h{i}")
    g = _plan([(h.op.name, 0)], feeds=[feed("x", (16, 16))])
    # two buffers alive at a time (the input and the output of a step) suffice
    assert_graph(
        g,
        """
        x = Feed() -> float32[16,16] {dtype=float32, index=0, shape=(16, 16)}  @ feed 0
        h0 = MatMul(x:0, x:0) -> float32[16,16] {transpose_a=False, transpose_b=False}  @ arena 0
        h1 = MatMul(h0:0, x:0) -> float32[16,16] {transpose_a=False, transpose_b=False}  @ arena 1024
        h2 = MatMul(h1:0, x:0) -> float32[16,16] {transpose_a=False, transpose_b=False}  @ arena 0
        h3 = MatMul(h2:0, x:0) -> float32[16,16] {transpose_a=False, transpose_b=False}  @ arena 1024
        h4 = MatMul(h3:0, x:0) -> float32[16,16] {transpose_a=False, transpose_b=False}  @ arena 0
        h5 = MatMul(h4:0, x:0) -> float32[16,16] {transpose_a=False, transpose_b=False}  @ output 0
        fetches: h5:0
        """,  # noqa: E501
    )
    assert g.graph_attrs["arena_bytes"] == g.graph_attrs["arena_lower_bound"] == 2 * 1024
    assert g.graph_attrs["arena_naive_bytes"] == 5 * 1024
    offsets = [_storage(g, f"h{i}")[1] for i in range(5)]
    assert all(o % ARENA_ALIGN == 0 for o in offsets)
    assert g.graph_attrs["arena_inplace"] == {}  # a matmul never writes over its input


def test_an_elementwise_chain_runs_in_one_buffer():
    x = tf.placeholder(tf.float32, [1024], name="x")
    h = x
    for i in range(6):
        h = tf.exp(h, name=f"h{i}")
    g = _plan([("h5", 0)], feeds=[feed("x", (1024,))])
    # h0 reads the caller's feed, which is never overwritten; h1..h4 each overwrite the last
    # value, which dies where it is read; h5 goes straight to the caller's buffer
    assert_graph(
        g,
        """
        x = Feed() -> float32[1024] {dtype=float32, index=0, shape=(1024,)}  @ feed 0
        h0 = Exp(x:0) -> float32[1024]  @ arena 0
        h1 = Exp(h0:0) -> float32[1024]  @ arena 0
        h2 = Exp(h1:0) -> float32[1024]  @ arena 0
        h3 = Exp(h2:0) -> float32[1024]  @ arena 0
        h4 = Exp(h3:0) -> float32[1024]  @ arena 0
        h5 = Exp(h4:0) -> float32[1024]  @ output 0
        fetches: h5:0
        """,
    )
    assert g.graph_attrs["arena_bytes"] == g.graph_attrs["arena_lower_bound"] == 4096
    assert g.graph_attrs["arena_naive_bytes"] == 5 * 4096
    assert g.graph_attrs["arena_inplace"] == {(f"h{i}", 0): (f"h{i - 1}", 0) for i in range(1, 5)}


def _inplace_of(g, name):
    return g.graph_attrs["arena_inplace"].get((name, 0))


def _matmul(name, rows=8, cols=8):
    """An arena value (a matmul's output is always a fresh buffer)."""
    a = tf.placeholder(tf.float32, [rows, 8], name=f"{name}_a")
    return tf.matmul(a, tf.ones([8, cols]), name=name)


def _feeds(*names, rows=8):
    return [feed(f"{n}_a", (rows, 8)) for n in names]


def test_inplace_where_the_input_dies():
    m = _matmul("m")
    r = tf.nn.relu(m, name="r")
    tf.reduce_sum(r * 2.0, name="s")
    g = _plan([("s", 0)], feeds=_feeds("m"))
    assert_graph(
        g,
        """
        m_a = Feed() -> float32[8,8] {dtype=float32, index=0, shape=(8, 8)}  @ feed 0
        ones/shape_as_tensor = Const() -> int32[2] {dtype=int32, value=[8, 8]}  @ const ones/shape_as_tensor
        ones/Const = Const() -> float32[] {dtype=float32, value=1.0}  @ const ones/Const
        ones = Fill(ones/shape_as_tensor:0, ones/Const:0) -> float32[8,8]  @ arena 0
        m = MatMul(m_a:0, ones:0) -> float32[8,8] {transpose_a=False, transpose_b=False}  @ arena 256
        r = Relu(m:0) -> float32[8,8]  @ arena 256
        Const = Const() -> float32[] {dtype=float32, value=2.0}  @ const Const
        mul = Mul(r:0, Const:0) -> float32[8,8]  @ arena 256
        Const_1 = Const() -> int32[2] {dtype=int32, value=[0, 1]}  @ const Const_1
        s = Sum(mul:0, Const_1:0) -> float32[] {keep_dims=False}  @ output 0
        fetches: s:0
        """,  # noqa: E501
    )  # r over m, mul over r
    assert _inplace_of(g, "r") == ("m", 0)
    assert _inplace_of(g, "mul") == ("r", 0)


def test_no_inplace_over_a_value_read_later():
    m = _matmul("m")
    e = tf.exp(m, name="e")
    tf.add(e, m, name="later")  # m is read again after e
    tf.reduce_sum(tf.get_default_graph().get_tensor_by_name("later:0"), name="s")
    g = _plan([("s", 0)], feeds=_feeds("m"))
    assert _inplace_of(g, "e") is None and _storage(g, "e") != _storage(g, "m")
    # `later` is the last reader of both: it may overwrite either
    assert _inplace_of(g, "later") in {("e", 0), ("m", 0)}


def test_no_inplace_over_feeds_variables_constants_or_fetched_values():
    x = tf.placeholder(tf.float32, [8, 8], name="x")
    v = tf.Variable(tf.ones([8, 8]), name="v")
    c = tf.constant(np.ones((8, 8), np.float32), name="c")
    m = _matmul("m")
    fed = tf.exp(x, name="fed")
    var = tf.exp(v, name="var")
    const = tf.exp(c, name="const")
    fetched = tf.exp(m, name="fetched")  # m is fetched: its bytes are the caller's
    tf.exp(_matmul("n"), name="writes_fetch")  # its output is fetched
    total = tf.add_n([tf.reduce_sum(t) for t in (fed, var, const, fetched)], name="total")
    g = _plan(
        [("total", 0), ("m", 0), ("writes_fetch", 0)],
        feeds=[feed("x", (8, 8)), *_feeds("m", "n")],
    )
    for name in ("fed", "var", "const", "fetched", "writes_fetch"):
        assert _inplace_of(g, name) is None, name
    assert _storage(g, "m") == ("output", 1) and _storage(g, "writes_fetch") == ("output", 2)
    assert [_storage(g, n)[0] for n in ("fed", "var", "const", "fetched")] == ["arena"] * 4
    del total


def test_no_inplace_across_element_sizes_or_broadcasts():
    m = _matmul("m")
    positive = tf.greater(m, 0.0, name="positive")  # bool output over a float input
    row = tf.reduce_sum(_matmul("k"), axis=0, name="row")  # [8], read broadcast below
    wide = tf.add(row, _matmul("w", rows=4), name="wide")  # row [8] + [4, 8]: row broadcasts
    tf.reduce_sum(tf.cast(positive, tf.float32), name="s")
    tf.reduce_sum(wide, name="s2")
    g = _plan([("s", 0), ("s2", 0)], feeds=[*_feeds("m", "k"), *_feeds("w", rows=4)])
    assert _inplace_of(g, "positive") is None
    assert _inplace_of(g, "wide") == ("w", 0)  # the operand of the output's shape, never row


def test_inplace_through_an_alias_of_a_dying_value():
    m = _matmul("m")
    flat = tf.reshape(m, [64], name="flat")
    e = tf.exp(flat, name="e")
    tf.reduce_sum(e, name="s")
    g = _plan([("s", 0)], feeds=_feeds("m"))
    assert_graph(
        g,
        """
        m_a = Feed() -> float32[8,8] {dtype=float32, index=0, shape=(8, 8)}  @ feed 0
        ones/shape_as_tensor = Const() -> int32[2] {dtype=int32, value=[8, 8]}  @ const ones/shape_as_tensor
        ones/Const = Const() -> float32[] {dtype=float32, value=1.0}  @ const ones/Const
        ones = Fill(ones/shape_as_tensor:0, ones/Const:0) -> float32[8,8]  @ arena 0
        m = MatMul(m_a:0, ones:0) -> float32[8,8] {transpose_a=False, transpose_b=False}  @ arena 256
        flat/shape = Const() -> int32[1] {dtype=int32, value=[64]}  @ const flat/shape
        flat = Reshape(m:0, flat/shape:0) -> float32[64]  @ alias m:0
        e = Exp(flat:0) -> float32[64]  @ arena 256
        Const = Const() -> int32[1] {dtype=int32, value=[0]}  @ const Const
        s = Sum(e:0, Const:0) -> float32[] {keep_dims=False}  @ output 0
        fetches: s:0
        """,  # noqa: E501
    )  # e over m, which flat views
    assert _inplace_of(g, "e") == ("m", 0)


def _broken(g, tensor, like):
    """Give `tensor` the arena offset of `like`."""
    node = g.node(tensor[0])
    node["storage"] = list(node["storage"])
    node["storage"][tensor[1]] = g.node(like[0])["storage"][like[1]]


def test_verifier_catches_overlapping_live_buffers():
    x = tf.placeholder(tf.float32, [64], name="x")
    a = tf.exp(x, name="a")
    b = tf.log(x, name="b")
    tf.add(a, b, name="c")
    g = _plan([("c", 0)], feeds=[feed("x", (64,))])
    _broken(g, ("b", 0), ("a", 0))  # both alive until c reads them
    with pytest.raises(GraphInvariantError, match="alive together and overlap"):
        verify_graph(g)


def test_verifier_accepts_inplace_only_where_the_input_dies():
    m = _matmul("m")
    e = tf.exp(m, name="e")
    later = tf.add(e, m, name="later")
    tf.reduce_sum(later, name="s")
    g = _plan([("s", 0)], feeds=_feeds("m"))
    verify_graph(g)
    _broken(g, ("e", 0), ("m", 0))  # e over m, though `later` reads m after e
    with pytest.raises(GraphInvariantError, match="'e' writes over .'m', 0., which is read later"):
        verify_graph(g)


def test_verifier_rejects_inplace_the_op_does_not_allow():
    m = _matmul("m")
    t = tf.matmul(m, tf.ones([8, 8]), name="t")  # m dies here, but a matmul reads rows again
    tf.reduce_sum(t, name="s")
    g = _plan([("s", 0)], feeds=_feeds("m"))
    _broken(g, ("t", 0), ("m", 0))
    with pytest.raises(GraphInvariantError, match="MatMul does not let its output overwrite"):
        verify_graph(g)


def test_verifier_rejects_inplace_over_a_broadcast_input():
    # [64] + [1, 64] -> [1, 64]: the same bytes, but the [64] operand is read broadcast
    flat = tf.reduce_sum(tf.reshape(_matmul("m", rows=64), [8, 64]), axis=0, name="flat")
    row = tf.reduce_sum(tf.reshape(_matmul("w", rows=64), [8, 1, 64]), axis=0, name="row")
    wide = tf.add(flat, row, name="wide")
    tf.reduce_sum(wide, name="s")
    g = _plan([("s", 0)], feeds=_feeds("m", "w", rows=64))
    assert _inplace_of(g, "wide") == ("row", 0)
    _broken(g, ("wide", 0), ("flat", 0))
    with pytest.raises(GraphInvariantError, match="has shape .64,., not the output's"):
        verify_graph(g)


def test_verifier_rejects_inplace_across_element_sizes():
    a = tf.cast(tf.reduce_sum(_matmul("m"), axis=0), tf.int32, name="a")  # int32[8]
    b = tf.cast(tf.reduce_sum(_matmul("n"), axis=0), tf.int32, name="b")
    mask = tf.equal(a, b, name="mask")  # bool[8]: a quarter of the bytes
    tf.reduce_sum(tf.cast(mask, tf.float32), name="s")
    g = _plan([("s", 0)], feeds=_feeds("m", "n"))
    assert _inplace_of(g, "mask") is None
    _broken(g, ("mask", 0), ("a", 0))
    with pytest.raises(GraphInvariantError, match="are not the same bytes"):
        verify_graph(g)


@pytest.mark.parametrize("strategy", sorted(STRATEGIES))
def test_every_strategy_gives_a_valid_plan_and_the_smallest_wins(strategy):
    x = tf.placeholder(tf.float32, [16, 8], name="x")
    y = tf.placeholder(tf.int32, [16], name="y")
    h = tf.layers.dense(x, 32, activation=tf.nn.relu)
    h = tf.layers.dense(h, 24, activation=tf.nn.tanh)
    logits = tf.layers.dense(h, 5)
    loss = tf.losses.sparse_softmax_cross_entropy(labels=y, logits=logits)
    train = tf.train.MomentumOptimizer(0.1, 0.9).minimize(loss)
    g = _plan([(loss.op.name, 0)], [feed("x", (16, 8)), feed("y", (16,), tf.int32)], [train.name])
    sizes = g.graph_attrs["arena_strategies"]
    assert set(sizes) == set(STRATEGIES)
    assert g.graph_attrs["arena_bytes"] == min(sizes.values())
    assert g.graph_attrs["arena_bytes"] == sizes[g.graph_attrs["arena_strategy"]]
    plan_memory(g, [strategy])
    verify_graph(g)  # no live overlap, aligned, inside the arena: under this strategy alone
    assert g.graph_attrs["arena_bytes"] == sizes[strategy] >= g.graph_attrs["arena_lower_bound"]
    assert g.graph_attrs["arena_strategy"] == strategy


def _with_scratch(monkeypatch, op_type, nbytes):
    """Give every `op_type` node `nbytes` of scratch memory (a kernel needing temporary space)."""
    import dataclasses

    from tfc.ops import registry

    opdef = registry.REGISTRY[op_type]
    monkeypatch.setitem(
        registry.REGISTRY, op_type, dataclasses.replace(opdef, scratch=lambda ctx: nbytes)
    )


def test_scratch_memory_is_planned_for_one_step_and_overlaps_nothing_alive(monkeypatch):
    _with_scratch(monkeypatch, "Exp", 1000)
    x = tf.placeholder(tf.float32, [64], name="x")
    a = tf.exp(x, name="a")
    b = tf.log(x, name="b")
    tf.add(a, tf.exp(b, name="e"), name="c")
    g = _plan([("c", 0)], feeds=[feed("x", (64,))])
    sa, se = g.node("a")["scratch"], g.node("e")["scratch"]
    assert sa % ARENA_ALIGN == 0 and se % ARENA_ALIGN == 0
    assert "scratch" not in g.node("b")
    # e's scratch is alive with a and b (a is read by c, b by e): it overlaps neither
    for name in ("a", "b"):
        off = _storage(g, name)[1]
        assert se + 1000 <= off or off + 256 <= se
    # the live bytes at e's step: a, b (e may write over it) and e's scratch
    assert g.graph_attrs["arena_lower_bound"] >= 2 * 256 + 1000
    assert g.graph_attrs["arena_bytes"] >= g.graph_attrs["arena_lower_bound"]


def test_verifier_catches_scratch_over_a_live_tensor(monkeypatch):
    _with_scratch(monkeypatch, "Exp", 256)
    x = tf.placeholder(tf.float32, [64], name="x")
    a = tf.log(x, name="a")
    tf.add(a, tf.exp(a, name="e"), name="c")  # a is alive at e's step
    g = _plan([("c", 0)], feeds=[feed("x", (64,))])
    g.node("e")["scratch"] = _storage(g, "a")[1]  # a is alive until c
    with pytest.raises(GraphInvariantError, match="alive together and overlap"):
        verify_graph(g)
    del g.node("e")["scratch"]
    with pytest.raises(GraphInvariantError, match="needs scratch memory"):
        verify_graph(g)


def test_the_overlap_index_finds_exactly_the_overlapping_buffers_a_scan_finds():
    rng = np.random.default_rng(7)
    for steps in (1, 2, 7, 64, 300):
        buffers = []
        for _ in range(200):
            first = int(rng.integers(steps))
            last = min(steps - 1, first + int(rng.geometric(0.2)) - 1)
            buffers.append(Buffer([], first, last, 64))
        index, added = OverlapIndex(buffers), []
        for b, buffer in enumerate(buffers):
            found = index.overlapping(buffer)
            assert sorted(found) == [p for p in added if buffers[p].overlaps(buffer)]
            index.add(b)
            added.append(b)


def test_placing_thousands_of_short_lived_buffers_does_not_scan_them_all(monkeypatch):
    # a chain: each buffer overlaps only its neighbours, so a placement that scanned every
    # placed buffer made 3,000 x 3,000 / 2 checks
    buffers = [Buffer([], i, i + 1, 64 * (1 + i % 3)) for i in range(3000)]
    checks = []
    overlaps = Buffer.overlaps

    def counted(self, other):
        checks.append(1)
        return overlaps(self, other)

    monkeypatch.setattr(Buffer, "overlaps", counted)
    offsets, top = STRATEGIES["size"](buffers, ARENA_ALIGN)
    assert len(checks) < 3000
    assert top <= 2 * 64 * 3  # two alive at a time
    for i in range(2999):
        a, b = buffers[i], buffers[i + 1]
        assert offsets[i] + a.nbytes <= offsets[i + 1] or offsets[i + 1] + b.nbytes <= offsets[i]
