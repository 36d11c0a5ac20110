"""`tfc compile`: a model file becomes standalone native `train` and `predict` executables.

The model-file convention
-------------------------
A model file is a Python file that defines ``signatures()``. tfc calls it with a fresh default
graph; it builds the model with the tfc API and returns a dict naming what the executables
feed and fetch::

    import tfc as tf

    def signatures():
        tf.set_random_seed(42)                       # the same initial weights every time
        x = tf.placeholder(tf.float32, [None, 4], name="features")
        y = tf.placeholder(tf.int32, [None], name="labels")
        lr = tf.placeholder_with_default(0.01, [], name="learning_rate")
        logits = tf.layers.dense(x, 3)
        loss = tf.reduce_mean(
            tf.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=logits))
        step = tf.train.get_or_create_global_step()
        train_op = tf.train.AdamOptimizer(lr).minimize(loss, global_step=step)
        return {
            "train": {
                "inputs": {"features": x, "labels": y},
                "loss": loss,
                "train_op": train_op,
                "hyperparameters": {"learning_rate": lr},
            },
            "predict": {
                "inputs": {"features": x},
                "outputs": {"probabilities": tf.nn.softmax(logits)},
            },
        }

- ``train`` (optional when ``predict`` is given): ``inputs["features"]`` and, for supervised
  models, ``inputs["labels"]`` are placeholders of shape ``[None, ...]`` (or ``[B, ...]``
  with B the compiled batch). A data row holds the flattened features, then the flattened
  labels: with ``[None, 4]`` features and ``[None]`` labels, a CSV row has 5 columns, the
  label last. ``loss`` is a float scalar; ``train_op`` the op one training step runs (it
  advances ``tf.train.get_global_step()`` if the model has one; `train --steps N` then trains
  until the global step reaches N). ``hyperparameters`` (optional) maps names to scalar
  ``tf.placeholder_with_default`` tensors with constant defaults: ``train --hparam NAME=X``
  overrides one, ``train --lr X`` the one named ``learning_rate``.
- ``predict`` (optional when ``train`` is given): ``inputs["features"]`` as above;
  ``outputs`` maps identifiers to tensors whose first dimension is the batch. ``label_output``
  (optional) names the output that `predict` compares with a label column, if the data has
  one: float ``[batch, classes]`` scores (their argmax is the class) or integer ``[batch]``
  class ids. It defaults to the output named probabilities, logits, class_ids or classes.

The variables' initial values come from their initializers (global and local variables),
with the same Philox streams as a Python session: with a graph seed, the native `train`
starts from the weights `tf.Session` would. Checkpoints hold the global variables under their
op names, as `tf.train.Saver` writes them.

What `compile` writes into OUTDIR
---------------------------------
``program_<role>.c`` (the init, train and predict programs; predict also at batch 1 for the
tail of the data), ``model.h``/``model.c`` (the descriptor the drivers run: state, programs,
the role of each input and output), ``main_train.c``/``main_predict.c``, ``runtime/`` (the C
runtime's headers and sources), a ``Makefile`` (``make`` rebuilds everything with only a C
compiler; it honours CC and CFLAGS), and the executables ``train`` and ``predict``.

``tfc compile --target embed`` writes a dependency-free library to embed instead: see
`tfc.aot.embed`.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from tfc.aot.build import (
    TARGET_FLAGS,
    CompiledModel,
    build_executables,
    copy_runtime,
    write_if_changed,
)
from tfc.aot.cluster_session import ClusterSession  # noqa: F401 (tf.train.Server runtime)
from tfc.aot.dist_sources import compile_distributed
from tfc.aot.programs import plan_model
from tfc.aot.signatures import (
    ModelError,
    build_signatures,
    c_identifier,
    load_signatures_function,
)
from tfc.aot.sources import model_objects, model_sources, render_makefile
from tfc.codegen.targets import CUDA, C
from tfc.compiler import CompileOptions

__all__ = ["compile", "CompiledModel", "ModelError"]


def compile(  # noqa: A001 - `tfc.compile`, as the command is `tfc compile`
    model: Any,
    outdir: str | os.PathLike,
    batch: int = 32,
    target: str = "host",
    *,
    name: str | None = None,
    cflags: list[str] | None = None,
    build: bool = True,
    options: CompileOptions | None = None,
    cluster: Any = None,
    cuda_arch: str | None = None,
    cuda_emulate: bool | None = None,
) -> CompiledModel:
    """Compile `model` into OUTDIR and build its `train` and `predict` executables.

    `model` is a model file's path, a module, or a `signatures` function (see the module
    docstring for the convention). `batch` is the batch the train and predict programs are
    compiled for; `target` "host" optimizes for this machine's CPU (-march=native), "generic"
    for any CPU of its architecture. `name` (default: the file's stem) prefixes every C symbol.
    `cflags` replace the target's optimization flags (the Makefile's CFLAGS default); tfc's own
    build adds -Werror. With `build=False` only the sources and the Makefile are written.
    `options` chooses the optimization passes (all by default). With `cluster` (a cluster JSON
    file, a tf.train.ClusterSpec or tfc.aot.distributed.Cluster), the model is compiled for
    distributed training instead: one `train` executable for every task (tfc/aot/distributed.py;
    with `target` "cuda" the workers' step runs on their GPU, the ps tasks' programs in C).
    `target` "cuda" compiles the programs to CUDA (nvcc; for the GPU present, or `cuda_arch`
    such as "sm_80,sm_90"): the executables run every step on the GPU, state copied in and out
    around each program run. `cuda_emulate` (default: whether TFC_CUDA=emulate) builds the same
    CUDA programs with the host C++ compiler under device emulation instead: the executables run
    every kernel on the CPU, need no GPU or nvcc, and so does the Makefile's build.
    """
    if cluster is not None:
        return compile_distributed(
            model, outdir, cluster, batch, target, name=name, cflags=cflags, build=build,
            options=options, cuda_arch=cuda_arch, cuda_emulate=cuda_emulate,
        )  # fmt: skip
    if cuda_emulate and target != "cuda":
        raise ValueError("CUDA device emulation needs target 'cuda'")
    if target not in TARGET_FLAGS:
        raise ValueError(f"target must be one of {sorted(TARGET_FLAGS)}, got {target!r}")
    default_name, fn = load_signatures_function(model, batch)
    name = c_identifier(name or default_name)
    passes = (options or CompileOptions()).pipeline()
    code_target = CUDA if target == "cuda" else C
    plan = plan_model(build_signatures(name, fn), int(batch), passes, code_target)
    cuda = None
    if target == "cuda":
        from tfc.aot.cuda_build import cuda_toolchain

        cuda = cuda_toolchain(cuda_arch, cuda_emulate)
    outdir = Path(outdir)
    outdir.mkdir(parents=True, exist_ok=True)
    executables = [e for e in ("train", "predict") if e in plan.programs]
    opt = list(cflags) if cflags is not None else list(TARGET_FLAGS[target])
    for stale in outdir.glob("program_*.c*"):  # another target's programs
        if stale.name not in {p.filename for p in plan.programs.values()}:
            stale.unlink()
    for filename, text in model_sources(plan, executables).items():
        write_if_changed(outdir / filename, text)
    make_cuda = cuda.makefile_fields() if cuda else None
    write_if_changed(outdir / "Makefile", render_makefile(plan, executables, opt, make_cuda))
    copy_runtime(outdir)
    built = {}
    if build:
        built = build_executables(
            outdir, executables, model_objects(plan), [*opt, "-Werror"], cuda=cuda
        )
    return CompiledModel(outdir, plan, built, cuda is not None and cuda.emulated)
