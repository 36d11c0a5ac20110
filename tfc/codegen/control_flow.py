"""The code of If and While: a C `if` around the steps of the branch that runs, a native loop
around the steps of a loop's condition and body. The same lines serve every target; what
differs (reading a predicate that lives in device memory, copying and clearing buffers) is
spelled by the Target (tfc/codegen/targets.py). On CUDA the loop runs on the host, launching
the body's kernels each iteration; reading the predicate waits for them.
"""

from __future__ import annotations

from collections.abc import Callable

from tfc.codegen.lower import Carried, IfStep, Step, WhileStep
from tfc.codegen.targets import Target

Nested = Callable[[list[Step]], list[str]]  # the lines of a nested graph's steps


def _indent(lines: list[str], levels: int = 1) -> list[str]:
    pad = "    " * levels
    return [pad + line if line else line for line in lines]


def _carry_in(carried: list[Carried], target: Target) -> list[str]:
    """Each carried value's buffer, its copy of the op's input, and its second buffer."""
    lines = []
    for c in carried:
        lines.append(f"char *{c.current} = (char *)({c.buffer});")
        if c.second is not None:
            lines.append(f"char *{c.second} = {c.second_buffer};")
        if c.nbytes:
            lines.append(f"{target.copy_function}({c.current}, {c.source}, {c.nbytes});")
        lines.append(f"(void){c.current};")
    return lines


def while_lines(step: WhileStep, target: Target, nested: Nested) -> list[str]:
    """A While: loop variables copied in, then iterations of the condition's steps and (while
    it holds) the body's, double-buffered variables swapped after each; the final values copied
    where the While's outputs are, the accumulators' rows no iteration wrote cleared."""
    i = step.counter
    lines = _carry_in(step.carried, target)
    loop = []
    if step.limit is not None:
        lines.append(f"const int64_t {i}_max = {target.int_read.format(ptr=step.limit)};")
        loop.append(f"if ({i} >= {i}_max) break; /* maximum_iterations */")
    if step.bound is not None:
        loop.append(f"if ({i} >= {step.bound}) break; /* the accumulators' rows */")
    lines.append(f"int64_t {i} = 0;")
    loop += nested(step.cond)
    loop.append(f"if (!{target.flag_read.format(ptr=step.predicate)}) break;")
    loop += nested(step.body)
    for c in step.carried:
        if c.second is not None:
            loop.append(f"{{ char *t = {c.current}; {c.current} = {c.second}; {c.second} = t; }}")
    loop.append(f"++{i};")
    lines += ["for (;;) {", *_indent(loop), "}"]
    for c in step.carried:
        if c.second is not None and c.nbytes:
            lines.append(
                f"if ({c.current} != (char *)({c.buffer})) "
                f"{target.copy_function}({c.buffer}, {c.current}, {c.nbytes});"
            )
    for ptr, row, rows in step.zeroed:  # rows past the last iteration: zeros, every run alike
        if row and rows:
            lines.append(
                f"if ({i} < {rows}) {target.zero_function}((char *){ptr} + {i} * {row}, 0, "
                f"({rows} - {i}) * {row});"
            )
    lines.append(target.int_store.format(ptr=step.count, value=i))
    return ["{", *_indent(lines), "}"]


def if_lines(step: IfStep, target: Target, nested: Nested) -> list[str]:
    """An If: carried values copied in, then the steps of the branch the predicate picks."""
    lines = _carry_in(step.carried, target)
    lines.append(f"if ({target.flag_read.format(ptr=step.predicate)}) {{")
    lines += _indent(nested(step.then))
    lines.append("} else {")
    lines += _indent(nested(step.other))
    lines.append("}")
    return ["{", *_indent(lines), "}"]


def control_lines(control: WhileStep | IfStep, target: Target, nested: Nested) -> list[str]:
    if isinstance(control, WhileStep):
        return while_lines(control, target, nested)
    return if_lines(control, target, nested)
