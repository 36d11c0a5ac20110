"""GraphDef in and out (tfc/graphdef/): tfc graph -> GraphDef -> tfc graph is the same graph,
import_graph_def's options and errors, TensorFlow's op spellings and fused ops, graph_util's
frozen-graph functions, write_graph's files, tf.gfile.

Graphs frozen by TensorFlow itself are imported in tests/test_tf_compat_graph_def.py."""

from __future__ import annotations

import numpy as np
import pytest

import tfc as tf
from tfc.graphdef import GraphDefImportError, graph_util, read_graph_def
from tfc.graphdef.attrs import DERIVED_TYPE_ATTRS
from tfc.ir import errors

RNG = np.random.default_rng(4)


@pytest.fixture(autouse=True)
def _fresh_graph():
    tf.reset_default_graph()


def _model():
    x = tf.placeholder(tf.float32, [None, 6, 6, 2], name="x")
    labels = tf.placeholder(tf.int32, [None], name="labels")
    h = tf.layers.conv2d(x, 3, 3, padding="same", activation=tf.nn.relu, name="conv")
    h = tf.nn.max_pool(h, [1, 2, 2, 1], [1, 2, 2, 1], "VALID")
    h = tf.layers.batch_normalization(h, training=False)
    h = tf.reshape(h, [-1, 27])
    h = tf.concat([h, tf.nn.leaky_relu(h, alpha=0.3)], axis=1)
    logits = tf.layers.dense(h, 4, name="dense")
    probs = tf.nn.softmax(logits, name="probs")
    loss = tf.reduce_mean(
        tf.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=logits), name="loss"
    )
    tf.cast(tf.argmax(probs, 1), tf.float32, name="top")
    tf.gather(probs, tf.range(2), name="first_two")
    tf.train.GradientDescentOptimizer(0.1).minimize(loss, name="train")
    return x, labels


def _normalized(value):
    """An attribute as a GraphDef holds it: floats as float32, tuples of values as lists."""
    if isinstance(value, float):
        return float(np.float32(value))
    if isinstance(value, (list, tuple)) and not all(v is None or isinstance(v, int) for v in value):
        return [_normalized(v) for v in value]
    if isinstance(value, np.ndarray):
        return (value.dtype, value.shape, value.tobytes())
    return value


def _nodes(graph, normalize_shapes=False):
    out = {}
    for name in graph.node_names():
        node = graph.node(name)
        attrs = {k: _normalized(v) for k, v in node["attrs"].items()}
        for k in ("shape",):
            if k in attrs and isinstance(attrs[k], list):
                attrs[k] = tuple(attrs[k])
        out[name] = (node["op"], graph.input_edges(name), graph.control_input_names(name),
                     node["device"], attrs, node["dtypes"], node["shapes"])  # fmt: skip
    return out


def test_a_graph_comes_back_from_its_graph_def_unchanged():
    _model()
    g = tf.get_default_graph()
    graph_def = g.as_graph_def()
    g2 = tf.Graph()
    with g2.as_default():
        tf.import_graph_def(graph_def, name="")
    assert _nodes(g2) == _nodes(g)
    assert g2.as_graph_def() == graph_def  # and the GraphDef is a fixed point


def test_bfloat16_and_half_constants_keep_their_bits_through_a_graph_def():
    values = np.array([1.5, -2.25, 3e-3, 65504.0])
    g1 = tf.Graph()
    with g1.as_default():
        half = tf.constant(values, tf.float16, name="half")
        brain = tf.cast(tf.constant(values, tf.float32), tf.bfloat16)
        bits = tf.Session().run(brain)
        const = tf.constant(bits, tf.bfloat16, name="brain_const")
        want = tf.Session().run([half, const])
    g2 = tf.Graph()
    with g2.as_default():
        tf.import_graph_def(g1.as_graph_def(), name="")
        got = tf.Session().run([g2.get_tensor_by_name(n) for n in ("half:0", "brain_const:0")])
    assert want[1].tobytes() == bits.tobytes()
    for a, b in zip(got, want):
        assert a.dtype == b.dtype and a.tobytes() == b.tobytes()


