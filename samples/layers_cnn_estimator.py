"""The tf.layers CNN of samples/layers_cnn_model.py as a custom tf.estimator model_fn, trained
with numpy_input_fn on the digits of samples/lenet.py (8x8, upsampled to 28x28), evaluated,
and exported for `tfc compile`.

Run: python samples/layers_cnn_estimator.py [--steps 500] [--batch 32] [--export DIR]
Shows progress (step, loss, examples/s) while it trains and prints the test accuracy of
Estimator.evaluate. With --export, the serving model goes to DIR/<timestamp>, and
    tfc compile DIR/<timestamp> -o build/cnn_export
    python samples/lenet.py --save-data build/digits28
    build/cnn_export/predict --checkpoint DIR/<timestamp>/variables --data build/digits28/test.npy
predicts natively what Estimator.predict does.
"""

import argparse
import tempfile
import time

import layers_cnn_model
from lenet import load_digits

import tfc as tf

FEATURE = "images"


def model_fn(features, labels, mode, params):
    """TRAIN: the batch's moments, dropout, and Adam with the moving-average updates of
    UPDATE_OPS; EVAL and PREDICT: the moving averages, every unit kept."""
    training = mode == tf.estimator.ModeKeys.TRAIN
    with tf.variable_scope("cnn"):
        logits = layers_cnn_model.cnn(features[FEATURE], training=training)
    predictions = {
        "probabilities": tf.nn.softmax(logits, name="probabilities"),
        "classes": tf.argmax(logits, axis=1, name="classes"),
    }
    if mode == tf.estimator.ModeKeys.PREDICT:
        return tf.estimator.EstimatorSpec(mode, predictions=predictions)
    loss = tf.losses.sparse_softmax_cross_entropy(labels=labels, logits=logits)
    if mode == tf.estimator.ModeKeys.EVAL:
        accuracy = tf.metrics.accuracy(labels=labels, predictions=predictions["classes"])
        return tf.estimator.EstimatorSpec(mode, loss=loss, eval_metric_ops={"accuracy": accuracy})
    optimizer = tf.train.AdamOptimizer(params["learning_rate"])
    with tf.control_dependencies(tf.get_collection(tf.GraphKeys.UPDATE_OPS)):
        train_op = optimizer.minimize(loss, global_step=tf.train.get_global_step())
    progress = ProgressHook(loss, params["log_every"], params["batch_size"])
    return tf.estimator.EstimatorSpec(mode, loss=loss, train_op=train_op, training_hooks=[progress])


def make_estimator(model_dir, batch_size, learning_rate=0.003, log_every=100):
    """An Estimator of model_fn whose initial weights are those of the session sample."""
    config = tf.estimator.RunConfig(tf_random_seed=layers_cnn_model.SEED, log_step_count_steps=None)
    params = {"learning_rate": learning_rate, "batch_size": batch_size, "log_every": log_every}
    return tf.estimator.Estimator(model_fn, model_dir, config=config, params=params)


def serving_input_receiver_fn():
    size = layers_cnn_model.IMAGE_SIZE
    images = tf.placeholder(tf.float32, [None, size, size, 1], name=FEATURE)
    return tf.estimator.export.ServingInputReceiver({FEATURE: images}, {FEATURE: images})


class ProgressHook(tf.train.SessionRunHook):
    """Prints step, loss and examples/s every `every` steps, as the session samples do."""

    def __init__(self, loss, every, batch):
        self._loss, self._every, self._batch = loss, every, batch

    def begin(self):
        self._global_step = tf.train.get_global_step()

    def after_create_session(self, session, coord):
        # counted here rather than fetched with the train_op, whose update a fetch may or may
        # not see; a resumed training goes on from the checkpoint's step
        self._step = int(session.run(self._global_step))
        self._start, self._seen = time.perf_counter(), 0

    def before_run(self, run_context):
        return tf.train.SessionRunArgs(self._loss)

    def after_run(self, run_context, run_values):
        self._step += 1
        self._seen += self._batch
        if self._step % self._every == 0:
            rate = self._seen / (time.perf_counter() - self._start)
            loss = run_values.results
            print(f"step {self._step:5d}  loss {loss:.4f}  {rate:,.0f} examples/s", flush=True)
            self._start, self._seen = time.perf_counter(), 0


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=500)
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--learning_rate", type=float, default=0.003)
    parser.add_argument("--model_dir", default=None, help="checkpoints (default: a temp dir)")
    parser.add_argument("--export", metavar="DIR", help="export the serving model under DIR")
    args = parser.parse_args()

    (x_train, y_train), (x_test, y_test) = load_digits()
    model_dir = args.model_dir or tempfile.mkdtemp(prefix="layers_cnn_estimator-")
    estimator = make_estimator(model_dir, args.batch, args.learning_rate, min(100, args.steps))
    train_input_fn = tf.estimator.inputs.numpy_input_fn(
        {FEATURE: x_train}, y_train, batch_size=args.batch, num_epochs=None, shuffle=True
    )
    estimator.train(train_input_fn, steps=args.steps)
    test_input_fn = tf.estimator.inputs.numpy_input_fn(
        {FEATURE: x_test}, y_test, batch_size=len(x_test), shuffle=False
    )
    result = estimator.evaluate(test_input_fn)
    if args.export:
        path = estimator.export_saved_model(args.export, serving_input_receiver_fn).decode()
        print(f"exported {path}")
    print(f"test accuracy {result['accuracy']:.3f}")
    return result


if __name__ == "__main__":
    main()
