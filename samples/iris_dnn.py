"""TensorFlow's Iris tutorial (premade estimators) with `import tfc as tf`: the same six steps.

Run: python samples/iris_dnn.py [--batch_size 100] [--train_steps 1000] [--model_dir DIR]
"""

import argparse
import csv
from pathlib import Path

import numpy as np

import tfc as tf

DATA = Path(__file__).resolve().parent / "data"
CSV_COLUMN_NAMES = ["SepalLength", "SepalWidth", "PetalLength", "PetalWidth", "Species"]
SPECIES = ["Setosa", "Versicolor", "Virginica"]


# 1. import and parse the data sets (the tutorial uses pandas; a dict of columns is the same)
def load_data(y_name="Species"):
    def read(path):
        with open(path) as f:
            rows = list(csv.reader(f))[1:]  # the first row is the "120,4,setosa,..." header
        columns = {
            name: np.array([float(r[i]) for r in rows], dtype=np.float32)
            for i, name in enumerate(CSV_COLUMN_NAMES)
        }
        labels = columns.pop(y_name).astype(np.int32)
        return columns, labels

    return read(DATA / "iris_training.csv"), read(DATA / "iris_test.csv")


def train_input_fn(features, labels, batch_size):
    dataset = tf.data.Dataset.from_tensor_slices((dict(features), labels))
    return dataset.shuffle(1000).repeat().batch(batch_size)


def eval_input_fn(features, labels, batch_size):
    features = dict(features)
    inputs = features if labels is None else (features, labels)
    return tf.data.Dataset.from_tensor_slices(inputs).batch(batch_size)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--batch_size", default=100, type=int, help="batch size")
    parser.add_argument("--train_steps", default=1000, type=int, help="number of training steps")
    parser.add_argument("--model_dir", default=None, help="checkpoints (default: a temp dir)")
    args = parser.parse_args()
    tf.logging.set_verbosity(tf.logging.INFO)

    (train_x, train_y), (test_x, test_y) = load_data()

    # 2. describe the features: four numeric columns
    my_feature_columns = [tf.feature_column.numeric_column(key=key) for key in train_x.keys()]

    # 3. the model: two hidden layers of 10 nodes, three classes
    classifier = tf.estimator.DNNClassifier(
        feature_columns=my_feature_columns,
        hidden_units=[10, 10],
        n_classes=3,
        model_dir=args.model_dir,
    )

    # 4. train
    classifier.train(
        input_fn=lambda: train_input_fn(train_x, train_y, args.batch_size),
        steps=args.train_steps,
    )

    # 5. evaluate
    eval_result = classifier.evaluate(
        input_fn=lambda: eval_input_fn(test_x, test_y, args.batch_size)
    )
    print("\nTest set accuracy: {accuracy:0.3f}\n".format(**eval_result))

    # 6. predict the species of three unlabeled flowers
    expected = ["Setosa", "Versicolor", "Virginica"]
    predict_x = {
        "SepalLength": [5.1, 5.9, 6.9],
        "SepalWidth": [3.3, 3.0, 3.1],
        "PetalLength": [1.7, 4.2, 5.4],
        "PetalWidth": [0.5, 1.5, 2.1],
    }
    predictions = classifier.predict(
        input_fn=lambda: eval_input_fn(predict_x, labels=None, batch_size=args.batch_size)
    )
    template = 'Prediction is "{}" ({:.1f}%), expected "{}"'
    for pred_dict, expec in zip(predictions, expected):
        class_id = pred_dict["class_ids"][0]
        probability = pred_dict["probabilities"][class_id]
        print(template.format(SPECIES[class_id], 100 * probability, expec))


if __name__ == "__main__":
    main()
