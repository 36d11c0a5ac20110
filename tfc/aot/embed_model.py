"""What `tfc compile --target embed` made: its variables, weights blob and model.h's sizes.

tfc/aot/embed.py makes an EmbeddedModel; tfc/aot/embed_api.py renders its C API from it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from tfc.aot.programs import Program
from tfc.ir import dtypes as _dt

__all__ = ["EmbeddedModel", "Stored", "Variable"]


@dataclass
class Variable:
    """A variable of the weights blob (and of the state block, for a trainable build)."""

    name: str  # its op name
    ident: str  # a C identifier made of the name
    dtype: _dt.DType
    shape: tuple[int, ...]
    offset: int
    nbytes: int


@dataclass
class EmbeddedModel:
    """What `compile_embed` made: the directory and the numbers model.h defines."""

    outdir: Path
    prefix: str
    batch: int
    max_batch: int | None  # predict takes 1..max_batch examples at run time
    trainable: bool
    external_weights: bool
    arena_bytes: int
    arena_lower_bound: int
    stack_bytes: int  # the most stack a call needs (embed_stack.py)
    state_bytes: int
    weights_bytes: int
    variables: list[Variable]
    arena_align: int = 8
    vars_bytes: int = 0  # the variables' float32 bytes in the state block (save/restore)
    stateful: bool = False  # init fills a state block (training, or weights to expand)
    check_finite: bool = False  # the train step fails on a non-finite loss or gradient
    weights_dtype: str = "float32"
    stored: list = field(default_factory=list)  # the weights blob's items
    programs: dict[str, Program] = field(default_factory=dict)

    @property
    def macro(self) -> str:
        return self.prefix.upper()


@dataclass
class Stored:
    """A variable in the weights blob: as it is, or compressed (and expanded by init)."""

    var: Variable
    offset: int
    kind: str  # "raw", "float16", "bfloat16", "int8"
    data: np.ndarray  # what the blob holds (int8: the quantized values)
    scales: np.ndarray | None = None  # int8: float32 per channel, stored before the data
    expanded: np.ndarray | None = None  # the float32 values init writes (tests compare them)

    @property
    def nbytes(self) -> int:
        return self.data.nbytes + (0 if self.scales is None else self.scales.nbytes)
