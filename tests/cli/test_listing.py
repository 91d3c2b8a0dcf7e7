"""`proctor --help` printed without Typer (cli/_listing.py) is what Typer prints, character for character.

Typer's rendering is the reference: the whole application (`proctor.cli.app`, every command with its
options) asked for `--help` in this process, at each width and colour mode, against `listing` at the
same. How the environment picks the width and the mode, and what falls back to Typer, is tested on the
`proctor` entry point in tests/cli/test_startup.py.
"""

from __future__ import annotations

import contextlib
import importlib.metadata
import inspect
import io
import sys
from collections.abc import Mapping
from pathlib import Path

import pytest
import typer.rich_utils
from hypothesis import given
from hypothesis import strategies as st
from rich.console import Console
from rich.text import Text
from typer.main import get_command

from proctor.cli import app
from proctor.cli._app import COMMANDS
from proctor.cli._listing import (
    COLOUR,
    MIN_WIDTH,
    NO_COLOUR,
    RENDERED_BY,
    SUMMARIES,
    _installed,
    _wrap,
    listing,
    print_listing,
)

MODES: dict[str, Mapping[str, str] | None] = {"plain": None, "colour": COLOUR, "no colour": NO_COLOUR}
"""Not a terminal; a terminal; a terminal with NO_COLOR set."""
WRAPPING = range(MIN_WIDTH, 131)
"""Widths over which the summaries, the app's help and the options' help wrap differently."""
WIDE = (160, 200, 240, 1000)
REPRODUCED = all(importlib.metadata.version(name) in versions for name, versions in RENDERED_BY.items())
"""Whether the installed Typer and rich are those the listing reproduces (else Typer prints it)."""
TYPERS = get_command(app)
"""The application as Typer runs it, built once."""


def typers_listing(monkeypatch: pytest.MonkeyPatch, width: int, mode: str) -> str:
    """What Typer prints for `proctor --help` on a console `width` columns wide in `mode`."""
    monkeypatch.setenv("COLUMNS", str(width))
    monkeypatch.setenv("TERM", "xterm-256color")
    for name in ("NO_COLOR", "FORCE_COLOR", "TTY_COMPATIBLE", "JUPYTER_COLUMNS"):
        monkeypatch.delenv(name, raising=False)
    if mode == "no colour":
        monkeypatch.setenv("NO_COLOR", "1")
    # read by Typer when it loads (TERMINAL_WIDTH, FORCE_COLOR, GITHUB_ACTIONS, ...): set for this mode
    monkeypatch.setattr(typer.rich_utils, "MAX_WIDTH", None)
    monkeypatch.setattr(typer.rich_utils, "FORCE_TERMINAL", None if mode == "plain" else True)
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed), pytest.raises(SystemExit) as ended:
        TYPERS(["--help"], prog_name="proctor")
    assert ended.value.code == 0
    return printed.getvalue()


@pytest.mark.parametrize("mode", MODES)
def test_the_listing_is_typers_at_every_width(monkeypatch: pytest.MonkeyPatch, mode: str) -> None:
    if not REPRODUCED:  # another Typer or rich: the listing is never printed (the version test checks that)
        assert print_listing(no_arguments=False) is None
        return
    widths = [*WRAPPING, *WIDE] if mode == "plain" else [*range(MIN_WIDTH, 81), 100, 120, *WIDE]
    for width in widths:
        # `--help` ends with one more newline than the listing (click echoes Typer's empty help text)
        assert listing(width, MODES[mode]) + "\n" == typers_listing(monkeypatch, width, mode), f"{width} columns"


@pytest.mark.parametrize("mode", MODES)
def test_the_listing_is_padded_to_the_width_and_coloured_only_on_a_terminal(
    monkeypatch: pytest.MonkeyPatch, mode: str
) -> None:
    text = listing(80, MODES[mode])
    lines = text.removesuffix("\n").split("\n")
    assert {len(Text.from_ansi(line).plain) for line in lines} == {80}
    assert ("\x1b[" in text) is (mode != "plain")
    assert ("\x1b[1;36m" in text) is (mode == "colour")  # NO_COLOR keeps bold and dim, drops the colours


def test_every_command_is_listed_with_the_first_paragraph_of_its_help() -> None:
    commands = TYPERS.commands  # type: ignore[attr-defined]
    assert tuple(commands) == COMMANDS == tuple(SUMMARIES)
    for name, command in commands.items():
        assert inspect.cleandoc(command.help).split("\n\n")[0] == SUMMARIES[name], name


@given(
    words=st.lists(st.text(alphabet="abcdefghij-.", min_size=1, max_size=30), min_size=1, max_size=12),
    spaces=st.lists(st.sampled_from([" ", "  ", "   "]), min_size=13, max_size=13),
    width=st.integers(min_value=1, max_value=40),
)
def test_words_wrap_and_fold_as_rich_wraps_them(words: list[str], spaces: list[str], width: int) -> None:
    text = spaces[-1] + "".join(word + space for word, space in zip(words, spaces, strict=False)).rstrip()
    console = Console(width=width, color_system=None)
    lines = Text(text).wrap(console, width, justify="left", overflow="fold")
    assert _wrap(text, width) == [line.plain for line in lines]


def test_the_listing_is_used_only_with_the_typer_and_rich_it_reproduces() -> None:
    installed = {package: importlib.metadata.version(package) for package in RENDERED_BY}
    # another version: Typer prints the listing; when the tests above pass with it, add it to RENDERED_BY
    assert all(_installed(package, versions) for package, versions in RENDERED_BY.items()) is REPRODUCED, installed


def test_a_version_is_read_beside_the_package_the_import_system_finds(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    first, second = tmp_path / "first", tmp_path / "second"
    for directory, version in ((first, "1.0"), (second, "2.0")):
        (directory / "pkg").mkdir(parents=True)
        (directory / f"pkg-{version}.dist-info").mkdir()
    monkeypatch.setattr(sys, "path", [str(tmp_path / "nothing"), str(first), str(second)])
    assert _installed("pkg", ("1.0",))
    assert not _installed("pkg", ("2.0",))  # shadowed by the first
    assert not _installed("other", ("1.0",))
