"""Op families; importing this package registers every op type."""

from tfc.ops import (  # noqa: F401
    argminmax,
    array,
    array_grad,
    constant,
    control,
    conv,
    grad_ops,
    linalg,
    logic,
    math,
    math_grad,
    nn,
    nn_grad,
    nn_loss,
    numerics,
    random,
    reduce,
    registry,
    state,
    training_ops,
)
