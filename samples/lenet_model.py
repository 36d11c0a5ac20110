"""LeNet-5 on 28x28 grey images as a tfc model file, for native train and predict.

    tfc compile samples/lenet_model.py -o build/lenet
    python samples/lenet.py --save-data build/digits28      # the digits, 28x28, as .npy rows
    build/lenet/train --data build/digits28/train.npy --steps 600 --checkpoint-dir ckpt
    build/lenet/predict --checkpoint ckpt --data build/digits28/test.npy

Two convolutions with ReLU and 2x2 max pooling (5x5x6 SAME: 28x28x6 -> 14x14x6; 5x5x16 VALID:
10x10x16 -> 5x5x16), then dense layers of 120, 84 and 10 units; the mean sparse softmax cross
entropy, minimized with Adam (learning rate a hyperparameter: `train --lr`).
`samples/lenet.py` trains the same graph in a Python session.
"""

import tfc as tf

IMAGE_SIZE = 28
N_CLASSES = 10
SEED = 5  # the graph seed: every compile starts from the same initial weights


def conv_layer(inputs, filters, padding, name):
    """relu(conv2d(inputs, 5x5 kernel) + bias), then 2x2 max pooling with stride 2."""
    with tf.variable_scope(name):
        channels = inputs.shape[-1].value
        kernel = tf.get_variable(
            "kernel", [5, 5, channels, filters], initializer=tf.glorot_uniform_initializer()
        )
        bias = tf.get_variable("bias", [filters], initializer=tf.zeros_initializer())
        conv = tf.nn.conv2d(inputs, kernel, strides=[1, 1, 1, 1], padding=padding)
        net = tf.nn.relu(tf.nn.bias_add(conv, bias))
        return tf.nn.max_pool(net, ksize=[1, 2, 2, 1], strides=[1, 2, 2, 1], padding="VALID")


def lenet(images):
    """Logits [batch, 10] of images [batch, 28, 28, 1]."""
    net = conv_layer(images, 6, "SAME", "conv1")  # [batch, 14, 14, 6]
    net = conv_layer(net, 16, "VALID", "conv2")  # [batch, 5, 5, 16]
    net = tf.reshape(net, [-1, 5 * 5 * 16])
    net = tf.layers.dense(net, 120, activation=tf.nn.relu, name="fc3")
    net = tf.layers.dense(net, 84, activation=tf.nn.relu, name="fc4")
    return tf.layers.dense(net, N_CLASSES, name="logits")


def signatures():
    tf.set_random_seed(SEED)
    images = tf.placeholder(tf.float32, [None, IMAGE_SIZE, IMAGE_SIZE, 1], name="features")
    labels = tf.placeholder(tf.int32, [None], name="labels")
    learning_rate = tf.placeholder_with_default(0.002, [], name="learning_rate")
    logits = lenet(images)
    probabilities = tf.nn.softmax(logits, name="probabilities")
    per_example = tf.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=logits)
    loss = tf.reduce_mean(per_example, name="loss")
    global_step = tf.train.get_or_create_global_step()
    train_op = tf.train.AdamOptimizer(learning_rate).minimize(loss, global_step=global_step)
    return {
        "train": {
            "inputs": {"features": images, "labels": labels},
            "loss": loss,
            "train_op": train_op,
            "hyperparameters": {"learning_rate": learning_rate},
        },
        "predict": {
            "inputs": {"features": images},
            "outputs": {"probabilities": probabilities},
        },
    }
