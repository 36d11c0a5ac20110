"""`tf.flags` (also `tf.app.flags`): command-line flags as TF1 programs define and read them.

TF1's tf.flags is absl.flags. This is a small implementation of the part programs use, parsing
as absl does: `--name=value`, `--name value`, `-name=value`; booleans as `--flag`, `--noflag`,
`--flag=true|false|t|f|1|0`; `--` ends the flags; an unknown flag is an error unless
`known_only` (then it stays among the arguments returned, as tf.app.run asks). Reading a flag
before the command line is parsed raises UnparsedFlagAccessError, as absl does; assigning one
is allowed at any time. Flag files (`--flagfile`) and key-flag bookkeeping are not provided.
"""

from __future__ import annotations

import csv
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any

__all__ = [
    "Error",
    "DuplicateFlagError",
    "IllegalFlagValueError",
    "UnrecognizedFlagError",
    "UnparsedFlagAccessError",
    "ValidationError",
    "Flag",
    "FlagValues",
    "FLAGS",
    "DEFINE_string",
    "DEFINE_integer",
    "DEFINE_float",
    "DEFINE_boolean",
    "DEFINE_bool",
    "DEFINE_list",
    "DEFINE_enum",
    "DEFINE_multi_string",
    "DEFINE_multi_integer",
    "DEFINE_multi_float",
    "mark_flag_as_required",
    "mark_flags_as_required",
    "register_validator",
]


class Error(Exception):
    """The base of the flag errors (absl's flags.Error)."""


class DuplicateFlagError(Error):
    pass


class IllegalFlagValueError(Error):
    pass


class UnrecognizedFlagError(Error):
    pass


class UnparsedFlagAccessError(Error):
    pass


class ValidationError(Error):
    pass


_TRUE = ("true", "t", "1")
_FALSE = ("false", "f", "0")


def _parse_bool(text: Any) -> bool:
    if isinstance(text, bool):
        return text
    if isinstance(text, int) and text in (0, 1):
        return bool(text)
    if isinstance(text, str) and text.lower() in _TRUE + _FALSE:
        return text.lower() in _TRUE
    raise ValueError(("Non-boolean argument to boolean flag", text))


def _parse_int(text: Any) -> int:
    if isinstance(text, int) and not isinstance(text, bool):
        return text
    if not isinstance(text, str):
        raise TypeError(f"Expect argument to be a string or int, found {type(text)}")
    body = text.strip().lower()
    base = 10
    digits = body.lstrip("+-")
    if digits.startswith("0x"):
        base = 16
    elif digits.startswith("0o"):
        base = 8
    elif digits.startswith("0b"):
        base = 2
    return int(body, base)


def _parse_float(text: Any) -> float:
    if isinstance(text, (int, float)) and not isinstance(text, bool):
        return float(text)
    if not isinstance(text, str):
        raise TypeError(f"Expect argument to be a string or float, found {type(text)}")
    return float(text)


def _parse_list(text: Any) -> list[str]:
    if isinstance(text, (list, tuple)):
        return [str(item) for item in text]
    if not text:
        return []
    return [item.strip() for item in next(csv.reader([text], strict=True))]


class Flag:
    """One flag: its name, help, default, parser and current value."""

    def __init__(
        self,
        name: str,
        default: Any,
        help_text: str,
        parse: Callable[[Any], Any],
        kind: str,
        boolean: bool = False,
        multi: bool = False,
        check: Callable[[Any], str | None] | None = None,
    ) -> None:
        self.name = name
        self.help = help_text
        self.parse_value = parse
        self.kind = kind
        self.boolean = boolean
        self.multi = multi
        self.check = check
        self.present = 0  # times given on the command line
        self.default = None if default is None else self._convert(default, str(default))
        self.value = self.default

    def _convert(self, raw: Any, shown: str) -> Any:
        try:
            if self.multi:
                items = raw if isinstance(raw, (list, tuple)) else [raw]
                value: Any = [self.parse_value(item) for item in items]
            else:
                value = self.parse_value(raw)
        except (TypeError, ValueError) as e:
            raise IllegalFlagValueError(f"flag --{self.name}={shown}: {e}") from None
        problem = self.check(value) if self.check is not None else None
        if problem is not None:
            raise IllegalFlagValueError(f"flag --{self.name}={shown}: {problem}")
        return value

    def parse(self, raw: Any) -> None:
        """A command-line value; a repeated multi flag collects every value."""
        value = self._convert(raw, str(raw))
        if self.multi and self.present:
            self.value = [*self.value, *value]
        else:
            self.value = value
        self.present += 1

    def unparse(self) -> None:
        self.value = self.default
        self.present = 0


