"""How much of TF1's graph-mode API tfc has: the names of names.json that `import tfc` provides.

    python bench/tf1_surface/coverage.py            # a table per namespace
    python bench/tf1_surface/coverage.py --missing  # and the names tfc lacks

names.json is generated from tensorflow.compat.v1 by generate.py. EXCLUDED below lists names
outside a graph compiler's scope, each with the reason; they count neither as present nor as
missing. The README's coverage figure is this script's total.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

NAMES = Path(__file__).with_name("names.json")

# reason -> names ("ns.name" outside the top level); every entry says why it is out of scope
_EXCLUDED_BY_REASON: dict[str, list[str]] = {
    "another framework or API generation (Keras, TF2 functions and modules, TFLite, TPU, XLA)": [
        "keras", "lite", "tpu", "xla", "mlir", "autograph", "function", "wrap_function",
        "Module", "GradientTape", "layers.experimental", "types", "TypeSpec", "TensorSpec",
        "NoneTensorSpec", "OptionalSpec", "IndexedSlicesSpec", "SparseTensorSpec",
        "RaggedTensorSpec", "TensorArraySpec", "type_spec_from_value", "data.DatasetSpec",
        "summary.all_v2_summary_ops", "summary.initialize", "mixed_precision",
        "train.experimental", "train.Checkpoint", "train.CheckpointManager",
        "train.CheckpointOptions", "variable_creator_scope", "init_scope",
    ],
    "eager execution only (tfc compiles graphs)": [
        "enable_eager_execution", "executing_eagerly", "executing_eagerly_outside_functions",
        "py_function", "data.NumpyIterator", "is_symbolic_tensor",
    ],
    "switches between TF1 and TF2 internals that do not exist in tfc": [
        "enable_control_flow_v2", "disable_control_flow_v2", "control_flow_v2_enabled",
        "enable_resource_variables", "disable_resource_variables", "resource_variables_enabled",
        "enable_tensor_equality", "disable_tensor_equality", "enable_v2_tensorshape",
        "disable_v2_tensorshape", "enable_v2_behavior",
    ],
    "compat, distribute and experimental internals (the issue excludes them)": [
        "compat", "distribute", "experimental", "nn.experimental", "data.experimental",
        "raw_ops", "user_ops", "distributions", "train.SyncReplicasOptimizer",
        "train.sdca_fprint", "train.sdca_optimizer", "train.sdca_shrink_l1",
    ],
    "TensorFlow's own build and binary plugins": [
        "COMPILER_VERSION", "CXX11_ABI_FLAG", "CXX_VERSION", "GIT_VERSION", "MONOLITHIC_BUILD",
        "GRAPH_DEF_VERSION", "GRAPH_DEF_VERSION_MIN_CONSUMER", "GRAPH_DEF_VERSION_MIN_PRODUCER",
        "VERSION", "sysconfig", "load_library", "load_op_library", "load_file_system_library",
        "check_pinned", "test", "resource_loader",
    ],
    "TPU-only kernels": ["nn.approx_max_k", "nn.approx_min_k", "approx_top_k"],
    "deprecated in TF1 with no effect (documented no-ops)": [
        "train.do_quantize_training_on_graphdef",
    ],
}  # fmt: skip
EXCLUDED: dict[str, str] = {
    name: reason for reason, names in _EXCLUDED_BY_REASON.items() for name in names
}


def load_names() -> dict[str, dict[str, str]]:
    return json.loads(NAMES.read_text())["names"]


def qualified(namespace: str, name: str) -> str:
    return name if namespace == "tf" else f"{namespace}.{name}"


def coverage(module: object | None = None) -> dict[str, tuple[list[str], list[str]]]:
    """Per namespace: (names tfc has, names tfc lacks), excluded names left out."""
    if module is None:
        import tfc as module
    result = {}
    for namespace, names in load_names().items():
        space = module if namespace == "tf" else getattr(module, namespace, None)
        have, lack = [], []
        for name in names:
            if qualified(namespace, name) in EXCLUDED:
                continue
            (have if space is not None and hasattr(space, name) else lack).append(name)
        result[namespace] = (have, lack)
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--missing", action="store_true", help="list the names tfc lacks")
    args = parser.parse_args()
    result = coverage()
    total_have = total = 0
    print(f"{'namespace':<10} {'tfc has':>8} {'of':>5} {'share':>7}")
    for namespace, (have, lack) in result.items():
        n = len(have) + len(lack)
        total_have, total = total_have + len(have), total + n
        print(f"{namespace:<10} {len(have):>8} {n:>5} {len(have) / max(n, 1):>7.0%}")
    print(f"{'all':<10} {total_have:>8} {total:>5} {total_have / total:>7.0%}")
    print(f"({len(EXCLUDED)} names excluded, each with its reason: EXCLUDED in coverage.py)")
    if args.missing:
        for namespace, (_, lack) in result.items():
            print(f"\n{namespace} lacks {len(lack)}: " + " ".join(lack))


if __name__ == "__main__":
    main()
