"""Code-generation targets: what differs between C flavours (and later CUDA) is data, not ifs."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Target:
    name: str
    template_dir: str  # subdirectory of tfc/templates holding program and kernel templates
    source_suffix: str
    kernel_qualifier: str  # how a kernel function is declared
    restrict: str  # the no-alias qualifier of pointer parameters


C = Target(
    name="c", template_dir="c", source_suffix=".c", kernel_qualifier="static", restrict="restrict"
)