class FlagValues:
    """The registry of flags (absl's FlagValues); `FLAGS` is the one programs use."""

    def __init__(self) -> None:
        object.__setattr__(self, "_flags", {})
        object.__setattr__(self, "_parsed", False)
        object.__setattr__(self, "_validators", [])

    # -- defining ------------------------------------------------------------------------------
    def define(self, flag: Flag) -> Flag:
        if flag.name in self._flags:
            raise DuplicateFlagError(
                f"The flag '{flag.name}' is defined twice. Description from first occurrence: "
                f"{self._flags[flag.name].help}"
            )
        self._flags[flag.name] = flag
        return flag

    # -- reading and writing values --------------------------------------------------------------
    def __getattr__(self, name: str) -> Any:
        flags = self.__dict__.get("_flags", {})
        if name not in flags:
            raise AttributeError(name)
        if not self._parsed:
            raise UnparsedFlagAccessError(
                f"Trying to access flag --{name} before flags were parsed."
            )
        return flags[name].value

    def __setattr__(self, name: str, value: Any) -> None:
        if name not in self._flags:
            raise AttributeError(f"Unknown flag {name!r}: define it before setting it")
        self._flags[name].value = value

    def __getitem__(self, name: str) -> Flag:
        return self._flags[name]

    def __contains__(self, name: object) -> bool:
        return name in self._flags

    def __iter__(self) -> Iterator[str]:
        return iter(list(self._flags))

    def __len__(self) -> int:
        return len(self._flags)

    def is_parsed(self) -> bool:
        return self._parsed

    def mark_as_parsed(self) -> None:
        object.__setattr__(self, "_parsed", True)

    def unparse_flags(self) -> None:
        for flag in self._flags.values():
            flag.unparse()
        object.__setattr__(self, "_parsed", False)

    def set_default(self, name: str, value: Any) -> None:
        flag = self._flags[name]
        flag.default = flag._convert(value, str(value))
        if not flag.present:
            flag.value = flag.default

    def flag_values_dict(self) -> dict[str, Any]:
        return {name: flag.value for name, flag in self._flags.items()}

    def get_flag_value(self, name: str, default: Any) -> Any:
        flag = self._flags.get(name)
        return default if flag is None else flag.value

    def __call__(self, argv: Sequence[str], known_only: bool = False) -> list[str]:
        """Parse argv[1:]: set the flags it names and return [argv[0]] + what it left (the
        positional arguments, and with known_only the flags not defined here)."""
        if isinstance(argv, str):
            raise TypeError("argv should be a tuple/list of strings, not bytes or string.")
        if not argv:
            raise ValueError("argv cannot be an empty list, and must contain the program name")
        args = list(argv[1:])
        rest: list[str] = []
        i = 0
        while i < len(args):
            arg = args[i]
            i += 1
            if arg == "--":
                rest.extend(args[i - 1 :] if known_only else args[i:])
                break
            if not arg.startswith("-") or arg == "-":
                rest.append(arg)
                continue
            body = arg[2:] if arg.startswith("--") else arg[1:]
            name, has_value, value = body.partition("=")
            flag = self._flags.get(name)
            if flag is None and name.startswith("no") and name[2:] in self._flags:
                negated = self._flags[name[2:]]
                if negated.boolean:
                    if has_value:
                        raise ValueError(f"{arg} does not take an argument")
                    negated.parse(False)
                    continue
            if flag is None:
                if known_only:
                    rest.append(arg)
                    continue
                raise UnrecognizedFlagError(f"Unknown command line flag '{name}'")
            if flag.boolean and not has_value:
                flag.parse(True)
                continue
            if not has_value:
                if i >= len(args):
                    raise Error(f"Missing value for flag {arg}")
                value = args[i]
                i += 1
            flag.parse(value)
        self._check_required_and_validators()
        self.mark_as_parsed()
        return [argv[0], *rest]

    def _check_required_and_validators(self) -> None:
        for names, check, message in self._validators:
            values = {n: self._flags[n].value for n in names}
            if not check(values if len(names) > 1 else values[names[0]]):
                raise IllegalFlagValueError(message)

    def register_validator(
        self, names: Sequence[str], check: Callable[[Any], bool], message: str
    ) -> None:
        for name in names:
            if name not in self._flags:
                raise KeyError(f"Flag --{name} does not exist.")
        self._validators.append((list(names), check, message))

    def __str__(self) -> str:
        return self.help_text()

    def help_text(self) -> str:
        """A line per flag: its name, help and default."""
        lines = []
        for name in sorted(self._flags):
            flag = self._flags[name]
            lines.append(f"  --{name}: {flag.help}\n    (default: {flag.default!r})")
        return "\n".join(lines)


