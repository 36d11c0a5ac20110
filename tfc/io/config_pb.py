"""TensorFlow's session configuration messages: GPUOptions, OptimizerOptions, GraphOptions and
RunMetadata (with the StepStats it carries).

Field numbers and kinds are those of tensorflow/core/protobuf/config.proto and
tensorflow/core/framework/step_stats.proto. Parts tfc never reads (the rewriter config, cost
graphs, allocator records) are not declared: reading skips them, as any protobuf reader skips
fields it does not know. What a Session makes of these options is tfc/client/config.py's job.
"""

from __future__ import annotations

from tfc.io.graph_pb import GraphDef
from tfc.io.proto import EnumType, Message, ProtoField

__all__ = [
    "GPUOptions",
    "OptimizerOptions",
    "GraphOptions",
    "NodeExecStats",
    "DeviceStepStats",
    "StepStats",
    "SessionMetadata",
    "RunMetadata",
]

F = ProtoField


class GPUOptions(Message):
    class Experimental(Message):
        class VirtualDevices(Message):
            FIELDS = (
                F(1, "memory_limit_mb", "float", repeated=True),
                F(2, "priority", "int32", repeated=True),
                F(3, "device_ordinal", "int32", repeated=True),
            )

        FIELDS = (
            F(1, "virtual_devices", "message", repeated=True, message=VirtualDevices),
            F(2, "use_unified_memory", "bool"),
            F(3, "num_dev_to_dev_copy_streams", "int32"),
            F(4, "collective_ring_order", "string"),
            F(5, "timestamped_allocator", "bool"),
            F(11, "use_cuda_malloc_async", "bool"),
        )

    FIELDS = (
        F(1, "per_process_gpu_memory_fraction", "double"),
        F(4, "allow_growth", "bool"),
        F(2, "allocator_type", "string"),
        F(3, "deferred_deletion_bytes", "int64"),
        F(5, "visible_device_list", "string"),
        F(6, "polling_active_delay_usecs", "int32"),
        F(7, "polling_inactive_delay_msecs", "int32"),
        F(8, "force_gpu_compatible", "bool"),
        F(9, "experimental", "message", message=Experimental),
    )


class OptimizerOptions(Message):
    Level = EnumType("Level", {"L1": 0, "L0": -1})
    GlobalJitLevel = EnumType("GlobalJitLevel", {"DEFAULT": 0, "OFF": -1, "ON_1": 1, "ON_2": 2})
    # protobuf's generated classes also hold each enum value as a class attribute
    L1, L0 = 0, -1
    DEFAULT, OFF, ON_1, ON_2 = 0, -1, 1, 2

    FIELDS = (
        F(1, "do_common_subexpression_elimination", "bool"),
        F(2, "do_constant_folding", "bool"),
        F(6, "max_folded_constant_in_bytes", "int64"),
        F(4, "do_function_inlining", "bool"),
        F(3, "opt_level", "enum", enum=Level),
        F(5, "global_jit_level", "enum", enum=GlobalJitLevel),
        F(7, "cpu_global_jit", "bool"),
    )


class GraphOptions(Message):
    FIELDS = (
        F(2, "enable_recv_scheduling", "bool"),
        F(3, "optimizer_options", "message", message=OptimizerOptions),
        F(4, "build_cost_model", "int64"),
        F(9, "build_cost_model_after", "int64"),
        F(5, "infer_shapes", "bool"),
        F(6, "place_pruned_graph", "bool"),
        F(7, "enable_bfloat16_sendrecv", "bool"),
        F(8, "timeline_step", "int32"),
    )


class NodeExecStats(Message):
    FIELDS = (
        F(1, "node_name", "string"),
        F(2, "all_start_micros", "int64"),
        F(3, "op_start_rel_micros", "int64"),
        F(4, "op_end_rel_micros", "int64"),
        F(5, "all_end_rel_micros", "int64"),
        F(8, "timeline_label", "string"),
        F(9, "scheduled_micros", "int64"),
        F(10, "thread_id", "uint32"),
        F(13, "all_start_nanos", "int64"),
        F(14, "op_start_rel_nanos", "int64"),
        F(15, "op_end_rel_nanos", "int64"),
        F(16, "all_end_rel_nanos", "int64"),
        F(17, "scheduled_nanos", "int64"),
    )


class DeviceStepStats(Message):
    FIELDS = (
        F(1, "device", "string"),
        F(2, "node_stats", "message", repeated=True, message=NodeExecStats),
        F(3, "thread_names", "map", key_kind="uint32", value_kind="string"),
    )


class StepStats(Message):
    FIELDS = (F(1, "dev_stats", "message", repeated=True, message=DeviceStepStats),)


class SessionMetadata(Message):
    FIELDS = (F(1, "name", "string"), F(2, "version", "int64"))


class RunMetadata(Message):
    """What Session.run(run_metadata=) may fill in. tfc's Session records no per-step
    statistics into it (Session.profile times each kernel instead); FileWriter's
    add_run_metadata writes it as TF's does."""

    class FunctionGraphs(Message):
        FIELDS = (
            F(1, "partition_graphs", "message", repeated=True, message=GraphDef),
            F(2, "pre_optimization_graph", "message", message=GraphDef),
            F(3, "post_optimization_graph", "message", message=GraphDef),
        )

    FIELDS = (
        F(1, "step_stats", "message", message=StepStats),
        F(3, "partition_graphs", "message", repeated=True, message=GraphDef),
        F(4, "function_graphs", "message", repeated=True, message=FunctionGraphs),
        F(5, "session_metadata", "message", message=SessionMetadata),
    )
