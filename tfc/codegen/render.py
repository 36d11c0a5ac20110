"""Rendering: a LoweredProgram becomes C source through the Jinja templates in tfc/templates/.

Python prepares every string; templates only interpolate. Identical kernels (same template
and data) are emitted once and shared by every step that needs them. The output is a pure
function of the program: the same graph gives the same bytes.

The profile build (`profile=True`, or TFC_PROFILE=1 in the environment) times every step into
a per-program table with extra entry points (tfc/client/profiling.py reads them) and prints
the table to stderr at exit; the default build's source has none of it, so its cache entry is
its own.
"""

from __future__ import annotations

import os
from dataclasses import replace
from pathlib import Path

import jinja2

from tfc.codegen.control_flow import control_lines
from tfc.codegen.lower import LoweredProgram, Step
from tfc.codegen.targets import C, Target
from tfc.ir.tensor_shape import num_elements
from tfc.ops.kernels import Kernel, c_string
from tfc.version import __version__

TEMPLATES = Path(__file__).parent.parent / "templates"
_KERNEL_NAME = "@KERNEL@"

_env = jinja2.Environment(
    loader=jinja2.FileSystemLoader(str(TEMPLATES)),
    trim_blocks=True,
    lstrip_blocks=True,
    keep_trailing_newline=True,
    undefined=jinja2.StrictUndefined,
    autoescape=False,
)


def get_template(name: str) -> jinja2.Template:
    """A template of tfc/templates (e.g. "c/model.h.j2") in the one configured environment."""
    return _env.get_template(name)


def render_kernel(
    kernel: Kernel, target: Target = C, name: str = _KERNEL_NAME, restrict: bool = True
) -> str:
    qualifier = f"{target.restrict} " if restrict else ""
    params = [f"{'const ' if p.const else ''}{p.ctype} *{qualifier}{p.name}" for p in kernel.params]
    arg_names = [p.name for p in kernel.params]
    if kernel.can_fail:
        params.append(target.fail_param)
        arg_names.append(target.fail_name)
    rendered = target.kernel_template(kernel)
    if rendered is None:
        # the target has no kernel of its own: wrap the C kernel (its body_qualifier makes it
        # callable where the fallback template runs it)
        body_target = replace(C, kernel_qualifier=target.body_qualifier, restrict=target.restrict)
        body = render_kernel(kernel, body_target, name=f"{name}_body", restrict=restrict)
        return _env.get_template(target.fallback_template).render(
            name=name,
            params=", ".join(params) or "void",
            call_args=", ".join(arg_names),
            body=body,
            call=_fallback_call(kernel, name),
        )
    stem, data = rendered
    template = _env.get_template(f"{target.template_dir}/kernels/{stem}{target.kernel_suffix}")
    return template.render(
        name=name,
        qualifier=target.kernel_qualifier,
        ret="int" if kernel.can_fail else "void",
        params=", ".join(params) or "void",
        call_args=", ".join(arg_names),
        **data,
    )


def _fallback_call(kernel: Kernel, name: str) -> list[str]:
    """The statements of the GPU thread running a C kernel: a call, and for one that can fail
    its error claimed for the kernel's site."""
    args = ", ".join(p.name for p in kernel.params)
    if not kernel.can_fail:
        return [f"{name}_body({args});"]
    return [
        "tfc_error e = {tfc_cuda_dstatus.scratch, TFC_CUDA_MSG, NULL};",
        f"const int rc = {name}_body({args}, &e);",
        "if (rc != TFC_OK && tfc_cuda_claim(rc, tfc_site)) memcpy(tfc_cuda_dstatus.msg, e.msg, "
        "TFC_CUDA_MSG);",
    ]


def profiling_requested() -> bool:
    """Whether TFC_PROFILE asks for profile builds (set to anything but "", "0")."""
    return os.environ.get("TFC_PROFILE", "") not in ("", "0")


