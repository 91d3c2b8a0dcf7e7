"""`proctor --help` (also `proctor -h` and `proctor` alone): the list of commands, printed without Typer or rich.

Typer prints this listing through rich: importing the two is most of the ~0.15 s the listing took. The
text is fixed (the app's help, its two options, each command's summary) and only the terminal changes
it: its width, whether stdout is a terminal and whether colour is off. `print_listing` writes the very
characters Typer writes (the same padding, wrapping, box drawing and ANSI codes) in the environments it
reproduces: the Typer and rich versions of `RENDERED_BY`, a UTF-8 stdout off Windows, a width of at
least `MIN_WIDTH` columns, no Jupyter, no dumb terminal, no shell completion request. Anywhere else it
prints nothing and returns None, and Typer renders the listing. tests/cli/test_listing.py compares the
two at every width from `MIN_WIDTH` to 130 columns and wider ones, with and without a terminal and
colour, and tests/cli/test_startup.py the `proctor` script's in each kind of terminal: a change in
Typer's or rich's rendering, or another version of either installed, fails there.
"""

from __future__ import annotations

import builtins
import errno
import os
import sys

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing: the listing loads neither it nor re
if TYPE_CHECKING:
    from collections.abc import Callable, Iterator, Mapping

__all__ = ["COLOUR", "HELP", "MIN_WIDTH", "NO_COLOUR", "SUMMARIES", "VERSION_HELP", "listing", "print_listing"]

HELP = "Evaluate LLM agents by their behaviour: hold real conversations, check what they said and did."
"""The application's help: the paragraph under the usage line."""
VERSION_HELP = "Print the version and exit."
"""The help of the root `--version` option."""
SUMMARIES = {
    "run": "Run suites against an agent and report what it said and did.",
    "list": "List cases with their tags and trials, or the available check types.",
    "schema": "Print the JSON Schema of suite files (for editors: `# yaml-language-server: $schema=...`).",
    "runs": "List the runs in the history, newest first.",
    "report": "Rebuild the comparison report (markdown and HTML) from the run history or named runs.",
    "compare": "Compare run B against run A: per-case changes, McNemar's exact test, a paired bootstrap on scores.",
    "rescore": "Re-run checks over a stored run's transcripts (no agent calls) and record a new, linked run.",
    "serve": "Serve the online evaluation API: prechecks, early exit, judges, confidence and verdict per event.",
    "consume": "Evaluate events from a Redis Stream; results go to a results stream, bad entries to a dead letter.",
    "produce": "Send events to a Redis Stream (field 'payload'), for `proctor consume`; prints one JSON line.",
    "calibrate": (
        "Compare judges' verdicts with human labels: agreement, Cohen's kappa, Kendall's tau, confusion matrix."
    ),
    "score": "Score recorded agent runs (AgentData rows, or IBM watsonx *.messages.json runs) offline.",
    "init": "Start a project: write proctor.yaml and a commented example suite (evals/example.yaml).",
    "view": "Browse the run history in a local web app: runs over time, what failed and why, transcripts, compare.",
}
"""Every command and its summary (the first paragraph of its docstring), in the order the listing shows them
(`proctor.cli._app.COMMANDS`)."""
PROG = "proctor"
"""The program name of the usage line: the listing is printed here only under this name."""
RENDERED_BY = {"typer": ("0.29.2",), "rich": ("15.0.0",)}
"""The Typer and rich versions whose listing this module reproduces (tests/cli/test_listing.py compares them):
with any other version installed, Typer prints the listing."""
MIN_WIDTH = 45
"""The narrowest terminal printed here: below it rich folds the usage line and squeezes the option columns."""

COLOUR = {
    "bold": "1",
    "usage": "1;33",
    "dim": "2",
    "option": "1;36",
    "switch": "1;32",
    "sep": "1;2;33",
    "type": "1;33",
    "command": "1;36",
}
"""The ANSI SGR parameters of the styles Typer gives the listing's parts (typer.rich_utils), on a terminal."""
NO_COLOUR = {
    "bold": "1",
    "usage": "1",
    "dim": "2",
    "option": "1",
    "switch": "1",
    "sep": "1;2",
    "type": "1",
    "command": "1",
}
"""The same with NO_COLOR set: rich keeps bold and dim and drops the colours."""


def print_listing(*, no_arguments: bool) -> int | None:
    """Print the list of commands as Typer would, if this environment is one reproduced here.

    Args:
        no_arguments: `proctor` was run without arguments (Typer then exits with 2, after `--help` with 0).

    Returns:
        The exit code, or None when nothing was printed and Typer must render the listing.
    """
    shape = _terminal_shape(os.environ)
    if shape is None:
        return None
    width, styles = shape
    # after `--help`, click echoes the (empty) help text Typer's renderer returns: one more newline
    text = listing(width, styles) + ("" if no_arguments else "\n")
    try:
        sys.stdout.write(text)
        sys.stdout.flush()
    except OSError as error:
        if error.errno != errno.EPIPE:
            raise
        # Typer's answer to a closed pipe: exit 1, and nothing more written (Python's flush at exit included)
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1
    return 2 if no_arguments else 0


