"""A small recurrent classifier as a tfc model file: each example is 3 steps of 4 features,
read by a tanh RNN (8 units) in a tf.while_loop over TensorArrays, then a dense layer to 3
classes; softmax cross entropy, minimized with Adam (its learning rate a hyperparameter). The
tests compile it natively and as an embeddable library (its loop is bounded: 3 iterations)."""

import tfc as tf

STEPS, N_IN, N_HIDDEN, N_CLASSES = 3, 4, 8, 3
N_FEATURES = STEPS * N_IN


def rnn(features):
    steps = tf.transpose(tf.reshape(features, [-1, STEPS, N_IN]), [1, 0, 2])  # time major
    inputs = tf.TensorArray(tf.float32, size=STEPS).unstack(steps)
    outputs = tf.TensorArray(tf.float32, size=STEPS)

    def body(t, h, out):
        with tf.variable_scope("rnn", reuse=tf.AUTO_REUSE):  # made once, outside the loop
            w = tf.get_variable("kernel", [N_IN + N_HIDDEN, N_HIDDEN])
            b = tf.get_variable("bias", [N_HIDDEN], initializer=tf.zeros_initializer())
        h = tf.tanh(tf.matmul(tf.concat([inputs.read(t), h], 1), w) + b)
        return t + 1, h, out.write(t, h)

    h0 = tf.zeros([tf.shape(features)[0], N_HIDDEN])
    _, h, out = tf.while_loop(
        lambda t, h, out: t < STEPS, body, (0, h0, outputs), maximum_iterations=STEPS
    )
    mean_state = tf.reduce_mean(out.stack(), 0)
    return tf.layers.dense(tf.concat([h, mean_state], 1), N_CLASSES, name="logits")


def signatures():
    tf.set_random_seed(7)
    features = tf.placeholder(tf.float32, [None, N_FEATURES], name="features")
    labels = tf.placeholder(tf.int32, [None], name="labels")
    learning_rate = tf.placeholder_with_default(0.01, [], name="learning_rate")
    logits = rnn(features)
    probabilities = tf.nn.softmax(logits, name="probabilities")
    loss = tf.reduce_mean(
        tf.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=logits), name="loss"
    )
    global_step = tf.train.get_or_create_global_step()
    train_op = tf.train.AdamOptimizer(learning_rate).minimize(loss, global_step=global_step)
    return {
        "train": {"inputs": {"features": features, "labels": labels}, "loss": loss,
                  "train_op": train_op, "hyperparameters": {"learning_rate": learning_rate}},
        "predict": {"inputs": {"features": features},
                    "outputs": {"probabilities": probabilities}},
    }  # fmt: skip
