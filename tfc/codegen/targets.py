"""Code-generation targets: what differs between C flavours and CUDA is data, not ifs.

A target is a renderer: its template directory, its spellings (qualifiers, the failing call,
the copy function) and `kernel_template`, the function deriving a kernel's template and data
from its typed spec (tfc/codegen/c.py, tfc/codegen/cuda.py).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace

from tfc.codegen import c, cuda
from tfc.ops.kernels import Kernel


@dataclass(frozen=True)
class Target:
    name: str
    template_dir: str  # subdirectory of tfc/templates holding program and kernel templates
    source_suffix: str
    kernel_qualifier: str  # how a kernel function is declared
    restrict: str  # the no-alias qualifier of pointer parameters
    # a kernel's template stem under <template_dir>/kernels (<stem><kernel_suffix>) and the
    # data it interpolates, derived from the kernel's spec; None: the target has no kernel of
    # that kind, and its C kernel, rendered as a function with `body_qualifier`, is wrapped
    # by `fallback_template` (CUDA: one GPU thread runs the C loop)
    kernel_template: Callable[[Kernel], tuple[str, dict] | None]
    # the parts of the program template (templates it includes, statements) that depend on
    # the program and its build (profile, linkage, staging), from render_program's data
    program_parts: Callable[[dict], dict]
    kernel_suffix: str = ".c.j2"
    program_template: str = "program.c.j2"
    fallback_template: str | None = None
    body_qualifier: str = "static"
    # a kernel that can fail: its extra parameter, the argument passed for it ({site}: its
    # index in the program's table of failing nodes) and the statement calling it
    fail_param: str = "tfc_error *err"
    fail_name: str = "err"  # the name fail_param declares
    fail_arg: str = "err"
    fail_call: str = "if ((rc = {name}({args})) != TFC_OK) return tfc_fail_at(err, rc, {node});"
    # the same inside a step holding update locks ({unlock}: the statements releasing them);
    # None where no program takes update locks
    fail_call_locked: str | None = (
        "if ((rc = {name}({args})) != TFC_OK) {{ {unlock} return tfc_fail_at(err, rc, {node}); }}"
    )
    copy_function: str = "memcpy"  # copies fetched values that live in another buffer
    # control flow (tfc/codegen/control_flow.py): reading a predicate and an int32 count where
    # the program keeps them, storing a count, clearing a buffer
    flag_read: str = "(*(const bool *)({ptr}))"
    int_read: str = "(*(const int32_t *)({ptr}))"
    int_store: str = "*(int32_t *)({ptr}) = (int32_t){value};"
    zero_function: str = "memset"
    profiles: bool = True  # whether the TFC_PROFILE build exists for this target
    # whether the fuse pass may put a MatMul in a group, and one whose product only a block of
    # rows in scratch memory holds: the C kernel computes the rows inside its loop nest; a CUDA
    # kernel launches the whole GEMM first, into an output the size of the product
    fuse_matmul: bool = True
    fuse_row_scratch: bool = True
    # whether a MatMul + Add group may add its product into the addend's buffer (GEMM beta = 1,
    # in place: a gradient summed over a loop's iterations); CUDA's GEMM has no beta
    fuse_accumulate: bool = True
    # whether a Conv2D may absorb its bias, residual Add and ReLU (_FusedConv2D: its kernel is
    # tfc_conv.h's; the CUDA target keeps them element-wise kernels)
    conv_epilogues: bool = True

    def pass_options(self) -> dict[str, dict]:
        """Keyword arguments of passes for programs of this target (run_passes' `options`)."""
        return {
            "epilogue": {"enabled": self.conv_epilogues},
            "fuse": {
                "matmul_groups": self.fuse_matmul,
                "row_scratch": self.fuse_row_scratch,
                "accumulate": self.fuse_accumulate,
            },
        }


C = Target(
    name="c",
    template_dir="c",
    source_suffix=".c",
    kernel_qualifier="static",
    restrict="restrict",
    kernel_template=c.kernel_template,
    program_parts=c.program_parts,
)

CUDA = Target(
    name="cuda",
    template_dir="cuda",
    source_suffix=".cu",
    kernel_qualifier="static",
    restrict="__restrict__",
    kernel_template=cuda.kernel_template,
    program_parts=cuda.program_parts,
    kernel_suffix=".cu.j2",
    program_template="program.cu.j2",
    fallback_template="cuda/serial.cu.j2",
    body_qualifier="static __device__",
    fail_param="int tfc_site",
    fail_name="tfc_site",
    fail_arg="{site}",
    fail_call="{name}({args});",
    fail_call_locked=None,
    copy_function="tfc_cuda_memcpy",
    flag_read="tfc_cuda_flag({ptr})",
    int_read="tfc_cuda_read_i32({ptr})",
    int_store="tfc_cuda_store_i32({ptr}, (int32_t){value});",
    zero_function="tfc_cuda_memset",
    profiles=False,
    fuse_row_scratch=False,
    fuse_accumulate=False,
    conv_epilogues=False,
)

# CUDA where the user allows TF32 (CompileOptions(allow_tf32=True)): float32 convolutions on
# tensor cores
CUDA_TF32 = replace(CUDA, kernel_template=cuda.kernel_template_tf32)

TARGETS = {"c": C, "cuda": CUDA}
