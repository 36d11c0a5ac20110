"""`tfc compile --cluster`: the files of a distributed model's directory (every task role's
programs and descriptor, the link table (tfc_dist.h), the `train` main and the Makefile) and
their build. Python prepares every string; the templates only lay them out."""

from __future__ import annotations

import os
from pathlib import Path

from tfc.aot.build import (
    TARGET_FLAGS,
    CompiledModel,
    build_executables,
    copy_runtime,
    sync_dir,
    write_if_changed,
)
from tfc.aot.distributed import Cluster, DistributedPlan, TaskPlan, plan_distributed
from tfc.aot.signatures import build_signatures, c_identifier, load_signatures_function
from tfc.aot.sources import (
    BASE_CFLAGS,
    DescriptorArrays,
    makefile_toolchain,
    program_descriptor,
    state_specs,
)
from tfc.backend.cc import runtime_dir
from tfc.codegen.render import get_template
from tfc.compiler import CompileOptions
from tfc.ir.graph import device
from tfc.ops.kernels import c_string
from tfc.train.cluster_spec import ClusterSpec
from tfc.train.device_setter import replica_device_setter
from tfc.version import __version__

# what each role's program is in the task's tfc_model (see runtime/include/tfc_dist.h)
_FIELDS = {"init": "init", "train": "train", "apply": "train", "serve": "predict"}


def _task_descriptor(plan: DistributedPlan, task: TaskPlan, is_worker: bool) -> str:
    arrays = DescriptorArrays()
    state_items = state_specs(arrays, task.state)
    programs = {
        _FIELDS[role]: program_descriptor(arrays, p) for role, p in task.programs.items()
    }  # fmt: skip
    state = arrays.add("state", "tfc_state_spec", state_items)
    hparams, labels = [], "-1"
    if is_worker:
        for name, (index, default) in plan.hyperparameters.items():
            hparams.append(f"{{{c_string(name)}, {index}, {default!r}}}")
        names = task.programs["train"].input_names
        labels = str(names.index("labels")) if "labels" in names else "-1"
    fields = {
        "name": c_string(task.name),
        "batch": str(plan.batch),
        "n_state": str(len(task.state)),
        "state": state,
        **{f: programs.get(f, "NULL") for f in ("init", "train", "predict")},
        "predict_one": "NULL",
        "global_step": str(task.global_step),
        "train_features": "0",
        "train_labels": labels,
        "train_loss": "0",
        "n_hyperparameters": str(len(hparams)),
        "hyperparameters": arrays.add("hyperparameters", "tfc_hyperparameter", hparams),
        "predict_features": "0",
        "predict_classes": "-1",
        "predict_argmax": "0",
        "label_classes": str(plan.signatures.train.label_classes) if is_worker else "0",
    }
    return get_template("c/model.c.j2").render(
        version=__version__,
        name=task.name,
        symbol=f"{task.name}_model",
        arrays=arrays.items,
        fields=list(fields.items()),
    )


def _tasks(plan: DistributedPlan) -> list[tuple[str, TaskPlan, bool]]:
    return [("worker", plan.worker, True)] + [(f"ps{k}", t, False) for k, t in enumerate(plan.ps)]


# runtime sources only distributed programs need (sockets, threads): not in runtime/src itself,
# which every native build compiles
RUNTIME_SUBDIRS = ("transport", "distributed")


def copy_dist_runtime(outdir: Path) -> None:
    """OUTDIR/runtime/src/{transport,distributed}: the transport and the driver, exactly."""
    root = runtime_dir() / "src"
    for sub in RUNTIME_SUBDIRS:
        wanted = {f.name: f for pattern in ("*.c", "*.h") for f in (root / sub).glob(pattern)}
        sync_dir(outdir / "runtime" / "src" / sub, wanted)


def dist_runtime_objects() -> list[str]:
    root = runtime_dir() / "src"
    return [
        f"obj/runtime/src/{sub}/{f.stem}.o"
        for sub in RUNTIME_SUBDIRS
        for f in sorted((root / sub).glob("*.c"))
    ]


def dist_objects(plan: DistributedPlan) -> list[str]:
    objects = ["obj/dist.o", *dist_runtime_objects()]
    for role, task, _ in _tasks(plan):
        objects.append(f"obj/model_{role}.o")
        objects += [f"obj/program_{p.role}.o" for p in task.programs.values()]
    return objects


