"""The files of a compiled model's directory: programs, descriptor, drivers' mains, Makefile.

Python prepares every string of the descriptor (struct initializers, array items, flags);
the templates in tfc/templates/c/ only lay them out.
"""

from __future__ import annotations

from tfc.aot.programs import SUMMARY_OUTPUT_PREFIX, ModelError, ModelPlan, Program
from tfc.backend.cc import GEMM_LINKED
from tfc.codegen.render import get_template
from tfc.ir import dtypes as _dt
from tfc.ops.kernels import c_initializer, c_string
from tfc.version import __version__

# TensorFlow's DataType numbers, as runtime/include/tfc_data.h names them
_DT = {
    _dt.float32: "TFC_DT_F32",
    _dt.float64: "TFC_DT_F64",
    _dt.int32: "TFC_DT_I32",
    _dt.int64: "TFC_DT_I64",
    _dt.bool_: "TFC_DT_BOOL",
}
ROLES = ("init", "train", "predict", "predict_one")
EXECUTABLES = {"train": "tfc_train_main", "predict": "tfc_predict_main"}
# compiled into every object; CFLAGS (optimization, sanitizers, -Werror) come on top. The
# GEMM's paths are linked from the runtime's archive (runtime/src/tfc_gemm_paths.c), not
# compiled again in every program file.
BASE_CFLAGS = ["-std=c11", "-Wall", "-Wextra", "-pedantic", "-fno-math-errno", GEMM_LINKED]


def model_symbol(plan: ModelPlan) -> str:
    return f"{plan.name}_model"


class DescriptorArrays:
    """Static arrays of the descriptor, declared in order of first use."""

    def __init__(self) -> None:
        self.items: list[dict] = []

    def add(self, name: str, ctype: str, items: list[str], qualifier: str = "") -> str:
        if not items:
            return "NULL"
        name = f"m_{name}"  # apart from every name the programs and the runtime define
        self.items.append({"name": name, "ctype": ctype, "entries": items, "qualifier": qualifier})
        return name


def _ints(
    arrays: DescriptorArrays, name: str, ctype: str, values: tuple[int, ...] | list[int]
) -> str:
    """An array of integers on one line (NULL when empty: C has no empty arrays)."""
    return arrays.add(name, ctype, [", ".join(str(v) for v in values)] if values else [])


def _dims(arrays: DescriptorArrays, name: str, shape: tuple[int, ...]) -> str:
    return _ints(arrays, name, "int64_t", shape)


def _tensor_specs(arrays: DescriptorArrays, prefix: str, names: list[str], specs: list) -> str:
    items = []
    for i, (name, spec) in enumerate(zip(names, specs)):
        if spec.dtype not in _DT:
            raise ModelError(
                f"{name} has dtype {spec.dtype.name}; the native executables read and write "
                f"{', '.join(d.name for d in _DT)} tensors (cast it in the graph: tf.cast)"
            )
        dims = _dims(arrays, f"{prefix}_dims{i}", spec.shape)
        nbytes = _nbytes(spec.dtype, spec.shape)
        items.append(
            f"{{{c_string(name)}, {_DT[spec.dtype]}, {len(spec.shape)}, {dims}, {nbytes}}}"
        )
    return arrays.add(prefix, "tfc_tensor_spec", items)


def _nbytes(dtype: _dt.DType, shape: tuple[int, ...]) -> int:
    n = dtype.size
    for d in shape:
        n *= d
    return n


def program_descriptor(arrays: DescriptorArrays, p: Program) -> str:
    """The tfc_program of `p` (its tables added to `arrays`): a pointer to it, or NULL."""
    low = p.lowered
    slots = _ints(arrays, f"{p.role}_slots", "int", p.slots)
    inputs = _tensor_specs(arrays, f"{p.role}_inputs", p.input_names, low.feeds)
    outputs = _tensor_specs(arrays, f"{p.role}_outputs", p.output_names, low.fetches)
    consts = []
    for i, value in enumerate(low.external_consts):
        dtype = _dt.as_dtype(value.dtype)
        consts.append(
            arrays.add(
                f"{p.role}_const{i}", dtype.c_type, [c_initializer(value, dtype)], "_Alignas(64) "
            )
        )
    const_table = arrays.add(f"{p.role}_consts", "void *const", consts)
    name = arrays.add(
        p.role,
        "tfc_program",
        [
            f"{{{c_string(p.role)}, {low.prefix}run, {low.arena_bytes}, {len(p.slots)}, {slots}, "
            f"{len(low.feeds)}, {inputs}, {len(low.fetches)}, {outputs}, {len(consts)}, "
            f"{const_table}}}"
        ],
    )
    return f"&{name}[0]" if name != "NULL" else name


def state_specs(arrays: DescriptorArrays, state: list) -> list[str]:
    """The tfc_state_spec initializers of `state` (their dims arrays added to `arrays`)."""
    items = []
    for i, s in enumerate(state):
        dims = _dims(arrays, f"state_dims{i}", s.shape)
        kind = "TFC_STATE_VARIABLE" if s.kind == "var" else "TFC_STATE_RANDOM"
        items.append(
            f"{{{c_string(s.name)}, {kind}, {_DT[s.dtype]}, {len(s.shape)}, {dims}, "
            f"{_nbytes(s.dtype, s.shape)}, {int(s.saved)}, {s.seed}u, {s.seed2}u}}"
        )
    return items


