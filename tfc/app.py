"""`tf.app`: TF1's program entry point, `tf.app.run`, and `tf.app.flags` (tfc/flags.py)."""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from typing import Any, NoReturn

import tfc.flags as flags

__all__ = ["flags", "run"]


def run(
    main: Callable[[list[str]], Any] | None = None, argv: Sequence[str] | None = None
) -> NoReturn:
    """`tf.app.run`: parse the command line (`argv`, else sys.argv) into tf.flags.FLAGS, call
    `main` (else the `main` of the __main__ module) with the arguments the flags left, and exit
    with what it returns, as TF1 does (through absl.app.run). Flags that no DEFINE_* declared
    are left in main's arguments rather than refused. `--help` prints the flags and exits."""
    if main is None:
        main = getattr(sys.modules["__main__"], "main", None)
        if main is None:
            raise AttributeError("tf.app.run() needs a `main` function in the __main__ module")
    args = list(sys.argv if argv is None else argv)
    if any(a in ("--help", "-help", "-h", "--helpshort", "--helpfull") for a in args[1:]):
        print(f"usage: {args[0] if args else 'program'} [flags]\n\n{flags.FLAGS.help_text()}")
        sys.exit(0)
    remaining = flags.FLAGS(args, known_only=True)
    sys.exit(main(remaining))
