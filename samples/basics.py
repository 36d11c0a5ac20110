"""tfc basics: TF1's getting-started tour and the whitepaper's first example, compiled to C.

Run: python samples/basics.py   (set TFC_DUMP_DIR=some/dir to keep every generated C file)
"""

import numpy as np

import tfc as tf

# -- a constant computation --------------------------------------------------------------------
a = tf.add(3, 5)
print(a)  # Tensor("Add:0", shape=(), dtype=int32)
with tf.Session() as sess:
    print(sess.run(a))  # 8

# -- placeholders: values supplied at run time ---------------------------------------------------
x = tf.placeholder(tf.float32)
y = tf.placeholder(tf.float32)
z = x + y
with tf.Session() as sess:
    print(sess.run(z, feed_dict={x: 3, y: 4.5}))  # 7.5
    print(sess.run(z, feed_dict={x: [1, 3], y: [2, 4]}))  # [3. 7.]
    print(sess.run(z * 3.0, feed_dict={x: 3, y: 4.5}))  # 22.5

# -- variables and a linear model (TF1's "Getting Started") ----------------------------------
tf.reset_default_graph()
W = tf.Variable([0.3], dtype=tf.float32)
b = tf.Variable([-0.3], dtype=tf.float32)
x = tf.placeholder(tf.float32)
linear_model = W * x + b
y = tf.placeholder(tf.float32)
loss = tf.reduce_sum(tf.square(linear_model - y))
sess = tf.Session()
sess.run(tf.global_variables_initializer())
print(sess.run(linear_model, {x: [1, 2, 3, 4]}))  # [0.  0.3 0.6 0.9] (float32 rounding)
print(sess.run(loss, {x: [1, 2, 3, 4], y: [0, -1, -2, -3]}))  # 23.66
sess.run([tf.assign(W, [-1.0]), tf.assign(b, [1.0])])
print(sess.run(loss, {x: [1, 2, 3, 4], y: [0, -1, -2, -3]}))  # 0.0
sess.close()

# -- a layer of a network: weights in native memory, a batch fed per run ---------------------
tf.reset_default_graph()
tf.set_random_seed(1)
W = tf.Variable(tf.random_uniform([784, 100], -1, 1), name="W")
b = tf.Variable(tf.zeros([100]))
x = tf.placeholder(tf.float32, shape=[None, 784], name="x")
h = tf.nn.relu(tf.matmul(x, W) + b)
batch = np.random.default_rng(0).random((32, 784), dtype=np.float32)
with tf.Session() as sess:
    sess.run(tf.global_variables_initializer())
    out = sess.run(h, feed_dict={x: batch})
    print(h, out.shape, out.dtype)  # Tensor("Relu:0", shape=(?, 100), dtype=float32) ...
    expected = np.maximum(batch @ sess.run(W) + sess.run(b), 0)
    print("matches NumPy:", np.allclose(out, expected, rtol=1e-5, atol=1e-4))
    source = sess.source(h, feed_dict={x: batch})
    print("generated C:", len(source.splitlines()), "lines for", len(out), "examples per run")

# -- the whitepaper's Figure 1 (Python 2's xrange spelled range) --------------------------------
tf.reset_default_graph()
b = tf.Variable(tf.zeros([100]))  # 100-d vector, init to zeroes
W = tf.Variable(tf.random_uniform([784, 100], -1, 1))  # 784x100 matrix w/rnd vals
x = tf.placeholder(name="x")  # Placeholder for input
relu = tf.nn.relu(tf.matmul(W, x) + b)  # Relu(Wx+b)
C = [relu]  # Cost computed as a function of Relu
s = tf.Session()
s.run(tf.global_variables_initializer())
for step in range(0, 10):
    input = np.full((100, 1), step / 10.0, dtype=np.float32)  # construct 100-D input array
    result = s.run(C, feed_dict={x: input})  # Fetch cost, feeding x=input
print("figure 1:", result[0].shape, "max", float(result[0].max()) > 0)
s.close()
