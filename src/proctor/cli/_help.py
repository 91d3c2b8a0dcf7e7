"""The help every command ends with: real examples and what each exit code means.

Each command module builds its `EPILOG` with `epilog(...)`; `cli/__init__.py` registers it with the
command. `tests/cli/test_help.py` walks every registered command and checks that its help has both
sections, shows every environment variable name whole at 80 columns, and that its `--json` parses.

Typer prints an epilog with Rich markup, keeping single line breaks: one example or exit code a line.
"""

from __future__ import annotations

from collections.abc import Sequence

__all__ = [
    "JSON_HELP",
    "PANEL_GATES",
    "PANEL_JUDGE",
    "PANEL_JUDGES",
    "PANEL_LIMITS",
    "PANEL_LOGGING",
    "PANEL_OUTPUT",
    "PANEL_RUN",
    "PANEL_STATS",
    "PANEL_TARGET",
    "PANEL_VERDICT",
    "epilog",
]

JSON_HELP = "Print the result as JSON on stdout (nothing else there)."
"""The one wording of `--json` on every command that has it."""

# Option groups (Typer's `rich_help_panel`), in the order a reader needs them.
PANEL_TARGET = "Agent under test"
PANEL_RUN = "Trials, limits and resuming"
PANEL_JUDGE = "Judging and cost"
PANEL_OUTPUT = "Output"
PANEL_JUDGES = "Judges"
PANEL_VERDICT = "Verdict"
PANEL_STATS = "Statistics"
PANEL_GATES = "Gates"
PANEL_LIMITS = "Limits"
PANEL_LOGGING = "Logging"


def _escape(text: str) -> str:
    """Rich markup reads `[...]` as a style: show the brackets of an example as they are."""
    return text.replace("[", r"\[")


def epilog(examples: Sequence[tuple[str, str]], exit_codes: Sequence[tuple[int, str]]) -> str:
    """The text after a command's options: its examples, then its exit codes.

    Args:
        examples: `(what it does, the command line)` pairs, 2 to 4; keep a command line under 76
            characters so that it does not wrap at 80 columns.
        exit_codes: `(code, meaning)` pairs, every code the command returns, smallest first.

    Returns:
        Rich markup for `typer`'s `epilog=`.
    """
    lines = ["[bold]Examples[/bold]"]
    for what, command in examples:
        lines += [f"  [dim]{_escape(what)}[/dim]", f"    {_escape(command)}"]
    lines += ["", "[bold]Exit codes[/bold]"]
    width = max(len(str(code)) for code, _ in exit_codes)
    lines += [f"  {code:>{width}}  {_escape(meaning)}" for code, meaning in exit_codes]
    return "\n".join(lines)
