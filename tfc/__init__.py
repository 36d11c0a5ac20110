"""tfc: TensorFlow-1-style graphs compiled ahead of time to C.

`import tfc as tf` gives the TF1 graph API: build a graph with tf.placeholder, tf.Variable,
tf.matmul, ...; tf.Session().run() compiles what the fetches need to native code and runs it.
"""

# ruff: noqa: E402, F401, F403, I001  (the public namespace is assembled in dependency order)
from tfc.version import __version__
from tfc.ir import errors
from tfc.ir.dtypes import DType, as_dtype, bool_ as bool, float32, float64, int32, int64
from tfc.ir.dtypes import double, float
from tfc.ir.dtypes import string
from tfc.ir.dtypes import int8, int16, uint8, uint16, uint32, uint64, float16, half, bfloat16
from tfc.ir.dtypes import complex64, complex128, qint8, quint8, qint16, quint16, qint32
from tfc.ir.dtypes import resource, variant, QUANTIZED_DTYPES
from tfc.ir.graph import (
    Graph,
    GraphKeys,
    Operation,
    Tensor,
    add_to_collection,
    colocate_with,
    control_dependencies,
    device,
    get_collection,
    get_collection_ref,
    get_default_graph,
    name_scope,
    reset_default_graph,
)
from tfc.ir.tensor_shape import Dimension, TensorShape, dimension_at_index, dimension_value
from tfc.ir.graph import add_to_collections
from tfc.ir.device import DeviceSpec
from tfc.ir.errors import OpError
from tfc.ops.constant import constant, convert_to_tensor, placeholder, placeholder_with_default
from tfc.ops.constant import convert_to_tensor_or_indexed_slices
from tfc.ops.constant import get_static_value, is_tensor
from tfc.ops.math import *
from tfc.ops.logic import *
from tfc.ops.array import *
from tfc.ops.reduce import *
from tfc.ops.argminmax import *
from tfc.ops.linalg import *
from tfc.ops.linalg_structure import *
from tfc.ops.linalg_solve import *
from tfc.ops.linalg_decomp import *
from tfc.ops.random import *
from tfc.ops.random_sampling import *
from tfc.ops.control import group, no_op
from tfc.ops.state import assign, assign_add, assign_sub, count_up_to, is_variable_initialized
from tfc.ops.state_scatter import *
from tfc.ops.control_flow import *
from tfc.ops.tensor_array import TensorArray
from tfc.ops.functional_ops import *
from tfc.ops import nest
from tfc.variables import *
from tfc.variables import Variable
from tfc.partitioned_variables import fixed_size_partitioner
from tfc.init_ops import *
from tfc.ops.numerics import *
from tfc.ops.patches import *
from tfc.ops.conv_api import conv2d_backprop_filter_v2, conv2d_backprop_input_v2
from tfc.ops.conv3d import extract_volume_patches
from tfc.ops.space_batch import *
from tfc.ops.nn import log_sigmoid
from tfc.ops.sequence_mask import sequence_mask
from tfc.ops.logging_ops import *
from tfc.ops.check_ops import *
from tfc.ops.array_dynamic import *
from tfc.ops.script_ops import *
from tfc.ops.strings import *
from tfc.ops.conversions import *
from tfc.ops.complex_ops import *
from tfc import strings
from tfc.autodiff.gradients import AggregationMethod, gradients
from tfc.autodiff.registry import NoGradient, NotDifferentiable, RegisterGradient, no_gradient
from tfc.autodiff.registry import custom_gradient
from tfc.train.moving_averages import moving_average_variables
from tfc import nn, train, data, losses, debugging, layers, metrics, feature_column, logging
from tfc import linalg
from tfc import dtypes, image, bitwise
from tfc import training as _training

for _name in _training.__all__:  # tf.train also holds the loops that create Sessions
    setattr(train, _name, getattr(_training, _name))
from tfc import estimator
from tfc import manip, random
from tfc.ir.random_seed import get_seed
from tfc import contrib
from tfc.client.config import ConfigProto, RunOptions, get_num_threads, set_num_threads
from tfc.compiler import CompileOptions
from tfc.backend.device_array import DeviceArray
from tfc.client.session import InteractiveSession, Session, get_default_session
from tfc.ops.operators import install_operators as _install_operators

_install_operators(Tensor, Variable)
newaxis = None
from tfc.aot import compile
from tfc.ops.special import *
from tfc.ops.scan import *
from tfc.ops.sequences import *
from tfc.ops.segment import *
from tfc.ops.einsum import *
from tfc.ops.norms import *
from tfc import math
from tfc import summary
from tfc.graphdef import graph_util, import_graph_def
from tfc.io import gfile
from tfc.io.graph_pb import AttrValue, GraphDef, NameAttrList, NodeDef
from tfc.io.summary_pb import Event, HistogramProto, LogMessage, SessionLog, Summary
from tfc.io.summary_pb import SummaryMetadata
from tfc.io.tensor_proto import make_ndarray, make_tensor_proto
from tfc.ops.queues import *
from tfc.ir.graph import container
from tfc import queue
from tfc.ops.parsing import *
from tfc.ops.io_ops import *
from tfc import io

for _name in ("read_file", "write_file", "matching_files"):  # tf.io's names for the file ops
    setattr(io, _name, globals()[_name])
from tfc.ops.readers import *
from tfc import python_io
from tfc import app, config, flags, initializers
from tfc.autodiff.gradients import UnconnectedGradients, hessians
from tfc.autodiff.registry import grad_pass_through, recompute_grad
from tfc.behavior import disable_eager_execution, disable_v2_behavior
from tfc.io.config_pb import GPUOptions, GraphOptions, OptimizerOptions, RunMetadata
from tfc.io.meta_graph_pb import MetaGraphDef, TensorInfo
from tfc.logging import get_logger
from tfc.ops.array_shape import guarantee_const
from tfc.ops.clock import timestamp
from tfc.ops.constant import register_tensor_conversion_function
from tfc.partitioned_variables import min_max_variable_partitioner, variable_axis_size_partitioner
from tfc.ops.indexed_slices import IndexedSlices, IndexedSlicesValue
from tfc.ops.sparse_tensor import *
from tfc.ops.sparse_ops import *
from tfc.ops.sparse_math import edit_distance, sparse_matmul, sparse_tensor_dense_matmul
from tfc.ops.sparse_reduce import *
from tfc.ops.sparse_math import sparse_segment_mean, sparse_segment_sqrt_n, sparse_segment_sum
from tfc.ops.sparse_serialize import *
from tfc import sparse
