"""Code-generation targets: what differs between C flavours and CUDA is data, not ifs."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Target:
    name: str
    template_dir: str  # subdirectory of tfc/templates holding program and kernel templates
    source_suffix: str
    kernel_qualifier: str  # how a kernel function is declared
    restrict: str  # the no-alias qualifier of pointer parameters
    kernel_suffix: str = ".c.j2"  # kernel templates are <template_dir>/kernels/<name><suffix>
    program_template: str = "program.c.j2"
    # a kernel the target has no template of: its C template renders a function with
    # `body_qualifier` that `fallback_template` wraps (CUDA: one GPU thread runs the C loop)
    fallback_template: str | None = None
    body_qualifier: str = "static"
    # a kernel that can fail: its extra parameter, the argument passed for it ({site}: its
    # index in the program's table of failing nodes) and the statement calling it
    fail_param: str = "tfc_error *err"
    fail_arg: str = "err"
    fail_call: str = "if ((rc = {name}({args})) != TFC_OK) return tfc_fail_at(err, rc, {node});"
    copy_function: str = "memcpy"  # copies fetched values that live in another buffer
    profiles: bool = True  # whether the TFC_PROFILE build exists for this target
    # "module:function" adding target-specific data to a kernel's (thread indexing, say)
    data_adapter: str | None = None
    # whether the fuse pass may put a MatMul in a group, and one whose product only a block of
    # rows in scratch memory holds: the C kernel computes the rows inside its loop nest; a CUDA
    # kernel launches the whole GEMM first, into an output the size of the product
    fuse_matmul: bool = True
    fuse_row_scratch: bool = True

    def pass_options(self) -> dict[str, dict]:
        """Keyword arguments of passes for programs of this target (run_passes' `options`)."""
        return {"fuse": {"matmul_groups": self.fuse_matmul, "row_scratch": self.fuse_row_scratch}}


C = Target(
    name="c", template_dir="c", source_suffix=".c", kernel_qualifier="static", restrict="restrict"
)

CUDA = Target(
    name="cuda",
    template_dir="cuda",
    source_suffix=".cu",
    kernel_qualifier="static",
    restrict="__restrict__",
    kernel_suffix=".cu.j2",
    program_template="program.cu.j2",
    fallback_template="cuda/serial.cu.j2",
    body_qualifier="static __device__",
    fail_param="int tfc_site",
    fail_arg="{site}",
    fail_call="{name}({args});",
    copy_function="tfc_cuda_memcpy",
    profiles=False,
    data_adapter="tfc.codegen.cuda:cuda_kernel_data",
    fuse_row_scratch=False,
)

TARGETS = {"c": C, "cuda": CUDA}