def dist_sources(plan: DistributedPlan) -> dict[str, str]:
    """The generated C files by name."""
    files: dict[str, str] = {}
    prefixes, symbols = [], []
    for role, task, is_worker in _tasks(plan):
        for p in task.programs.values():
            files[p.filename] = p.source
            prefixes.append(p.lowered.prefix)
        files[f"model_{role}.c"] = _task_descriptor(plan, task, is_worker)
        symbols.append(f"{task.name}_model")
    arrays = DescriptorArrays()
    links = [
        f"{{{c_string(link.key)}, {link.src}, {link.src_index}, {link.dst}, {link.dst_index}}}"
        for link in plan.links
    ]
    ps_models = [f"&{t.name}_model" for t in plan.ps]
    fields = {
        "name": c_string(plan.name),
        "batch": str(plan.batch),
        "worker": f"&{plan.worker.name}_model",
        "n_ps": str(len(plan.ps)),
        "ps": arrays.add("ps", "tfc_model *const", ps_models),
        "n_links": str(len(links)),
        "links": arrays.add("links", "tfc_dist_link", links),
        "global_step_ps": str(plan.global_step_ps),
        "n_ps_hosts": str(len(plan.cluster.ps)),
        "ps_hosts": arrays.add("ps_hosts", "char *const", [c_string(h) for h in plan.cluster.ps]),
        "n_worker_hosts": str(len(plan.cluster.worker)),
        "worker_hosts": arrays.add(
            "worker_hosts", "char *const", [c_string(h) for h in plan.cluster.worker]
        ),
    }
    symbol = f"{plan.name}_dist"
    files["model.h"] = get_template("c/dist.h.j2").render(
        version=__version__,
        name=plan.name,
        guard=f"TFC_DIST_{plan.name.upper()}_H",
        prefixes=prefixes,
        models=symbols,
        symbol=symbol,
    )
    files["dist.c"] = get_template("c/dist.c.j2").render(
        version=__version__,
        name=plan.name,
        symbol=symbol,
        arrays=arrays.items,
        fields=list(fields.items()),
    )
    files["main_train.c"] = get_template("c/main.c.j2").render(
        version=__version__, name=plan.name, executable="train", driver="tfc_dist_main",
        symbol=symbol,
    )  # fmt: skip
    return files


def render_dist_makefile(plan: DistributedPlan, cflags: list[str], cuda: dict | None = None) -> str:
    """`cuda`: the worker's .cu program's compiler, flags and link libraries (a GPU worker), as
    tfc.aot.cuda_build.CudaToolchain.makefile_fields gives them; the ps programs stay C."""
    return get_template("c/Makefile.j2").render(
        **makefile_toolchain(cuda),
        version=__version__,
        name=plan.name,
        cflags=" ".join([*cflags, "-pthread"]),
        base_cflags=" ".join(BASE_CFLAGS),
        model_objects=" ".join(dist_objects(plan)),
        executables=[{"name": "train", "main": "obj/main_train.o"}],
        all_executables="train",
    )


def compile_distributed(
    model,
    outdir: str | os.PathLike,
    cluster: Cluster | ClusterSpec | str | os.PathLike,
    batch: int = 32,
    target: str = "host",
    *,
    name: str | None = None,
    cflags: list[str] | None = None,
    build: bool = True,
    options=None,
    cuda_arch: str | None = None,
    cuda_emulate: bool | None = None,
):
    """`tfc compile MODEL --cluster FILE`: the programs of every task role and one `train`
    executable that runs any task of the cluster (see runtime/src/tfc_dist_main.c). With
    `target` "cuda", or worker ops placed on /job:worker/device:GPU:0, the worker step is a CUDA
    program built as `tfc.compile` builds one (`cuda_arch`, `cuda_emulate`); `target` "cuda"
    means generic C flags for the ps programs."""
    if target not in TARGET_FLAGS:
        raise ValueError(f"target must be one of {sorted(TARGET_FLAGS)}, got {target!r}")
    if isinstance(cluster, ClusterSpec):
        cluster = Cluster.from_cluster_spec(cluster)
    elif not isinstance(cluster, Cluster):
        cluster = Cluster.load(cluster)
    default_name, fn = load_signatures_function(model)
    name = c_identifier(name or default_name)

    def placed():
        setter = replica_device_setter(ps_tasks=len(cluster.ps), worker_device="/job:worker")
        with device(setter):
            return fn()

    passes = (options or CompileOptions()).pipeline()
    sigs = build_signatures(name, placed)
    plan = plan_distributed(sigs, int(batch), cluster, passes, worker_gpu=target == "cuda")
    if cuda_emulate and not plan.worker_on_gpu:
        raise ValueError("CUDA device emulation needs a GPU worker (target 'cuda')")
    cuda = None
    if plan.worker_on_gpu:
        from tfc.aot.cuda_build import cuda_toolchain

        cuda = cuda_toolchain(cuda_arch, cuda_emulate)
    opt = list(cflags) if cflags is not None else list(TARGET_FLAGS[target])
    return write_distributed(plan, outdir, opt, cuda, build)


def write_distributed(
    plan: DistributedPlan, outdir: str | os.PathLike, opt: list[str], cuda=None, build: bool = True
) -> CompiledModel:
    """Write the sources of `plan` into `outdir` and (with `build`) build its `train`
    executable with C flags `opt`; `cuda`: the GPU worker's toolchain."""
    outdir = Path(outdir)
    outdir.mkdir(parents=True, exist_ok=True)
    files = dist_sources(plan)
    for stale in outdir.glob("program_*.c*"):  # the worker of another target (make takes .c first)
        if stale.name not in files:
            stale.unlink()
    for filename, text in files.items():
        write_if_changed(outdir / filename, text)
    make_cuda = cuda.makefile_fields() if cuda else None
    write_if_changed(outdir / "Makefile", render_dist_makefile(plan, opt, make_cuda))
    copy_runtime(outdir)
    copy_dist_runtime(outdir)
    built = {}
    if build:
        cuda_objects = {"obj/program_worker.o"} if cuda else set()
        built = build_executables(
            outdir, ["train"], dist_objects(plan), [*opt, "-pthread", "-Werror"], cuda=cuda,
            cuda_objects=cuda_objects,
        )  # fmt: skip
    return CompiledModel(outdir, plan, built, cuda is not None and cuda.emulated)