def test_the_imported_graph_trains_and_predicts_as_the_original():
    tf.set_random_seed(1)  # the initializers' seeds are attributes, so the copy draws the same
    x, labels = _model()
    xv = RNG.normal(size=(4, 6, 6, 2)).astype(np.float32)
    yv = np.array([0, 1, 2, 3], np.int32)
    graph_def = tf.get_default_graph().as_graph_def()
    inits = [v.initializer.name for v in tf.global_variables()]
    results = []
    for graph in (tf.get_default_graph(), tf.Graph()):
        with graph.as_default():
            if not graph.get_operations():
                tf.import_graph_def(graph_def, name="")
            with tf.Session() as sess:
                sess.run(inits)
                sess.run("train", {"x:0": xv, "labels:0": yv})
                results.append(sess.run(["probs:0", "loss:0"], {"x:0": xv, "labels:0": yv}))
    for a, b in zip(*results):
        np.testing.assert_allclose(a, b, rtol=1e-6)


def test_shapes_refined_by_set_shape_come_back_through_output_shapes():
    x = tf.placeholder(tf.float32, name="x")
    y = tf.identity(x, name="y")
    y.set_shape([2, 3])
    graph_def = tf.get_default_graph().as_graph_def(add_shapes=True)
    with tf.Graph().as_default() as g:
        tf.import_graph_def(graph_def, name="")
        assert g.get_tensor_by_name("y:0").shape.as_list() == [2, 3]


def test_type_attributes_are_added_for_tensorflow_and_checked_when_read():
    a = tf.constant([1, 2], name="a")
    tf.reshape(a, tf.constant([2, 1], tf.int64), name="r")
    tf.add_n([a, a, a], name="n")
    nodes = {n.name: n for n in tf.get_default_graph().as_graph_def().node}
    assert nodes["r"].attr["T"].type == 3 and nodes["r"].attr["Tshape"].type == 9
    assert nodes["n"].attr["N"].i == 3 and nodes["n"].attr["T"].type == 3
    assert set(DERIVED_TYPE_ATTRS["Reshape"]) == {"T", "Tshape"}
    graph_def = tf.get_default_graph().as_graph_def()
    r = next(n for n in graph_def.node if n.name == "r")
    r.attr["T"].type = 1
    with tf.Graph().as_default():
        with pytest.raises(GraphDefImportError, match=r"node 'r' \(Reshape\): attribute "
                           r"T=float32 does not match its inputs, which give int32"):  # fmt: skip
            tf.import_graph_def(graph_def)


def test_input_map_return_elements_and_name_scopes():
    x = tf.placeholder(tf.float32, [None, 2], name="x")
    y = tf.multiply(x, 3.0, name="y")
    with tf.control_dependencies([y]):
        tf.no_op(name="done")
    graph_def = tf.get_default_graph().as_graph_def()
    with tf.Graph().as_default() as g:
        fed = tf.constant([[1.0, 2.0]], name="fed")
        y1, done = tf.import_graph_def(graph_def, input_map={"x": fed},
                                       return_elements=["y:0", "done"])  # fmt: skip
        assert y1.name == "import/y:0" and done.name == "import/done"
        (y2,) = tf.import_graph_def(graph_def, input_map={"x:0": fed}, return_elements=["y:0"])
        assert y2.name == "import_1/y:0"
        assert [op.name for op in done.control_inputs] == ["import/y"]
        with tf.Session() as sess:
            np.testing.assert_allclose(sess.run(y1), [[3.0, 6.0]])
        assert tf.import_graph_def(graph_def, name="again") is None
        assert "again/y" in g.nx
        with pytest.raises(ValueError, match=r"not found in graph_def: \[z:0\]"):
            tf.import_graph_def(graph_def, input_map={"z:0": fed})
        with pytest.raises(ValueError, match="Requested return tensor 'y:5'"):
            tf.import_graph_def(graph_def, return_elements=["y:5"])
        with pytest.raises(TypeError, match="must be a GraphDef"):
            tf.import_graph_def(graph_def.SerializeToString())


def _graph_def_text(text):
    from tfc.io.text_format import parse

    return parse(text, tf.GraphDef())