def listing(width: int, styles: Mapping[str, str] | None) -> str:
    """The listing Typer prints on a terminal `width` columns wide.

    Args:
        width: Columns, at least `MIN_WIDTH`.
        styles: ANSI parameters by style name (`COLOUR`, `NO_COLOUR`), or None: no escape codes at all.

    Returns:
        The text, every line padded to `width` and ended by a newline.
    """
    paint = _painter(styles)
    usage = f"{PROG} [OPTIONS] COMMAND [ARGS]..."
    lines = [
        paint(" " * width, "bold"),
        paint(" ", "bold")
        + paint("Usage: ", "usage")
        + paint(usage, "bold")
        + paint(" " * (width - 9 - len(usage)), "bold")
        + paint(" ", "bold"),
        paint(" " * width, "bold"),
        *(f" {line} " for line in _wrap(HELP, width - 2)),
        " " * width,
        *_options_panel(width, paint),
        *_commands_panel(width, paint),
    ]
    return "\n".join(lines) + "\n"


def _terminal_shape(environ: Mapping[str, str]) -> tuple[int, Mapping[str, str] | None] | None:
    """The width and the styles Typer's rich console would print the listing with, or None if not reproduced here.

    Typer's console (typer.rich_utils._get_rich_console) is rich's `Console` with `force_terminal` set by
    GITHUB_ACTIONS, FORCE_COLOR or PY_COLORS (and unset by _TYPER_FORCE_DISABLE_TERMINAL) and `width` by
    TERMINAL_WIDTH; rich reads the rest (rich.console.Console: is_terminal, size, no_color, encoding).
    """
    stdout = sys.stdout
    if (
        sys.platform == "win32"
        or stdout is None
        or hasattr(builtins, "get_ipython")  # rich's Jupyter detection
        or f"_{PROG.upper()}_COMPLETE" in environ  # a shell completion request, which Typer answers
        or "TYPER_USE_RICH" in environ  # Typer without rich prints click's plain help
        or _detect_program_name() != PROG
        or not all(_installed(package, versions) for package, versions in RENDERED_BY.items())
        or not (getattr(stdout, "encoding", None) or "utf-8").lower().startswith("utf")  # rich boxes in ASCII
    ):
        return None
    terminal = _is_terminal(environ, stdout)
    if terminal and environ.get("TERM", "").lower() in ("dumb", "unknown"):
        return None
    width = _width(environ)
    if width is None or width < MIN_WIDTH:
        return None
    if not terminal:
        return width, None
    return width, NO_COLOUR if environ.get("NO_COLOR", "") != "" else COLOUR


def _is_terminal(environ: Mapping[str, str], stdout: object) -> bool:
    """Whether stdout is a terminal to rich (`Console.is_terminal`), after Typer's `force_terminal`."""
    if environ.get("_TYPER_FORCE_DISABLE_TERMINAL"):
        return False
    if environ.get("GITHUB_ACTIONS") or environ.get("FORCE_COLOR") or environ.get("PY_COLORS"):
        return True
    if getattr(sys.stdin, "__module__", "").startswith("idlelib"):
        return False
    compatible = environ.get("TTY_COMPATIBLE", "")
    if compatible in ("0", "1"):
        return compatible == "1"
    if environ.get("FORCE_COLOR") is not None:  # set and empty here
        return False
    isatty = getattr(stdout, "isatty", None)
    try:
        return False if isatty is None else bool(isatty())
    except ValueError:
        return False


def _width(environ: Mapping[str, str]) -> int | None:
    """The console's width to rich (`Console.size`): TERMINAL_WIDTH, else COLUMNS, else the terminal's, else 80.

    None for a value read here differently from Typer and rich (a TERMINAL_WIDTH that is not ASCII digits
    is int()'s to parse, a COLUMNS of non-ASCII digits fails there): they handle it.
    """
    maximum = environ.get("TERMINAL_WIDTH")  # Typer's MAX_WIDTH, the console's width when set
    if maximum:
        return int(maximum) if maximum.isascii() and maximum.isdigit() else None
    columns = environ.get("COLUMNS", "")
    if columns.isdigit():
        return int(columns) if columns.isascii() else None
    width = 0
    for default, stream in enumerate((sys.__stdin__, sys.__stdout__, sys.__stderr__)):
        try:
            descriptor = stream.fileno()  # type: ignore[union-attr]
        except Exception:  # rich's `_STD_STREAMS`: 0, 1, 2 when a stream has no descriptor
            descriptor = default
        try:
            width = os.get_terminal_size(descriptor).columns
        except (AttributeError, ValueError, OSError):
            continue
        break
    return width or 80


