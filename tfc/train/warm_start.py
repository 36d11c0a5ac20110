"""`tf.train.init_from_checkpoint`: variables initialized from a checkpoint's tensors.

TensorFlow points each variable's initializer at a restore op that reads the file when the
initializer runs; tfc compiles ahead of time, so the values are read when this is called and
the initializer assigns them as constants (a compiled program carries them). Call it before
`global_variables_initializer()`, as in TensorFlow: that op runs the initializers it finds.
"""

from __future__ import annotations

from typing import Any

from tfc.ir.graph import GraphKeys, get_default_graph
from tfc.train.saver import load_checkpoint
from tfc.variables import Variable

__all__ = ["init_from_checkpoint"]


def init_from_checkpoint(ckpt_dir_or_file: str, assignment_map: Any) -> None:
    """Initialize variables from checkpoint tensors, as `assignment_map` (a dict, or a list of
    pairs) says: checkpoint name -> Variable or variable name ("old/w": "new/w"), or checkpoint
    scope -> variable scope ("old/": "new/" initializes each variable new/X from old/X; "/" is
    the root on either side). The checkpoint is a directory, a prefix or a file, in tfc's
    format or TensorFlow's.
    """
    pairs = list(assignment_map.items() if isinstance(assignment_map, dict) else assignment_map)
    graph = get_default_graph()
    variables = {}
    for key in (GraphKeys.GLOBAL_VARIABLES, GraphKeys.LOCAL_VARIABLES):
        for v in graph.get_collection(key):
            if isinstance(v, Variable):
                variables.setdefault(v.op.name, v)
    with load_checkpoint(ckpt_dir_or_file) as reader:
        plan: list[tuple[Variable, str]] = []
        for tensor_name, current in pairs:
            if isinstance(current, Variable):
                plan.append((current, tensor_name))
            elif isinstance(current, str) and current in variables:
                plan.append((variables[current], tensor_name))
            elif isinstance(current, str):
                plan += _scope_pairs(tensor_name, current, variables)
            else:
                raise TypeError(
                    f"assignment_map maps {tensor_name!r} to {current!r}: neither a Variable nor "
                    "a variable or scope name"
                )
        values = []
        for variable, tensor_name in plan:  # every check before any variable changes
            if not reader.has_tensor(tensor_name):
                raise ValueError(f"Tensor {tensor_name} is not found in {reader.path} checkpoint")
            info = reader.tensors[tensor_name]
            if not variable.shape.is_compatible_with(info.shape):
                raise ValueError(
                    f"Shape of variable {variable.op.name} ({variable.shape}) doesn't match "
                    f"with shape of tensor {tensor_name} ({list(info.shape)}) from checkpoint "
                    "reader."
                )
            if info.np_dtype != variable.dtype.np:
                raise ValueError(
                    f"Variable {variable.op.name} is {variable.dtype.name}; tensor "
                    f"{tensor_name} of the checkpoint is {info.tf_dtype_name}"
                )
            values.append(reader.get_tensor(tensor_name))
    for (variable, _), value in zip(plan, values):
        variable.use_initial_value(value)


def _scope_pairs(
    tensor_scope: str, current: str, variables: dict[str, Variable]
) -> list[tuple[Variable, str]]:
    """(variable, checkpoint name) for each variable under scope `current`."""
    if not (current == "/" or current.endswith("/")):
        raise ValueError(
            f"assignment_map maps {tensor_scope!r} to {current!r}, which is neither a variable "
            "nor a scope (a scope name ends with '/')"
        )
    if not tensor_scope.endswith("/"):
        raise ValueError(
            f"Assignment map with scope only name {current} should map to scope only "
            f"{tensor_scope}. Should be 'scope/': 'other_scope/'."
        )
    prefix = "" if current == "/" else current
    pairs = []
    for name in sorted(variables):
        if name.startswith(prefix):
            relative = name[len(prefix) :]
            checkpoint_name = relative if tensor_scope == "/" else tensor_scope + relative
            pairs.append((variables[name], checkpoint_name))
    return pairs
