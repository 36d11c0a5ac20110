"""The Iris tutorial trained and run by native executables: no Python at training time.

`tfc compile` turns samples/iris_model.py into OUTDIR/train and OUTDIR/predict; `train` learns
from samples/data/iris_training.csv, `predict` scores samples/data/iris_test.csv and the
tutorial's three unlabeled flowers. Every command is printed before it runs.

Run: python samples/iris_native.py [--steps 1000] [--outdir DIR]
"""

import argparse
import shlex
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

import tfc

HERE = Path(__file__).resolve().parent
DATA = HERE / "data"
SPECIES = ["Setosa", "Versicolor", "Virginica"]
PREDICT_X = {
    "SepalLength": [5.1, 5.9, 6.9],
    "SepalWidth": [3.3, 3.0, 3.1],
    "PetalLength": [1.7, 4.2, 5.4],
    "PetalWidth": [0.5, 1.5, 2.1],
}
EXPECTED = ["Setosa", "Versicolor", "Virginica"]


def run(cmd: list) -> str:
    """Run a command as a shell would, echoing it and its output."""
    print("$ " + " ".join(shlex.quote(str(c)) for c in cmd), flush=True)
    proc = subprocess.run([str(c) for c in cmd], capture_output=True, text=True)
    sys.stdout.write(proc.stdout)
    sys.stderr.write(proc.stderr)
    if proc.returncode != 0:
        sys.exit(proc.returncode)
    return proc.stdout


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=1000, help="training steps (default 1000)")
    parser.add_argument("--batch", type=int, default=32, help="the compiled batch (default 32)")
    parser.add_argument("--outdir", help="where to compile and train (default: a temp dir)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="tfc-iris-") as tmp:
        out = Path(args.outdir or tmp)
        build, ckpt = out / "iris", out / "checkpoints"

        # 1. compile the model file: generated C, a Makefile, and two executables
        print(f"$ tfc compile samples/iris_model.py -o {build} --batch {args.batch}")
        compiled = tfc.compile(HERE / "iris_model.py", build, batch=args.batch)
        for path in compiled.executables.values():
            print(f"  {path}: {path.stat().st_size} bytes")

        # 2. train natively: the data is read, shuffled and batched in C
        train_log = run(
            [
                compiled.train,
                "--data",
                DATA / "iris_training.csv",
                "--steps",
                args.steps,
                "--batch",
                args.batch,
                "--checkpoint-dir",
                ckpt,
                "--log-every",
                max(args.steps // 4, 1),
            ]
        )
        assert "saved" in train_log

        # 3. evaluate: the test file has a label column, so predict prints the accuracy
        test_out = run(
            [
                compiled.predict,
                "--checkpoint",
                ckpt,
                "--data",
                DATA / "iris_test.csv",
                "--output",
                out / "test.npy",
            ]
        )
        accuracy = float(test_out.split()[1])
        print(f"\nTest set accuracy: {accuracy:0.3f}\n")

        # 4. predict the species of three unlabeled flowers
        flowers = out / "flowers.csv"
        np.savetxt(flowers, np.array(list(PREDICT_X.values())).T, delimiter=",", fmt="%g")
        lines = run([compiled.predict, "--checkpoint", ckpt, "--data", flowers]).splitlines()
        print()
        for line, expected in zip(lines, EXPECTED):
            probabilities = [float(v) for v in line.split()]
            class_id = int(np.argmax(probabilities))
            print(
                f'Prediction is "{SPECIES[class_id]}" ({100 * probabilities[class_id]:.1f}%), '
                f'expected "{expected}"'
            )


if __name__ == "__main__":
    main()
