"""A word2vec skip-gram (TF1's word2vec_basic: an embedding table, nce_loss over log-uniform
sampled words, plain SGD) trained on a corpus this program generates: 10 topics of 20 words
each plus 10 function words; a sentence picks a topic and draws its words from it, with function
words in between. After training, the nearest neighbour (cosine) of most topic words is a word
of the same topic (about 1 in 10 by chance).

Run: python samples/word2vec.py [--steps 3000] [--batch 128]
     python samples/word2vec.py --framework tensorflow   # the same program on TensorFlow 1
Shows the loss while it trains, then a few words' neighbours and the share of topic words whose
nearest neighbour shares their topic.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

TOPICS, PER_TOPIC, FUNCTION_WORDS = 10, 20, 10
WINDOW = 2


def generate_corpus(sentences: int, seed: int) -> tuple[np.ndarray, list[str], np.ndarray]:
    """(word ids of the corpus, the words, the topic of each id: -1 for function words), ids
    sorted by decreasing frequency as word2vec numbers its vocabulary (the log-uniform sampler
    assumes it)."""
    rng = np.random.default_rng(seed)
    names = [f"the{k}" for k in range(FUNCTION_WORDS)]
    names += [f"t{t}w{k}" for t in range(TOPICS) for k in range(PER_TOPIC)]
    topic = np.array([-1] * FUNCTION_WORDS + [t for t in range(TOPICS) for _ in range(PER_TOPIC)])
    zipf = 1.0 / np.arange(1, PER_TOPIC + 1)
    zipf /= zipf.sum()
    words = []
    for _ in range(sentences):
        t = rng.integers(TOPICS)
        for _ in range(12):
            if rng.random() < 0.25:
                words.append(rng.integers(FUNCTION_WORDS))
            else:
                words.append(FUNCTION_WORDS + t * PER_TOPIC + rng.choice(PER_TOPIC, p=zipf))
    corpus = np.array(words)
    order = np.argsort(-np.bincount(corpus, minlength=len(names)), kind="stable")
    new_id = np.empty_like(order)
    new_id[order] = np.arange(len(order))
    return new_id[corpus], [names[i] for i in order], topic[order]


def skipgram_pairs(corpus: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(center word, context word) for every context word within WINDOW of a center."""
    centers, contexts = [], []
    for offset in range(-WINDOW, WINDOW + 1):
        if offset == 0:
            continue
        lo, hi = max(0, -offset), len(corpus) - max(0, offset)
        centers.append(corpus[lo:hi])
        contexts.append(corpus[lo + offset : hi + offset])
    return np.concatenate(centers), np.concatenate(contexts)


def build(tf, vocabulary: int, dim: int, num_sampled: int, learning_rate: float):
    """The skip-gram graph of TF1's word2vec_basic: (centers, contexts, loss, train_op,
    normalized embeddings)."""
    centers = tf.placeholder(tf.int32, [None])
    contexts = tf.placeholder(tf.int64, [None, 1])
    embeddings = tf.Variable(tf.random_uniform([vocabulary, dim], -1.0, 1.0), name="embeddings")
    looked_up = tf.nn.embedding_lookup(embeddings, centers)
    nce_weights = tf.Variable(
        tf.truncated_normal([vocabulary, dim], stddev=1.0 / np.sqrt(dim)), name="nce_weights"
    )
    nce_biases = tf.Variable(tf.zeros([vocabulary]), name="nce_biases")
    loss = tf.reduce_mean(
        tf.nn.nce_loss(
            weights=nce_weights, biases=nce_biases, labels=contexts, inputs=looked_up,
            num_sampled=num_sampled, num_classes=vocabulary,
        )
    )  # fmt: skip
    train_op = tf.train.GradientDescentOptimizer(learning_rate).minimize(loss)
    norm = tf.sqrt(tf.reduce_sum(tf.square(embeddings), 1, keepdims=True))
    return centers, contexts, loss, train_op, embeddings / norm


def neighbour_topic_share(normalized: np.ndarray, topic: np.ndarray) -> float:
    """The share of topic words whose nearest other topic word (cosine) has their topic."""
    words = np.flatnonzero(topic >= 0)
    similarity = normalized[words] @ normalized[words].T
    np.fill_diagonal(similarity, -np.inf)
    nearest = words[similarity.argmax(1)]
    return float(np.mean(topic[nearest] == topic[words]))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=3000)
    parser.add_argument("--batch", type=int, default=128)
    parser.add_argument("--dim", type=int, default=32)
    parser.add_argument("--num_sampled", type=int, default=16)
    parser.add_argument("--learning_rate", type=float, default=1.0)
    parser.add_argument("--sentences", type=int, default=3000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--framework", choices=["tfc", "tensorflow"], default="tfc")
    args = parser.parse_args()
    if args.framework == "tensorflow":
        import tensorflow.compat.v1 as tf

        tf.disable_v2_behavior()
    else:
        import tfc as tf

    corpus, names, topic = generate_corpus(args.sentences, args.seed)
    centers_np, contexts_np = skipgram_pairs(corpus)
    print(f"corpus of {len(corpus)} words, {len(names)} in the vocabulary, "
          f"{len(centers_np)} skip-gram pairs")  # fmt: skip
    tf.set_random_seed(args.seed)
    centers, contexts, loss, train_op, normalized = build(
        tf, len(names), args.dim, args.num_sampled, args.learning_rate
    )
    rng = np.random.default_rng(args.seed)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        start, total, count = time.perf_counter(), 0.0, 0
        for step in range(1, args.steps + 1):
            batch = rng.integers(0, len(centers_np), args.batch)
            feed = {centers: centers_np[batch], contexts: contexts_np[batch, None]}
            _, step_loss = sess.run([train_op, loss], feed)
            total, count = total + step_loss, count + 1
            if step % 500 == 0 or step == args.steps:
                rate = count * args.batch / (time.perf_counter() - start)
                print(f"step {step:5d}  average loss {total / count:.4f}  {rate:,.0f} pairs/s")
                start, total, count = time.perf_counter(), 0.0, 0
        vectors = sess.run(normalized)
    for word in (FUNCTION_WORDS, FUNCTION_WORDS + 1, FUNCTION_WORDS + 2):
        similarity = vectors @ vectors[word]
        nearest = [names[k] for k in np.argsort(-similarity)[1:6]]
        print(f"nearest to {names[word]}: {', '.join(nearest)}")
    print(f"nearest neighbour in the same topic {neighbour_topic_share(vectors, topic):.3f}")


if __name__ == "__main__":
    main()
