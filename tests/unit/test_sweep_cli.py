"""python -m sweep (and python -m bench): an option's prefix is an error, never a silent
abbreviation of a longer option."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from bench import cli as bench_cli
from sweep.__main__ import _parser, main


@pytest.mark.parametrize(
    "argv, prefix",
    [
        (["report", "SWEEP", "--no-plot"], "--no-plot"),
        (["report", "SWEEP", "--js"], "--js"),
        (["status", "ident", "--private", "x"], "--private"),
    ],
)
def test_option_prefixes_are_errors(tmp_path: Path, capsys, argv: list[str], prefix: str) -> None:
    argv = [str(tmp_path / "s") if a == "SWEEP" else a for a in argv]
    with pytest.raises(SystemExit) as e:
        main(argv)
    assert e.value.code == 2
    assert f"unrecognized arguments: {prefix}" in capsys.readouterr().err
    assert not (tmp_path / "s").exists()


def _all_parsers(parser: argparse.ArgumentParser) -> list[argparse.ArgumentParser]:
    out = [parser]
    for action in parser._actions:  # argparse keeps its subcommands here and nowhere public
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                out += _all_parsers(sub)
    return out


@pytest.mark.parametrize("make", [_parser, bench_cli._parser], ids=["sweep", "bench"])
def test_every_parser_and_subcommand_refuses_abbreviations(make) -> None:
    # add_parser does not inherit allow_abbrev from the parent: each subcommand needs its own
    parsers = _all_parsers(make())
    assert len(parsers) > 1
    assert [p.prog for p in parsers if p.allow_abbrev] == []
