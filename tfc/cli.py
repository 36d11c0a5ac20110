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
    args = parser.parse_args(argv)
    if args.command == "cache":
        from tfc.backend_c import cache_dir

        path = cache_dir()
        if args.action == "dir":
            print(path)
        else:
            removed = 0
            for f in path.iterdir():
                if f.is_file() and f.suffix in (".so", ".c"):
                    f.unlink()
                    removed += 1
            print(f"removed {removed} files from {path}")
        return 0
    parser.print_help()
    return 0


if __name__ == "__main__":
    sys.exit(main())