PLACEHOLDER = 'node { name: "x" op: "Placeholder" attr { key: "dtype" value { type: DT_FLOAT } } }'


@pytest.mark.parametrize(
    "body, message",
    [('node { name: "y" op: "Bogus" input: "x" }',
      r"GraphDef node 'y' \(Bogus\): tfc has no op 'Bogus'"),
     ('node { name: "y" op: "Relu" input: "nowhere" attr { key: "T" value { type: DT_FLOAT } } }',
      r"GraphDef node 'y' \(Relu\) has input 'nowhere', which names no node"),
     ('node { name: "y" op: "Relu" input: "x:2" }',
      r"node 'y' \(Relu\) has input 'x:2', but 'x' \(Placeholder\) has 1 output"),
     ('node { name: "y" op: "Relu" input: "z" } node { name: "z" op: "Relu" input: "y" }',
      "GraphDef has a cycle through nodes y, z"),
     ('node { name: "y" op: "ReadVariableOp" input: "x" }',
      r"node 'y' \(ReadVariableOp\) cannot be imported: it works on resource variables"),
     ('node { name: "y" op: "Conv2D" input: "x" input: "x" attr { key: "padding" '
      'value { s: "EXPLICIT" } } attr { key: "explicit_paddings" value { list { i: [1, 1] } } } }',
      r"node 'y' \(Conv2D\): attribute explicit_paddings=\[1, 1\] is not supported"),
     ('node { name: "y" op: "f" input: "x" } library { function { signature { name: "f" } } }',
      r"node 'y' \(f\) calls a function of the GraphDef's library"),
     ('node { name: "c" op: "Const" attr { key: "dtype" value { type: DT_QINT16 } } '
      'attr { key: "value" value { tensor { dtype: DT_QINT16 tensor_shape {} int_val: 1 } } } }',
      r"node 'c' \(Const\): DT_QINT16 is not a dtype tfc has"),
     ('node { name: "y" op: "ExpandDims" input: "x" }',
      r"node 'y' \(ExpandDims\) is not valid for tfc")],
)  # fmt: skip
def test_graph_defs_tfc_cannot_import_are_refused_naming_the_node(body, message):
    graph_def = _graph_def_text(PLACEHOLDER + body)
    g = tf.get_default_graph()
    tf.constant(1.0, name="already_here")
    before = set(g.nx)
    with pytest.raises((GraphDefImportError, TypeError, ValueError), match=message):
        tf.import_graph_def(graph_def)
    assert set(g.nx) == before  # a failed import leaves the graph as it was


def test_tensorflow_spellings_and_fused_ops_are_converted():
    text = """
    node { name: "x" op: "Placeholder" attr { key: "dtype" value { type: DT_FLOAT } }
           attr { key: "shape" value { shape { dim { size: 3 } dim { size: 2 } } } } }
    node { name: "two" op: "Const" attr { key: "dtype" value { type: DT_FLOAT } }
           attr { key: "value"
                  value { tensor { dtype: DT_FLOAT tensor_shape { } float_val: 2 } } } }
    node { name: "sum" op: "AddV2" input: "x" input: "two"
           attr { key: "T" value { type: DT_FLOAT } } }
    node { name: "half" op: "Div" input: "sum" input: "two"
           attr { key: "T" value { type: DT_FLOAT } } }
    node { name: "snap" op: "Snapshot" input: "half" attr { key: "T" value { type: DT_FLOAT } } }
    node { name: "cond" op: "Placeholder" attr { key: "dtype" value { type: DT_BOOL } }
           attr { key: "shape" value { shape { dim { size: 3 } } } } }
    node { name: "pick" op: "Select" input: "cond" input: "snap" input: "x"
           attr { key: "T" value { type: DT_FLOAT } } }
    node { name: "axis" op: "Const" attr { key: "dtype" value { type: DT_INT32 } }
           attr { key: "value" value { tensor { dtype: DT_INT32 tensor_shape { } int_val: 1 } } } }
    node { name: "cat" op: "Concat" input: "axis" input: "x" input: "pick"
           attr { key: "N" value { i: 2 } } attr { key: "T" value { type: DT_FLOAT } } }
    """
    with tf.Graph().as_default():
        (cat,) = tf.import_graph_def(_graph_def_text(text), return_elements=["cat:0"], name="")
        xv = RNG.normal(size=(3, 2)).astype(np.float32)
        cond = np.array([True, False, True])
        with tf.Session() as sess:
            got = sess.run(cat, {"x:0": xv, "cond:0": cond})
    picked = np.where(cond[:, None], (xv + 2) / 2, xv)  # a vector condition picks rows
    np.testing.assert_allclose(got, np.concatenate([xv, picked], axis=1), rtol=1e-6)


