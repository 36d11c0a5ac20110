"""A CNN written with tf.layers, as a tfc model file for native train and predict.

    tfc compile samples/layers_cnn_model.py -o build/layers_cnn
    python samples/lenet.py --save-data build/digits28      # the digits, 28x28, as .npy rows
    build/layers_cnn/train --data build/digits28/train.npy --steps 500 --checkpoint-dir ckpt
    build/layers_cnn/predict --checkpoint ckpt --data build/digits28/test.npy

The model of samples/lenet_model.py in layers: conv2d (5x5x8, SAME) with batch normalization
and ReLU, 2x2 max pooling; conv2d (5x5x16, VALID, ReLU), 2x2 max pooling; flatten; dense 64
with ReLU and dropout (rate 0.3); dense 10. The graph holds the network twice with shared
variables (the TF1 idiom for a model that trains and predicts): the training copy normalizes
with the batch's moments and drops units, and its train_op runs the moving-average updates of
tf.GraphKeys.UPDATE_OPS; the predicting copy normalizes with the moving averages and keeps
every unit. `samples/layers_cnn.py` trains the same graph in a Python session.
"""

import tfc as tf

IMAGE_SIZE = 28
N_CLASSES = 10
SEED = 5  # the graph seed: every compile starts from the same initial weights


def cnn(images, training):
    """Logits [batch, 10] of images [batch, 28, 28, 1]; `training` a bool or a bool tensor."""
    net = tf.layers.conv2d(images, 8, 5, padding="same", use_bias=False, name="conv1")
    net = tf.layers.batch_normalization(net, training=training, name="bn1")
    net = tf.layers.max_pooling2d(tf.nn.relu(net), 2, 2, name="pool1")  # [batch, 14, 14, 8]
    net = tf.layers.conv2d(net, 16, 5, activation=tf.nn.relu, name="conv2")  # [batch, 10, 10, 16]
    net = tf.layers.max_pooling2d(net, 2, 2, name="pool2")  # [batch, 5, 5, 16]
    net = tf.layers.flatten(net)
    net = tf.layers.dense(net, 64, activation=tf.nn.relu, name="fc3")
    net = tf.layers.dropout(net, rate=0.3, training=training, name="dropout")
    return tf.layers.dense(net, N_CLASSES, name="logits")


def signatures():
    tf.set_random_seed(SEED)
    images = tf.placeholder(tf.float32, [None, IMAGE_SIZE, IMAGE_SIZE, 1], name="features")
    labels = tf.placeholder(tf.int32, [None], name="labels")
    learning_rate = tf.placeholder_with_default(0.003, [], name="learning_rate")
    with tf.variable_scope("cnn", reuse=tf.AUTO_REUSE):
        train_logits = cnn(images, training=True)
        logits = cnn(images, training=False)
    probabilities = tf.nn.softmax(logits, name="probabilities")
    per_example = tf.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=train_logits)
    loss = tf.reduce_mean(per_example, name="loss")
    global_step = tf.train.get_or_create_global_step()
    with tf.control_dependencies(tf.get_collection(tf.GraphKeys.UPDATE_OPS)):
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
