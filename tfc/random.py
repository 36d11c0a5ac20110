"""`tf.random` (TF1): the random ops under their tf.random names."""

from tfc.ir.random_seed import get_seed, set_random_seed
from tfc.ops.candidate_sampling import (
    all_candidate_sampler,
    fixed_unigram_candidate_sampler,
    log_uniform_candidate_sampler,
    uniform_candidate_sampler,
)
from tfc.ops.random import random_normal as normal
from tfc.ops.random import random_uniform as uniform
from tfc.ops.random import truncated_normal
from tfc.ops.random_sampling import categorical, multinomial
from tfc.ops.random_sampling import random_gamma as gamma
from tfc.ops.random_sampling import random_poisson as poisson
from tfc.ops.random_sampling import random_shuffle as shuffle

__all__ = [
    "all_candidate_sampler",
    "categorical",
    "fixed_unigram_candidate_sampler",
    "gamma",
    "get_seed",
    "log_uniform_candidate_sampler",
    "multinomial",
    "normal",
    "poisson",
    "set_random_seed",
    "shuffle",
    "truncated_normal",
    "uniform",
    "uniform_candidate_sampler",
]
