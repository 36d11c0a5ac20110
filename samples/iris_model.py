"""The Iris DNN of TensorFlow's tutorial as a tfc model file, for native train and predict.

    tfc compile samples/iris_model.py -o build/iris
    build/iris/train --data samples/data/iris_training.csv --steps 1000 --checkpoint-dir ckpt
    build/iris/predict --checkpoint ckpt --data samples/data/iris_test.csv

Four features, two hidden layers of 10 ReLU units, three classes; the mean sparse softmax
cross entropy, minimized with Adam (learning rate 0.01, a hyperparameter: `train --lr`).
"""

import tfc as tf

N_FEATURES = 4
HIDDEN_UNITS = [10, 10]
N_CLASSES = 3
SEED = 42  # the graph seed: every compile starts from the same initial weights


def signatures():
    tf.set_random_seed(SEED)
    features = tf.placeholder(tf.float32, [None, N_FEATURES], name="features")
    labels = tf.placeholder(tf.int32, [None], name="labels")
    learning_rate = tf.placeholder_with_default(0.01, [], name="learning_rate")
    net = features
    for i, units in enumerate(HIDDEN_UNITS):
        net = tf.layers.dense(net, units, activation=tf.nn.relu, name=f"hiddenlayer_{i}")
    logits = tf.layers.dense(net, N_CLASSES, name="logits")
    probabilities = tf.nn.softmax(logits, name="probabilities")
    per_example = tf.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=logits)
    loss = tf.reduce_mean(per_example, name="loss")
    global_step = tf.train.get_or_create_global_step()
    train_op = tf.train.AdamOptimizer(learning_rate).minimize(loss, global_step=global_step)
    return {
        "train": {
            "inputs": {"features": features, "labels": labels},
            "loss": loss,
            "train_op": train_op,
            "hyperparameters": {"learning_rate": learning_rate},
        },
        "predict": {
            "inputs": {"features": features},
            "outputs": {"probabilities": probabilities},
        },
    }
