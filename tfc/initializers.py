"""`tf.initializers`: TF1's namespace of initializers (tfc/init_ops.py) by their short names,
and the ops that run variables' initializers."""

# ruff: noqa: F401  (this module only re-exports)
from tfc.init_ops import constant_initializer as constant
from tfc.init_ops import glorot_normal_initializer as glorot_normal
from tfc.init_ops import glorot_uniform_initializer as glorot_uniform
from tfc.init_ops import he_normal, he_uniform, lecun_normal, lecun_uniform
from tfc.init_ops import identity_initializer as identity
from tfc.init_ops import ones_initializer as ones
from tfc.init_ops import orthogonal_initializer as orthogonal
from tfc.init_ops import random_normal_initializer as random_normal
from tfc.init_ops import random_uniform_initializer as random_uniform
from tfc.init_ops import truncated_normal_initializer as truncated_normal
from tfc.init_ops import uniform_unit_scaling_initializer as uniform_unit_scaling
from tfc.init_ops import variance_scaling_initializer as variance_scaling
from tfc.init_ops import zeros_initializer as zeros
from tfc.variables import global_variables_initializer as global_variables
from tfc.variables import local_variables_initializer as local_variables
from tfc.variables import tables_initializer
from tfc.variables import variables_initializer as variables
