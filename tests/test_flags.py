"""tf.flags (tfc/flags.py) and tf.app.run (tfc/app.py): parsing as absl does, and the errors."""

import sys

import pytest

import tfc as tf
from tfc import flags


@pytest.fixture
def values():
    fv = flags.FlagValues()
    flags.DEFINE_string("name", "x", "a name", flag_values=fv)
    flags.DEFINE_integer("n", 3, "a count", lower_bound=0, flag_values=fv)
    flags.DEFINE_float("lr", 0.1, "a rate", flag_values=fv)
    flags.DEFINE_boolean("fast", False, "go fast", flag_values=fv)
    flags.DEFINE_list("layers", "a,b", "names", flag_values=fv)
    flags.DEFINE_enum("mode", "train", ["train", "eval"], "what to do", flag_values=fv)
    flags.DEFINE_multi_string("tag", [], "tags", flag_values=fv)
    return fv


def test_every_spelling_of_a_flag_is_parsed(values):
    argv = ["prog", "--name=y", "-n", "5", "pos1", "--nofast", "--lr", "1e-3", "--layers=",
            "--tag=a", "--tag", "b", "--mode=eval"]  # fmt: skip
    assert values(argv) == ["prog", "pos1"]
    assert values.name == "y" and values.n == 5 and values.lr == pytest.approx(1e-3)
    assert values.fast is False and values.layers == [] and values.tag == ["a", "b"]
    assert values.mode == "eval"
    values.unparse_flags()
    assert values(["p", "--n", "0x10", "--fast", "--layers", "a, b ,c", "-fast=false"]) == ["p"]
    assert values.n == 16 and values.layers == ["a", "b", "c"] and values.fast is False
    assert values.flag_values_dict()["name"] == "x"  # unparsed again: the default


def test_double_dash_ends_the_flags_and_known_only_keeps_unknown_ones(values):
    assert values(["p", "a", "--name=q", "--", "--name=z", "c"]) == ["p", "a", "--name=z", "c"]
    assert values.name == "q"
    values.unparse_flags()
    rest = values(["p", "--unknown=3", "--name=w", "--", "--n=1"], known_only=True)
    assert rest == ["p", "--unknown=3", "--", "--n=1"] and values.name == "w" and values.n == 3


@pytest.mark.parametrize(
    "argv, error, message",
    [
        (["p", "--n=abc"], flags.IllegalFlagValueError, "flag --n=abc: invalid literal"),
        (["p", "--n=-1"], flags.IllegalFlagValueError, "-1 is not a non-negative integer"),
        (["p", "--mode=x"], flags.IllegalFlagValueError, "value should be one of <train|eval>"),
        (["p", "--unknown"], flags.UnrecognizedFlagError, "Unknown command line flag 'unknown'"),
        (["p", "--fast=maybe"], flags.IllegalFlagValueError, "Non-boolean argument"),
        (["p", "--name"], flags.Error, "Missing value for flag --name"),
        (["p", "--nofast=1"], ValueError, "--nofast=1 does not take an argument"),
    ],
)
def test_bad_command_lines_fail_as_absl_says(values, argv, error, message):
    with pytest.raises(error, match=message.replace("|", r"\|")):
        values(argv)


def test_reading_before_parsing_and_defining_twice_are_errors(values):
    with pytest.raises(flags.UnparsedFlagAccessError, match="--name before flags were parsed"):
        values.name  # noqa: B018
    values.name = "set"  # assigning is allowed at any time
    values.mark_as_parsed()
    assert values.name == "set" and values["name"].value == "set" and "name" in values
    with pytest.raises(flags.DuplicateFlagError, match="'name' is defined twice"):
        flags.DEFINE_string("name", "x", "again", flag_values=values)
    with pytest.raises(AttributeError):
        values.undefined  # noqa: B018


def test_required_flags_and_validators(values):
    flags.DEFINE_string("out", None, "where", flag_values=values)
    flags.mark_flag_as_required("out", values)
    with pytest.raises(flags.IllegalFlagValueError, match="--out must have a value"):
        values(["p"])
    values.unparse_flags()
    flags.register_validator("n", lambda n: n % 2 == 1, "must be odd", values)
    with pytest.raises(flags.IllegalFlagValueError, match="flag --n: must be odd"):
        values(["p", "--out=o", "--n=4"])
    values.unparse_flags()
    values(["p", "--out=o", "--n=5"])
    assert values.out == "o" and values.n == 5


def test_app_run_parses_the_flags_calls_main_and_exits_with_its_value(monkeypatch):
    assert tf.app.flags is tf.flags and tf.flags.FLAGS is flags.FLAGS
    fv = flags.FlagValues()
    flags.DEFINE_integer("steps", 10, "steps", flag_values=fv)
    monkeypatch.setattr(flags, "FLAGS", fv)
    seen = []

    def main(argv):
        seen.append((argv, fv.steps))
        return 3

    with pytest.raises(SystemExit) as exit_info:
        tf.app.run(main, argv=["prog", "--steps=7", "file.txt", "--other=1"])
    assert exit_info.value.code == 3
    assert seen == [(["prog", "file.txt", "--other=1"], 7)]
    module = sys.modules["__main__"]
    monkeypatch.setattr(module, "main", lambda argv: None, raising=False)
    with pytest.raises(SystemExit) as exit_info:
        tf.app.run(argv=["prog"])  # main found in __main__
    assert exit_info.value.code is None
