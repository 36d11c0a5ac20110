"""`tf.random` (TF1): the random ops under their tf.random names."""

from tfc.ir.random_seed import get_seed, set_random_seed
from tfc.ops.random import random_normal as normal
from tfc.ops.random import random_uniform as uniform
from tfc.ops.random import truncated_normal
from tfc.ops.random_sampling import categorical, multinomial
from tfc.ops.random_sampling import random_gamma as gamma
from tfc.ops.random_sampling import random_poisson as poisson
from tfc.ops.random_sampling import random_shuffle as shuffle

__all__ = [
    "categorical",
    "gamma",
    "get_seed",
    "multinomial",
    "normal",
    "poisson",
    "set_random_seed",
    "shuffle",
    "truncated_normal",
    "uniform",
]