FLAGS = FlagValues()


def _bounds(lower: Any, upper: Any, what: str) -> Callable[[Any], str | None]:
    def check(value: Any) -> str | None:
        if value is None:
            return None
        if lower is not None and value < lower:
            return (
                f"{value} is not a non-negative {what}"
                if lower == 0 and upper is None
                else f"{value} is not {_range(lower, upper)}"
            )
        if upper is not None and value > upper:
            return f"{value} is not {_range(lower, upper)}"
        return None

    return check


def _range(lower: Any, upper: Any) -> str:
    if lower is None:
        return f"<= {upper}"
    if upper is None:
        return f">= {lower}"
    return f"in the range [{lower}, {upper}]"


def _define(flag: Flag, flag_values: FlagValues, required: bool) -> Flag:
    flag_values.define(flag)
    if required:
        mark_flag_as_required(flag.name, flag_values)
    return flag


def DEFINE_string(  # noqa: N802 - TF's name
    name: str,
    default: str | None,
    help: str,  # noqa: A002 - absl's argument name
    flag_values: FlagValues = FLAGS,
    required: bool = False,
    **args: Any,
) -> Flag:
    """A string flag."""
    return _define(Flag(name, default, help, str, "string"), flag_values, required)


def DEFINE_integer(  # noqa: N802
    name: str,
    default: int | None,
    help: str,  # noqa: A002
    lower_bound: int | None = None,
    upper_bound: int | None = None,
    flag_values: FlagValues = FLAGS,
    required: bool = False,
    **args: Any,
) -> Flag:
    """An int flag, optionally bounded (decimal, or 0x / 0o / 0b on the command line)."""
    check = _bounds(lower_bound, upper_bound, "integer")
    flag = Flag(name, default, help, _parse_int, "integer", check=check)
    return _define(flag, flag_values, required)


def DEFINE_float(  # noqa: N802
    name: str,
    default: float | None,
    help: str,  # noqa: A002
    lower_bound: float | None = None,
    upper_bound: float | None = None,
    flag_values: FlagValues = FLAGS,
    required: bool = False,
    **args: Any,
) -> Flag:
    """A float flag, optionally bounded."""
    check = _bounds(lower_bound, upper_bound, "float")
    flag = Flag(name, default, help, _parse_float, "float", check=check)
    return _define(flag, flag_values, required)