def render_program(
    program: LoweredProgram,
    target: Target = C,
    profile: bool | None = None,
    linkage: str = "",
    mixed_io: bool = False,
) -> str:
    """The C source of `program`; `profile` (default: TFC_PROFILE) renders the profile build.
    `linkage` "static inline " keeps the entry points in their file (the embeddable library's
    model.c holds every program and calls them itself). `mixed_io` adds a CUDA program's
    run_mixed entry point (each feed and fetch in host or device memory: a stage of a staged
    Session program); other programs go without it, so their code stays as it was."""
    if profile is None:
        profile = profiling_requested()
    profile = profile and target.profiles
    sites: list[str] = []  # the nodes of the kernels that can fail, in call order
    names: dict[str, str] = {}
    steps = []
    timed: list[str] = []  # the profile table's labels, one per timed step

    def step_lines(step: Step) -> list[str]:
        lines = []
        unlock = " ".join(f"tfc_update_unlock({word});" for word in reversed(step.locks))
        if step.locks and target.fail_call_locked is None:
            raise NotImplementedError(f"the {target.name} target takes no update locks")
        if step.control is not None:
            lines += control_lines(step.control, target, nested_lines)
        for bound in step.kernels:
            text = render_kernel(bound.kernel, target, restrict=bound.restrict)
            name = names.setdefault(text, f"{program.local_prefix}k{len(names)}")
            if bound.kernel.can_fail:
                args = ", ".join(bound.args + [target.fail_arg.format(site=len(sites))])
                call = target.fail_call_locked if step.locks else target.fail_call
                lines.append(
                    call.format(name=name, args=args, node=c_string(step.node), unlock=unlock)
                )
                sites.append(c_string(step.node))
            else:
                lines.append(f"{name}({', '.join(bound.args)});")
        lines.extend(
            f"{target.copy_function}({c.target or f'outputs[{c.slot}]'}, {c.source}, {c.nbytes});"
            for c in step.copies
        )
        if step.locks:  # an update with use_locking: its variables' locks held around it
            lines = [*(f"tfc_update_lock({word});" for word in step.locks), *lines, unlock]
        return lines

    def nested_lines(nested: list[Step]) -> list[str]:
        """The steps of a branch or loop body, each with its comment."""
        out = []
        for step in nested:
            lines = step_lines(step)
            if lines:
                out += [f"/* {line} */" for line in step.comment] + lines
        return out

    for step in program.steps:
        lines = step_lines(step)
        if profile and lines:
            lines = [
                "tfc_prof_t = tfc_prof_now();",
                *lines,
                f"tfc_prof_ns[{len(timed)}] += tfc_prof_now() - tfc_prof_t;",
            ]
            timed.append(c_string(f"{step.node} ({step.op})"))
        steps.append({"comment": step.comment, "lines": lines})
    kernels = [text.replace(_KERNEL_NAME, name) for text, name in names.items()]
    header = {
        "feeds": [
            f"{i}: {f.name} {f.dtype.name}{list(f.shape)}" for i, f in enumerate(program.feeds)
        ],
        "fetches": [
            f"{j}: {t.tensor[0]}:{t.tensor[1]} {t.dtype.name}{list(t.shape)}"
            for j, t in enumerate(program.fetches)
        ],
        "slots": [
            f"{i}: {s.kind} {s.name} {s.dtype.name}{list(s.shape)}"
            for i, s in enumerate(program.slots)
        ],
    }
    data = dict(
        sites=sites,
        n_sites=len(sites),
        **staging_layout(program),
        version=__version__,
        name=program.name,
        name_literal=c_string(program.name),
        prefix=program.prefix,
        linkage=linkage,
        mixed_io=mixed_io,
        exported=not linkage,  # a file-local program (embed) has no threads to set
        arena_bytes=program.arena_bytes,
        consts=program.consts,
        kernels=kernels,
        steps=steps,
        profile=profile,
        profile_labels=timed or ["NULL"],
        profile_steps=len(timed),
        profile_table_size=max(len(timed), 1),  # C has no empty arrays
        epoch_bump=[]
        if program.bumps_epoch is None
        else [f"tfc_gemm_packed_bump((uint64_t *)state[{program.bumps_epoch}]);"],
        **header,
    )
    template = _env.get_template(f"{target.template_dir}/{target.program_template}")
    return template.render(**(data | target.program_parts(data)))


def staging_layout(program: LoweredProgram, align: int = 256) -> dict:
    """Where a device program stages host feeds and fetches: after its arena, each aligned
    (the offsets are from the start of its device arena)."""
    offset = -(-program.arena_bytes // align) * align
    start = offset
    feeds, fetches = [], []
    for spec, out in [(f, feeds) for f in program.feeds] + [(f, fetches) for f in program.fetches]:
        nbytes = num_elements(spec.shape) * spec.dtype.size
        out.append({"offset": offset, "bytes": nbytes})
        offset += -(-max(nbytes, 1) // align) * align
    written = set(program.vars_written)
    state = [
        {
            "bytes": num_elements(s.shape) * s.dtype.size,
            "written": s.kind == "rng" or s.name in written,
        }
        for s in program.slots
    ]
    return {
        "state_bytes": state,
        "external_bytes": [c.nbytes for c in program.external_consts],
        "staging_offset": start,
        "staged_feeds": feeds,
        "staged_fetches": fetches,
        "device_bytes": max(offset, 1),
    }
