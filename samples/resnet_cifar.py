"""A ResNet-20-style network for CIFAR-shaped images (NHWC, 3 channels), built with tf.layers.

    python samples/resnet_cifar.py [--blocks 3] [--batch 32] [--steps 5] [--gpu]

He et al.'s CIFAR ResNet: a 3x3 convolution to 16 channels, then three stages of `blocks`
residual blocks at 16, 32 and 64 channels (the first block of stages 2 and 3 halves the image
with stride 2, its shortcut a strided 1x1 convolution with batch norm), global average pooling
and a dense layer of 10 logits. Each block is conv-bn-relu-conv-bn, added to the shortcut, relu.
blocks=3 is ResNet-20. Convolutions have no bias (batch norm's offset is one). The variables are
created in the order `TORCH_ORDER` documents, which bench/cuda_train.py relies on to give
PyTorch the same initial weights.
"""

from __future__ import annotations

import argparse

import numpy as np

import tfc as tf

N_CLASSES = 10
STAGES = (16, 32, 64)
BN_MOMENTUM = 0.9  # PyTorch's BatchNorm2d momentum 0.1
BN_EPSILON = 1e-5  # PyTorch's default
TORCH_ORDER = (
    "per convolution: kernel (HWIO); per batch norm: gamma, beta; a block's conv1, bn1, conv2, "
    "bn2, then its shortcut's conv and bn; the dense kernel (in, out) and bias last"
)


def _conv_bn(net, filters: int, kernel: int, stride: int, training, name: str):
    net = tf.layers.conv2d(
        net, filters, kernel, strides=stride, padding="same", use_bias=False,
        kernel_initializer=tf.variance_scaling_initializer(2.0), name=name,
    )  # fmt: skip
    return tf.layers.batch_normalization(
        net, momentum=BN_MOMENTUM, epsilon=BN_EPSILON, training=training, name=name + "_bn"
    )


def residual_block(net, filters: int, stride: int, training, name: str):
    """relu(bn(conv(relu(bn(conv(net))))) + shortcut(net))."""
    with tf.variable_scope(name):
        out = tf.nn.relu(_conv_bn(net, filters, 3, stride, training, "conv1"))
        out = _conv_bn(out, filters, 3, 1, training, "conv2")
        shortcut = net
        if stride != 1 or net.shape[-1].value != filters:
            shortcut = _conv_bn(net, filters, 1, stride, training, "shortcut")
        return tf.nn.relu(out + shortcut)


def resnet(images, blocks: int = 3, training=True):
    """Logits [batch, 10] of images [batch, h, w, 3]."""
    net = tf.nn.relu(_conv_bn(images, STAGES[0], 3, 1, training, "stem"))
    for stage, filters in enumerate(STAGES):
        for block in range(blocks):
            stride = 2 if stage > 0 and block == 0 else 1
            net = residual_block(net, filters, stride, training, f"stage{stage}_block{block}")
    net = tf.reduce_mean(net, axis=[1, 2])
    return tf.layers.dense(net, N_CLASSES, name="logits")


def training_step(images, labels, blocks: int, learning_rate: float):
    """(loss, train_op): plain SGD on the mean sparse softmax cross entropy, the batch norm
    moving averages updated by the same step."""
    logits = resnet(images, blocks, training=True)
    loss = tf.reduce_mean(
        tf.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=logits)
    )
    with tf.control_dependencies(tf.get_collection(tf.GraphKeys.UPDATE_OPS)):
        train = tf.train.GradientDescentOptimizer(learning_rate).minimize(loss)
    return loss, train


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--blocks", type=int, default=3)
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--steps", type=int, default=5)
    parser.add_argument("--gpu", action="store_true", help="place the step on /gpu:0")
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    xb = rng.random((args.batch, 32, 32, 3), np.float32)
    yb = rng.integers(0, N_CLASSES, args.batch).astype(np.int64)
    with tf.device("/gpu:0" if args.gpu else "/cpu:0"):
        tf.set_random_seed(1)
        x = tf.placeholder(tf.float32, [None, 32, 32, 3])
        y = tf.placeholder(tf.int64, [None])
        loss, train = training_step(x, y, args.blocks, 0.05)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        for step in range(args.steps):  # one batch over and over: the loss must fall
            print(f"step {step}: loss {sess.run([loss, train], {x: xb, y: yb})[0]:.4f}")


if __name__ == "__main__":
    main()
