"""The `tfc` command line."""

from __future__ import annotations

import argparse
import sys

from tfc.version import __version__


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="tfc",
        description="tfc compiles TensorFlow-1-style graphs ahead of time to native code.",
    )
    parser.add_argument("--version", action="version", version=f"tfc {__version__}")
    sub = parser.add_subparsers(dest="command")
    cache = sub.add_parser("cache", help="show or clear the compiled-program cache")
    cache.add_argument("action", choices=["dir", "clear"])
    comp = sub.add_parser(
        "compile",
        help="compile a model file to standalone train and predict executables",
        description="Compile MODEL.py (a file defining signatures(); see `pydoc tfc.aot`) into "
        "OUTDIR: generated C, a Makefile, and the executables OUTDIR/train and OUTDIR/predict.",
    )
    comp.add_argument(
        "model",
        help="the model file (defines signatures()), a frozen TensorFlow GraphDef (.pb, "
        ".pbtxt; with --outputs), a TensorFlow Lite model (.tflite), an ONNX model (.onnx), or "
        "an exported model directory",
    )
    comp.add_argument("-o", "--output", required=True, metavar="OUTDIR", help="output directory")
    comp.add_argument(
        "--batch",
        type=int,
        help="the compiled batch (default 32; 1 for --target embed; the one an ONNX model's "
        "input fixes, if it does)",
    )
    comp.add_argument(
        "--target",
        choices=["host", "generic", "embed", "cuda"],
        default="host",
        help="host: optimize for this CPU (-march=native); generic: any CPU of its "
        "architecture; embed: a dependency-free C99 library (model.h, model.c) to embed; "
        "cuda: the programs run on an NVIDIA GPU (nvcc)",
    )
    comp.add_argument(
        "--cuda-arch",
        metavar="LIST",
        help="with --target cuda: GPU architectures, e.g. sm_80,sm_90 (default: the GPU present)",
    )
    comp.add_argument(
        "--cuda-emulate",
        action="store_true",
        default=None,
        help="with --target cuda: build the CUDA programs with the host C++ compiler under CUDA "
        "device emulation, every kernel run on the CPU (no GPU or nvcc needed; for testing); "
        "also selected by TFC_CUDA=emulate",
    )
    _add_embed_arguments(comp)
    _add_imported_model_arguments(comp)
    comp.add_argument("--name", help="the model's C name (default: the file's stem)")
    comp.add_argument(
        "--passes",
        metavar="LIST",
        help="the optimization passes to run, comma-separated (default: all; 'none' for none)",
    )
    comp.add_argument(
        "--no-build", action="store_true", help="write the sources and the Makefile only"
    )
    comp.add_argument(
        "--cluster",
        metavar="FILE",
        help='distributed training: a JSON ClusterSpec {"ps": [...], "worker": [...]}; '
        "OUTDIR/train then runs any task (train --job worker --task 1 ...); with --target "
        "cuda the workers compute on a GPU, the ps tasks in C",
    )
    _add_inspect_commands(sub)
    sub.add_parser(
        "launch", help="run a distributed model (tfc compile --cluster) as a local cluster",
        add_help=False,
    )  # fmt: skip
    args_list = sys.argv[1:] if argv is None else list(argv)
    if args_list[:1] == ["launch"]:  # its own options, and the tasks' after them
        from tfc.aot.launch import main as launch_main

        return launch_main(args_list[1:])
    args = parser.parse_args(argv)
    if args.command == "compile":
        return _compile(args)
    if args.command == "inspect":
        return _inspect(args)
    if args.command == "graph":
        return _graph(args)
    if args.command == "cache":
        from tfc.backend.cc import cache_dir

        path = cache_dir()
        if args.action == "dir":
            print(path)
        else:
            removed = 0
            # programs (.so and their .c) and the objects of `tfc compile` builds
            for f in [*path.iterdir(), *path.glob("objects/*.o")]:
                if f.is_file() and f.suffix in (".so", ".c", ".o"):
                    f.unlink()
                    removed += 1
            print(f"removed {removed} files from {path}")
        return 0
    parser.print_help()
    return 0