@pytest.mark.parametrize("data_format", ["NHWC", "NCHW"])
def test_inference_batch_norm_is_composed_from_its_formula(data_format):
    x = RNG.normal(size=(2, 3, 4, 4) if data_format == "NCHW" else (2, 4, 4, 3))
    params = [RNG.uniform(0.5, 2, 3) for _ in range(4)]  # scale, offset, mean, variance
    g = tf.GraphDef()
    names = ["x", "scale", "offset", "mean", "variance"]
    for name, value in zip(names, [x, *params]):
        n = g.node.add(name=name, op="Const")
        n.attr["dtype"].type = 1
        n.attr["value"].tensor.CopyFrom(tf.make_tensor_proto(value.astype(np.float32)))
    bn = g.node.add(name="bn", op="FusedBatchNormV3", input=names)
    bn.attr["epsilon"].f = 0.01
    bn.attr["is_training"].b = False
    bn.attr["data_format"].s = data_format.encode()
    with tf.Graph().as_default():
        (y,) = tf.import_graph_def(g, return_elements=["bn:0"], name="")
        with tf.Session() as sess:
            got = sess.run(y)
    shape = (1, 3, 1, 1) if data_format == "NCHW" else (1, 1, 1, 3)
    scale, offset, mean, var = (p.astype(np.float32).reshape(shape) for p in params)
    expected = (x.astype(np.float32) - mean) / np.sqrt(var + np.float32(0.01)) * scale + offset
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-5)
    bn.attr["is_training"].b = True
    with tf.Graph().as_default():
        with pytest.raises(GraphDefImportError, match="is_training=true computes batch"):
            tf.import_graph_def(g)


# -- graph_util ------------------------------------------------------------------------------------
def test_freezing_keeps_what_the_outputs_need_with_variables_as_constants():
    x = tf.placeholder(tf.float32, [None, 3], name="x")
    w = tf.Variable(RNG.normal(size=(3, 2)).astype(np.float32), name="w")
    unused = tf.Variable(1.0, name="unused")
    y = tf.nn.relu(tf.matmul(x, w), name="y")
    tf.add(unused, 1.0, name="other")
    xv = RNG.normal(size=(4, 3)).astype(np.float32)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        expected = sess.run(y, {x: xv})
        frozen = graph_util.convert_variables_to_constants(
            sess, tf.get_default_graph().as_graph_def(), ["y"]
        )
    nodes = {n.name: n for n in frozen.node}
    assert set(nodes) == {"x", "w", "w/read", "MatMul", "y"} and nodes["w"].op == "Const"
    with tf.Graph().as_default():
        (y2,) = tf.import_graph_def(frozen, return_elements=["y:0"], name="")
        with tf.Session() as sess:  # no variables left to initialize
            np.testing.assert_allclose(sess.run(y2, {"x:0": xv}), expected, rtol=1e-6)
    with pytest.raises(AssertionError, match="nope is not in graph"):
        graph_util.extract_sub_graph(frozen, ["nope"])


def test_remove_training_nodes_splices_identities_and_drops_check_numerics():
    x = tf.placeholder(tf.float32, [2], name="x")
    a = tf.identity(x, name="a")
    check = tf.check_numerics(a, "bad", name="check")
    with tf.control_dependencies([check]):
        c = tf.identity(a, name="c")
    d = tf.identity(c, name="d")
    tf.square(d, name="out")
    graph_def = tf.get_default_graph().as_graph_def()
    stripped = graph_util.remove_training_nodes(graph_def)
    assert {n.name: list(n.input) for n in stripped.node} == {"x": [], "out": ["x"]}
    kept = graph_util.remove_training_nodes(graph_def, protected_nodes=["c"])
    assert {n.name: list(n.input) for n in kept.node} == {"x": [], "c": ["x"], "out": ["c"]}