def _installed(package: str, versions: tuple[str, ...]) -> bool:
    """Whether `package`, where the import system would find it, is installed at one of `versions`.

    Read from the name of its `.dist-info` directory beside it (no importlib.metadata: it costs more than
    the listing); a package installed otherwise (an egg, a zip) counts as another version.
    """
    for entry in sys.path:
        directory = entry or os.curdir
        if os.path.isdir(os.path.join(directory, package)):
            return any(os.path.isdir(os.path.join(directory, f"{package}-{version}.dist-info")) for version in versions)
    return False


def _detect_program_name() -> str:
    """The program name click gives the usage line: the script's name ("" when run as `python -m`)."""
    main = sys.modules.get("__main__")
    if getattr(main, "__package__", None) in (None, ""):
        return os.path.basename(sys.argv[0])
    return ""


if TYPE_CHECKING:
    Paint = Callable[[str, str], str]
    """`paint(text, style)`: `text` within the escape codes of the named style."""


def _painter(styles: Mapping[str, str] | None) -> Paint:
    """The `Paint` of `styles` (None: text as it is); like rich, no escape codes around empty text."""

    def paint(text: str, style: str) -> str:
        if styles is None or not text:
            return text
        return f"\x1b[{styles[style]}m{text}\x1b[0m"

    return paint


def _options_panel(width: int, paint: Paint) -> list[str]:
    """The Options panel: `--version` and `--help`/`-h`, each a flag (`<bool>`) with its help."""
    kind = paint("<", "sep") + paint("bool", "type") + paint(">", "sep")
    rows = [("--version", "", VERSION_HELP), ("--help", "-h", "Show this message and exit.")]
    lines = [_top("Options", width, paint)]
    for long, short, help_text in rows:
        # the long name's first dash is a span of its own: rich's switch pattern also matches `-version`
        name = paint("-", "option") + paint(long[1:], "option")
        first, *more = _wrap(help_text, width - 31)
        head = f"{name}{' ' * (11 - len(long))}{paint(short, 'switch')}{' ' * (8 - len(short))}{kind}  {first}"
        lines.append(_row(head, paint))
        lines.extend(_row(f"{' ' * 27}{line}", paint) for line in more)
    lines.append(_bottom(width, paint))
    return lines


def _commands_panel(width: int, paint: Paint) -> list[str]:
    """The Commands panel: each command, in bold cyan, and its summary wrapped beside it."""
    name_width = max(len(name) for name in SUMMARIES)
    lines = [_top("Commands", width, paint)]
    for name, summary in SUMMARIES.items():
        first, *more = _wrap(summary, width - name_width - 6)
        lines.append(_row(f"{paint(name.ljust(name_width), 'command')}{paint(' ', 'command')} {first}", paint))
        blank = paint(" " * (name_width + 1), "command")
        lines.extend(_row(f"{blank} {line}", paint) for line in more)
    lines.append(_bottom(width, paint))
    return lines


def _top(title: str, width: int, paint: Paint) -> str:
    return (
        paint("╭─", "dim")
        + paint(f" {title} ", "dim")
        + paint("─" * (width - 6 - len(title)), "dim")
        + paint("─╮", "dim")
    )


def _row(content: str, paint: Paint) -> str:
    return f"{paint('│', 'dim')} {content} {paint('│', 'dim')}"


def _bottom(width: int, paint: Paint) -> str:
    return paint(f"╰{'─' * (width - 2)}╯", "dim")


def _wrap(text: str, width: int) -> list[str]:
    """`text` word-wrapped as rich wraps it (rich._wrap.divide_line) into lines padded to `width`.

    The text is ASCII, one cell a character; a word longer than `width` is folded across lines.
    """
    breaks: list[int] = []
    offset = 0
    for start, word in _words(text):
        length = len(word.rstrip())
        if width - offset >= length:
            offset += len(word)
        elif length > width:
            chunks = [word[index : index + width] for index in range(0, len(word), width)]
            for chunk in chunks[:-1]:
                if start:
                    breaks.append(start)
                start += len(chunk)
            if start:
                breaks.append(start)
            offset = len(chunks[-1])
        elif offset and start:
            breaks.append(start)
            offset = len(word)
    bounds = zip([0, *breaks], [*breaks, len(text)], strict=True)
    # what rich crops beyond `width` is the piece's trailing whitespace; the rest of the width is padding
    return [text[begin:end].ljust(width)[:width] for begin, end in bounds]


def _words(text: str) -> Iterator[tuple[int, str]]:
    r"""Each word of `text` and where it starts, as rich splits words (rich._wrap.words: `\s*\S+\s*` repeated).

    A word is the spaces before it (at the start of the text), its characters and the spaces after it.
    """
    position, end = 0, len(text)
    while True:
        index = position
        while index < end and text[index].isspace():
            index += 1
        if index == end:  # nothing but spaces left: no word
            return
        while index < end and not text[index].isspace():
            index += 1
        while index < end and text[index].isspace():
            index += 1
        yield position, text[position:index]
        position = index
