"""Writes names.json: the public names of TF1's graph-mode namespaces, read from TensorFlow.

Run once where tensorflow is installed (its compat.v1 layers need `tf_keras`):
    TF_USE_LEGACY_KERAS=1 python bench/tf1_surface/generate.py
The list is checked in; `python bench/tf1_surface/coverage.py` compares tfc with it.
"""

from __future__ import annotations

import inspect
import json
import os
from pathlib import Path

NAMESPACES = ("", "nn", "train", "layers", "losses", "summary", "data")


def kind_of(value: object) -> str:
    if inspect.ismodule(value):
        return "module"
    if inspect.isclass(value):
        return "class"
    return "function" if callable(value) else "constant"


def main() -> None:
    os.environ.setdefault("TF_USE_LEGACY_KERAS", "1")
    import tensorflow as tf

    v1 = tf.compat.v1
    names = {}
    for namespace in NAMESPACES:
        module = getattr(v1, namespace) if namespace else v1
        names[namespace or "tf"] = {
            name: kind_of(getattr(module, name))
            for name in sorted(dir(module))
            if not name.startswith("_")
        }
    out = {"tensorflow": tf.__version__, "names": names}
    path = Path(__file__).with_name("names.json")
    path.write_text(json.dumps(out, indent=1, sort_keys=True) + "\n")
    print(f"{path}: " + ", ".join(f"{ns} {len(v)}" for ns, v in names.items()))


if __name__ == "__main__":
    main()