# -- files -----------------------------------------------------------------------------------------
@pytest.mark.parametrize("as_text, name", [(True, "g.pbtxt"), (False, "g.pb")])
def test_write_graph_writes_text_or_binary_graph_defs(tmp_path, as_text, name):
    x = tf.placeholder(tf.float32, [2], name="x")
    tf.negative(x, name="neg")
    path = tf.train.write_graph(tf.get_default_graph(), str(tmp_path / "d"), name, as_text=as_text)
    data = open(path, "rb").read()
    assert data.startswith(b'node {\n  name: "x"') == as_text
    assert read_graph_def(path) == tf.get_default_graph().as_graph_def()
    with pytest.raises(ValueError, match="is not a binary GraphDef file"):
        (tmp_path / "junk.pb").write_bytes(b"\x0b")
        read_graph_def(tmp_path / "junk.pb")


def test_gfile_reads_writes_and_reports_missing_files(tmp_path):
    path = str(tmp_path / "sub" / "f.txt")
    tf.gfile.MakeDirs(str(tmp_path / "sub"))
    with tf.gfile.GFile(path, "w") as f:
        f.write("one\ntwo\n")
    assert tf.gfile.Exists(path) and not tf.gfile.IsDirectory(path)
    with tf.gfile.Open(path) as f:
        assert f.readline() == "one\n" and f.read() == "two\n"
    assert tf.gfile.ListDirectory(str(tmp_path / "sub")) == ["f.txt"]
    assert tf.gfile.Glob(str(tmp_path / "sub" / "*.txt")) == [path]
    assert tf.gfile.Stat(path).length == 8
    tf.gfile.Copy(path, path + ".bak")
    with pytest.raises(errors.AlreadyExistsError):
        tf.gfile.Copy(path, path + ".bak")
    tf.gfile.Rename(path + ".bak", path, overwrite=True)
    tf.gfile.Remove(path)
    with pytest.raises(errors.NotFoundError, match="f.txt"):
        tf.gfile.GFile(path)
    tf.gfile.DeleteRecursively(str(tmp_path / "sub"))
    assert not tf.gfile.Exists(str(tmp_path / "sub"))


def test_tfc_compile_builds_predict_and_the_embeddable_library_from_a_frozen_graph(tmp_path):
    import subprocess

    from tfc.tools.cli import main as tfc_main

    x = tf.placeholder(tf.float32, [None, 3], name="x")
    w = tf.Variable(RNG.normal(size=(3, 4)).astype(np.float32), name="w")
    tf.nn.softmax(tf.nn.relu(tf.matmul(x, w)) - 0.5, name="probs")
    xv = RNG.normal(size=(5, 3)).astype(np.float32)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        expected = sess.run("probs:0", {x: xv})
        frozen = graph_util.convert_variables_to_constants(
            sess, tf.get_default_graph().as_graph_def(), ["probs"]
        )
    pb = tf.train.write_graph(frozen, str(tmp_path), "frozen.pb", as_text=False)
    out = tmp_path / "build"
    assert tfc_main(["compile", pb, "--outputs", "probs", "-o", str(out), "--batch", "2"]) == 0
    np.save(tmp_path / "x.npy", xv)
    proc = subprocess.run(
        [str(out / "predict"), "--data", str(tmp_path / "x.npy"), "--output",
         str(tmp_path / "p.npy")], capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    np.testing.assert_allclose(np.load(tmp_path / "p.npy"), expected, rtol=1e-5, atol=1e-6)
    embed = tmp_path / "embed"
    assert tfc_main(["compile", pb, "--outputs", "probs:0", "--target", "embed",
                     "-o", str(embed)]) == 0  # fmt: skip
    assert "float *probs" in (embed / "model.h").read_text()
    assert tfc_main(["compile", pb, "-o", str(tmp_path / "none")]) == 1  # no --outputs
    assert tfc_main(["compile", pb, "--outputs", "nope:0", "-o", str(tmp_path / "none")]) == 1