def DEFINE_boolean(  # noqa: N802
    name: str,
    default: Any,
    help: str,  # noqa: A002
    flag_values: FlagValues = FLAGS,
    required: bool = False,
    **args: Any,
) -> Flag:
    """A bool flag: `--name`, `--noname` or `--name=true|false`."""
    flag = Flag(name, default, help, _parse_bool, "bool", boolean=True)
    return _define(flag, flag_values, required)


DEFINE_bool = DEFINE_boolean


def DEFINE_list(  # noqa: N802
    name: str,
    default: Any,
    help: str,  # noqa: A002
    flag_values: FlagValues = FLAGS,
    required: bool = False,
    **args: Any,
) -> Flag:
    """A comma-separated list of strings (spaces around each item are dropped)."""
    return _define(Flag(name, default, help, _parse_list, "list"), flag_values, required)


def DEFINE_enum(  # noqa: N802
    name: str,
    default: str | None,
    enum_values: Iterable[str],
    help: str,  # noqa: A002
    flag_values: FlagValues = FLAGS,
    required: bool = False,
    case_sensitive: bool = True,
    **args: Any,
) -> Flag:
    """A string flag that must be one of `enum_values`."""
    values = list(enum_values)
    if not values:
        raise ValueError(f"enum_values cannot be empty, found '{values}'")

    def parse(text: Any) -> str:
        text = str(text)
        if case_sensitive:
            if text in values:
                return text
        else:
            for value in values:
                if value.upper() == text.upper():
                    return value
        raise ValueError(f"value should be one of <{'|'.join(values)}>")

    return _define(Flag(name, default, help, parse, "enum"), flag_values, required)


def DEFINE_multi_string(  # noqa: N802
    name: str,
    default: Any,
    help: str,  # noqa: A002
    flag_values: FlagValues = FLAGS,
    required: bool = False,
    **args: Any,
) -> Flag:
    """A string flag that may be given several times; its value is the list of them."""
    flag = Flag(name, default, help, str, "multi_string", multi=True)
    return _define(flag, flag_values, required)


def DEFINE_multi_integer(  # noqa: N802
    name: str,
    default: Any,
    help: str,  # noqa: A002
    lower_bound: int | None = None,
    upper_bound: int | None = None,
    flag_values: FlagValues = FLAGS,
    required: bool = False,
    **args: Any,
) -> Flag:
    """An int flag that may be given several times."""
    check = _bounds(lower_bound, upper_bound, "integer")
    flag = Flag(name, default, help, _parse_int, "multi_integer", multi=True)
    flag.check = lambda values: next(filter(None, map(check, values)), None)
    return _define(flag, flag_values, required)


def DEFINE_multi_float(  # noqa: N802
    name: str,
    default: Any,
    help: str,  # noqa: A002
    lower_bound: float | None = None,
    upper_bound: float | None = None,
    flag_values: FlagValues = FLAGS,
    required: bool = False,
    **args: Any,
) -> Flag:
    """A float flag that may be given several times."""
    check = _bounds(lower_bound, upper_bound, "float")
    flag = Flag(name, default, help, _parse_float, "multi_float", multi=True)
    flag.check = lambda values: next(filter(None, map(check, values)), None)
    return _define(flag, flag_values, required)


def register_validator(
    flag_name: str,
    checker: Callable[[Any], bool],
    message: str = "Flag validation failed",
    flag_values: FlagValues = FLAGS,
) -> None:
    """checker(value) must hold once the command line is parsed, else IllegalFlagValueError."""
    flag_values.register_validator([flag_name], checker, f"flag --{flag_name}: {message}")


def mark_flag_as_required(flag_name: str, flag_values: FlagValues = FLAGS) -> None:
    """The flag must have a value (other than None) once the command line is parsed."""
    flag_values.register_validator(
        [flag_name],
        lambda value: value is not None,
        f"flag --{flag_name} must have a value other than None.",
    )


def mark_flags_as_required(flag_names: Iterable[str], flag_values: FlagValues = FLAGS) -> None:
    for name in flag_names:
        mark_flag_as_required(name, flag_values)