def render_descriptor(plan: ModelPlan) -> tuple[str, str]:
    """model.h and model.c of `plan`."""
    arrays = DescriptorArrays()
    state_items = state_specs(arrays, plan.state)
    programs = {role: program_descriptor(arrays, p) for role, p in plan.programs.items()}
    state = arrays.add("state", "tfc_state_spec", state_items)
    train = plan.programs.get("train")
    hparams = []
    if train is not None:
        for name, default in plan.signatures.train.defaults.items():
            hparams.append(f"{{{c_string(name)}, {train.input_names.index(name)}, {default!r}}}")
    hparam_table = arrays.add("hyperparameters", "tfc_hyperparameter", hparams)
    summaries = []
    if train is not None:
        for i, name in enumerate(train.output_names):
            if name.startswith(SUMMARY_OUTPUT_PREFIX):
                tag = name[len(SUMMARY_OUTPUT_PREFIX) :]
                summaries.append(f"{{{c_string(tag)}, {i}}}")
    summary_table = arrays.add("summaries", "tfc_summary_scalar", summaries)
    predict = plan.signatures.predict
    label_output = predict.label_output if predict is not None else None
    fields = {
        "name": c_string(plan.name),
        "batch": str(plan.batch),
        "n_state": str(len(plan.state)),
        "state": state,
        **{role: programs.get(role, "NULL") for role in ROLES},
        "global_step": str(plan.global_step),
        "train_features": "0",
        "train_labels": str(train.input_names.index("labels"))
        if train is not None and "labels" in train.input_names
        else "-1",
        "train_loss": "0",
        "n_hyperparameters": str(len(hparams)),
        "hyperparameters": hparam_table,
        "n_summaries": str(len(summaries)),
        "summaries": summary_table,
        "predict_features": "0",
        "predict_classes": str(list(predict.outputs).index(label_output))
        if label_output is not None
        else "-1",
        "predict_argmax": str(int(predict.argmax)) if predict is not None else "0",
        "label_classes": str(plan.signatures.train.label_classes)
        if plan.signatures.train is not None
        else "0",
    }
    common = {"version": __version__, "name": plan.name, "symbol": model_symbol(plan)}
    prefixes = [p.lowered.prefix for p in plan.programs.values()]
    header = get_template("c/model.h.j2").render(
        guard=f"TFC_MODEL_{plan.name.upper()}_H",
        batch_macro=f"{plan.name.upper()}_BATCH",
        batch=plan.batch,
        prefixes=prefixes,
        **common,
    )
    source = get_template("c/model.c.j2").render(
        arrays=arrays.items, fields=list(fields.items()), **common
    )
    return header, source


def render_main(plan: ModelPlan, executable: str) -> str:
    return get_template("c/main.c.j2").render(
        version=__version__,
        name=plan.name,
        executable=executable,
        driver=EXECUTABLES[executable],
        symbol=model_symbol(plan),
    )


def model_objects(plan: ModelPlan) -> list[str]:
    """The objects of the model's own sources, as the Makefile and the build name them."""
    programs = [p.filename.rsplit(".", 1)[0] for p in plan.programs.values()]  # .c or .cu
    return ["obj/model.o"] + [f"obj/{stem}.o" for stem in programs]


def makefile_toolchain(cuda: dict | None) -> dict:
    """Makefile.j2's toolchain data: the C-only link line, or with `cuda` (makefile_fields of
    the CUDA toolchain) its libraries, variables and .cu rule added."""
    libs = ["-lm", "-pthread", *(cuda["libs"] if cuda else [])]
    if cuda is None:
        return {"ldlibs": " ".join(libs), "toolchain": [], "cu_rules": []}
    return {"ldlibs": " ".join(libs), "toolchain": cuda["toolchain"], "cu_rules": cuda["cu_rules"]}


def render_makefile(
    plan: ModelPlan, executables: list[str], cflags: list[str], cuda: dict | None = None
) -> str:
    """`cuda` (the CUDA target): the .cu programs' compiler, flags and link libraries, as
    tfc.aot.cuda_build.CudaToolchain.makefile_fields gives them."""
    return get_template("c/Makefile.j2").render(
        **makefile_toolchain(cuda),
        version=__version__,
        name=plan.name,
        cflags=" ".join(cflags),
        base_cflags=" ".join(BASE_CFLAGS),
        model_objects=" ".join(model_objects(plan)),
        executables=[{"name": e, "main": f"obj/main_{e}.o"} for e in executables],
        all_executables=" ".join(executables),
    )


def model_sources(plan: ModelPlan, executables: list[str]) -> dict[str, str]:
    """The generated C files by name: programs, the descriptor, the mains."""
    files = {p.filename: p.source for p in plan.programs.values()}
    files["model.h"], files["model.c"] = render_descriptor(plan)
    for e in executables:
        files[f"main_{e}.c"] = render_main(plan, e)
    return files