def _add_imported_model_arguments(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("imported models (MODEL.pb, MODEL.pbtxt, MODEL.tflite, MODEL.onnx)")
    g.add_argument(
        "--inputs",
        metavar="NAMES",
        help="the tensor fed as the features, e.g. x:0 (default: the GraphDef's placeholder, "
        "the TFLite or ONNX model's input; another tensor or ONNX value cuts the graph there)",
    )
    g.add_argument(
        "--outputs",
        metavar="NAMES",
        help="comma-separated tensors (ONNX values) to predict, e.g. probs:0 (required for a "
        "GraphDef; default: a TFLite or ONNX model's outputs)",
    )


def _model(args: argparse.Namespace) -> object:
    """The model argument; a GraphDef, TFLite or ONNX file cut at --inputs/--outputs when
    given."""
    if getattr(args, "inputs", None) is None and getattr(args, "outputs", None) is None:
        return args.model
    from tfc.aot.signatures import ModelError, imported_model

    names = [
        None if v is None else [n.strip() for n in v.split(",") if n.strip()]
        for v in (args.inputs, args.outputs)
    ]
    model = imported_model(args.model, inputs=names[0], outputs=names[1])
    if model is None:
        raise ModelError(
            "--inputs and --outputs name tensors of imported models (MODEL.pb, MODEL.tflite, "
            "MODEL.onnx) only"
        )
    return model


def _batch(args: argparse.Namespace, fallback: int) -> int:
    """--batch, or the batch an ONNX model's file fixes, or `fallback`."""
    if args.batch is not None:
        return args.batch
    from tfc.aot.signatures import default_batch

    return default_batch(_model(args), fallback)


def _add_embed_arguments(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("--target embed")
    g.add_argument(
        "--prefix", default="model_", help="starts every C symbol and macro (default model_)"
    )
    g.add_argument(
        "--inference-only", action="store_true", help="predict only: no state, no training code"
    )
    g.add_argument(
        "--weights",
        choices=["const", "external"],
        default="const",
        help="const: compiled into model.c; external: the caller passes weights.bin's bytes",
    )
    g.add_argument(
        "--arena-align", type=int, default=8, help="the arena's alignment in bytes (default 8)"
    )
    g.add_argument(
        "--checkpoint", help="take the weights from this checkpoint (prefix or .safetensors)"
    )
    g.add_argument(
        "--weights-dtype",
        choices=["float32", "float16", "bfloat16", "int8"],
        default="float32",
        help="how predict's float weights are stored (int8: per-channel scales); init expands "
        "them to float32 in the state block, and every computation is float32",
    )
    g.add_argument(
        "--max-batch",
        type=int,
        metavar="N",
        help="predict takes 1..N examples at run time (one at a time, in one example's arena)",
    )
    g.add_argument(
        "--no-check-finite",
        dest="check_finite",
        action="store_false",
        help="train_step does not check its loss, gradients and hyperparameters for NaN and "
        "infinity before it updates the state (faster, a smaller arena; a NaN input then "
        "poisons the weights)",
    )


def _compile_embed(args: argparse.Namespace) -> int:
    from tfc.aot import ModelError
    from tfc.aot.embed import compile_embed
    from tfc.compiler import CompileOptions, parse_pass_list

    try:
        m = compile_embed(
            _model(args),
            args.output,
            batch=_batch(args, 1),
            prefix=args.prefix,
            inference_only=args.inference_only,
            weights=args.weights,
            arena_align=args.arena_align,
            checkpoint=args.checkpoint,
            max_batch=args.max_batch,
            weights_dtype=args.weights_dtype,
            check_finite=args.check_finite,
            options=CompileOptions(passes=parse_pass_list(args.passes)),
        )
    except (ModelError, FileNotFoundError, ValueError, OSError) as e:
        print(f"tfc compile: error: {e}", file=sys.stderr)
        return 1
    kind = "train_step, predict" if m.trainable else "predict"
    print(f"wrote the embeddable library ({kind}, batch {m.batch}) to {m.outdir}/model.h, model.c")
    sizes = {"ARENA": m.arena_bytes, "STACK": m.stack_bytes, "STATE": m.state_bytes,
             "WEIGHTS": m.weights_bytes}  # fmt: skip
    print("  " + "  ".join(f"{m.macro}{k}_BYTES {v}" for k, v in sizes.items()))
    return 0


def _compile(args: argparse.Namespace) -> int:
    from tfc.aot import ModelError, compile
    from tfc.backend.cc import CompileError
    from tfc.compiler import CompileOptions, parse_pass_list

    if args.target == "embed":
        return _compile_embed(args)
    try:
        result = compile(
            _model(args),
            args.output,
            batch=_batch(args, 32),
            target=args.target,
            name=args.name,
            build=not args.no_build,
            options=CompileOptions(passes=parse_pass_list(args.passes)),
            cluster=args.cluster,
            cuda_arch=args.cuda_arch,
            cuda_emulate=args.cuda_emulate,
        )
    except (ModelError, CompileError, FileNotFoundError, ValueError) as e:
        print(f"tfc compile: error: {e}", file=sys.stderr)
        return 1
    plan = result.plan
    print(f"compiled model '{plan.name}' (batch {plan.batch}) into {result.outdir}")
    if result.cuda_emulated:
        print("  CUDA device emulation: the executables run every kernel on the CPU")
    for role, program in plan.programs.items():
        print(f"  {program.filename:24} {role}, arena {program.lowered.arena_bytes} bytes")
    for name, path in result.executables.items():
        print(f"  {name:24} {path.stat().st_size} bytes")
    return 0


def _add_model_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "model",
        help="the model file (defines signatures(); see `pydoc tfc.aot`), a GraphDef (.pb, "
        ".pbtxt; with --outputs), a TensorFlow Lite model (.tflite) or an ONNX model (.onnx)",
    )
    _add_imported_model_arguments(p)
    p.add_argument(
        "--signature",
        choices=["train", "predict"],
        help="the program to compile: the train step or predict (default: train if defined)",
    )
    p.add_argument(
        "--batch",
        type=int,
        help="the compiled batch (default 32; 1 for --target embed; the one an ONNX model's "
        "input fixes, if it does)",
    )
    p.add_argument(
        "--passes",
        metavar="LIST",
        help="the optimization passes to run, comma-separated (default: all; 'none' for none)",
    )


def _add_inspect_commands(sub: argparse._SubParsersAction) -> None:
    ins = sub.add_parser(
        "inspect",
        help="show what the passes do to a model: op counts, kernels, arena, FLOPs",
        description="Compile one signature of MODEL.py pass by pass and print, per pass, the "
        "op count before and after; the kernels of the lowered program; the arena next to its "
        "lower bound and its naive size; the form of each convolution on a GPU; the estimated "
        "FLOPs and bytes moved per step.",
    )
    _add_model_arguments(ins)
    ins.add_argument(
        "--target",
        choices=["embed"],
        help="embed: the embeddable library's footprint instead (code bytes per cross "
        "compiler found, weights, state, arena and its lower bound)",
    )
    ins.add_argument(
        "--dump-after",
        metavar="PASS",
        help="also write the graph after PASS in text form (a pass name, its position from 1, "
        "or 'none' for the graph before any pass)",
    )
    ins.add_argument(
        "-o", "--output", metavar="FILE", help="write the --dump-after text to FILE, not stdout"
    )
    ins.add_argument(
        "--allow-tf32",
        action="store_true",
        help="show which GPU convolutions CompileOptions(allow_tf32=True) puts on tensor cores",
    )
    ins.add_argument(
        "--mixed-precision",
        metavar="DTYPE",
        help="compile as CompileOptions(mixed_precision=DTYPE) does ('bfloat16': matrix "
        "products and convolutions multiply bfloat16 operands, sum in fp32)",
    )
    ins.add_argument(
        "--profile",
        action="store_true",
        help="also run the program's profile build (random features, labels 0) and print the "
        "time of each kernel, slowest first",
    )
    ins.add_argument("--runs", type=int, default=100, help="runs timed by --profile (default 100)")
    gra = sub.add_parser(
        "graph",
        help="draw a model's graph (.svg, .dot or .html) before or after any pass",
        description="Draw one signature's program graph with op types, shapes and devices; "
        "name scopes are collapsed into boxes (the tensors crossing a box's border are its "
        "edges) unless opened with --expand. SVG and HTML need Graphviz's `dot`.",
    )
    _add_model_arguments(gra)
    gra.add_argument(
        "-o", "--output", required=True, metavar="FILE", help="graph.svg, graph.dot or graph.html"
    )
    gra.add_argument(
        "--after",
        metavar="PASS",
        help="draw the graph after PASS (a name, a position from 1, or 'none' for the graph "
        "the model built); default: after the whole pipeline",
    )
    gra.add_argument(
        "--expand",
        metavar="SCOPE",
        action="append",
        default=[],
        help="open a name scope (e.g. gradients, gradients/hidden1; 'all' opens every one); "
        "repeatable",
    )


def _footprint(args: argparse.Namespace) -> int:
    from tfc.aot import ModelError
    from tfc.aot.footprint import measure
    from tfc.compiler import CompileOptions, parse_pass_list

    try:
        options = CompileOptions(passes=parse_pass_list(args.passes))
        batch = _batch(args, 1)
        print(measure(_model(args), batch, options).report(), end="")
    except (ModelError, FileNotFoundError, ValueError, OSError, RuntimeError) as e:
        print(f"tfc inspect: error: {e}", file=sys.stderr)
        return 1
    return 0


def _inspect(args: argparse.Namespace) -> int:
    from tfc.aot import ModelError
    from tfc.compiler import CompileOptions, parse_pass_list
    from tfc.tools.inspect import inspect_model, write_dump

    if args.target == "embed":
        return _footprint(args)
    try:
        args.batch = _batch(args, 32)
        options = CompileOptions(
            passes=parse_pass_list(args.passes),
            allow_tf32=args.allow_tf32,
            mixed_precision=args.mixed_precision,
        )
        result = inspect_model(_model(args), args.signature, args.batch, options, args.dump_after)
        dump = write_dump(result, args.output)
    except (ModelError, FileNotFoundError, ValueError, OSError) as e:
        print(f"tfc inspect: error: {e}", file=sys.stderr)
        return 1
    print(result.report(), end="")
    if dump is not None:
        print(dump, end="")
    elif args.output and result.dump is not None:
        print(f"graph after pass {result.dump_pass} written to {args.output}")
    if args.profile:
        from tfc.backend.cc import CompileError
        from tfc.tools.profile import profile_model

        try:
            measured = profile_model(
                _model(args), result.signature, args.batch, options, runs=args.runs
            )
        except (CompileError, ValueError, RuntimeError) as e:
            print(f"tfc inspect: error: --profile: {e}", file=sys.stderr)
            return 1
        print(measured.table(), end="")
    return 0


def _graph(args: argparse.Namespace) -> int:
    from tfc.aot import ModelError
    from tfc.compiler import CompileOptions, parse_pass_list
    from tfc.tools.graphviz import GraphvizNotFound, write_graph
    from tfc.tools.inspect import program_graph

    try:
        args.batch = _batch(args, 32)
        options = CompileOptions(passes=parse_pass_list(args.passes))
        name, signature, graph = program_graph(
            _model(args), args.signature, args.batch, options, args.after
        )
        when = {None: "after all passes", "none": "before any pass"}
        title = f"{name}: {signature}, batch {args.batch}, " + when.get(
            args.after, f"after pass {args.after}"
        )
        path = write_graph(graph, args.output, args.expand, title)
    except GraphvizNotFound as e:
        print(f"tfc graph: error: {e}", file=sys.stderr)
        return 2
    except (ModelError, FileNotFoundError, ValueError, OSError, RuntimeError) as e:
        print(f"tfc graph: error: {e}", file=sys.stderr)
        return 1
    print(f"wrote {path} ({len(graph.node_names())} ops)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
