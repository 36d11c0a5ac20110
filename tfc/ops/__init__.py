"""Op families; importing this package registers every op type."""

from tfc.ops import (  # noqa: F401
    argminmax,
    array,
    constant,
    control,
    linalg,
    logic,
    math,
    nn,
    nn_loss,
    numerics,
    random,
    reduce,
    registry,
    state,
)
