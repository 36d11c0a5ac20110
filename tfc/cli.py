"""The `tfc` command line."""

from __future__ import annotations

import argparse
import sys

from tfc import __version__


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
    comp.add_argument("model", help="the model file (defines signatures())")
    comp.add_argument("-o", "--output", required=True, metavar="OUTDIR", help="output directory")
    comp.add_argument("--batch", type=int, default=32, help="the compiled batch (default 32)")
    comp.add_argument(
        "--target",
        choices=["host", "generic"],
        default="host",
        help="host: optimize for this CPU (-march=native); generic: any CPU of its architecture",
    )
    comp.add_argument("--name", help="the model's C name (default: the file's stem)")
    comp.add_argument(
        "--passes",
        metavar="LIST",
        help="the optimization passes to run, comma-separated (default: all; 'none' for none)",
    )
    comp.add_argument(
        "--no-build", action="store_true", help="write the sources and the Makefile only"
    )
    args = parser.parse_args(argv)
    if args.command == "compile":
        return _compile(args)
    if args.command == "cache":
        from tfc.backend_c import cache_dir

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


def _compile(args: argparse.Namespace) -> int:
    from tfc.aot import ModelError, compile
    from tfc.backend_c import CompileError
    from tfc.config import CompileOptions, parse_pass_list

    try:
        result = compile(
            args.model,
            args.output,
            batch=args.batch,
            target=args.target,
            name=args.name,
            build=not args.no_build,
            options=CompileOptions(passes=parse_pass_list(args.passes)),
        )
    except (ModelError, CompileError, FileNotFoundError, ValueError) as e:
        print(f"tfc compile: error: {e}", file=sys.stderr)
        return 1
    plan = result.plan
    print(f"compiled model '{plan.name}' (batch {plan.batch}) into {result.outdir}")
    for role, program in plan.programs.items():
        print(f"  {program.filename:24} {role}, arena {program.lowered.arena_bytes} bytes")
    for name, path in result.executables.items():
        print(f"  {name:24} {path.stat().st_size} bytes")
    return 0


if __name__ == "__main__":
    sys.exit(main())
