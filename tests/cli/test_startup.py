"""What `proctor` loads before it does anything: a structural check of start-up (no timing).

Each test runs the `proctor` entry point in a fresh interpreter and reads `sys.modules` at exit; the help
tests compare what it prints with what Typer prints for the whole application, in the same terminal. The
lists were chosen by measurement (`python -X importtime`, callgrind) on a one-case suite: a python
target and one `contains` check load no judge, scorer or state check, no other command's module, and
none of the web, template or help-rendering stacks.
"""

from __future__ import annotations

import fcntl
import gc
import importlib.metadata
import json
import os
import struct
import subprocess
import sys
import termios
from collections.abc import Callable
from pathlib import Path

import pytest
from typer.testing import CliRunner

import proctor.cli._run
import proctor.cli._schema
from proctor import __version__
from proctor.cli import _dotenv, app, main
from proctor.cli._app import COMMANDS, build_app
from proctor.cli._listing import RENDERED_BY

AGENT = """\
async def respond(messages):
    return messages[-1]["content"]
"""
SUITE = """\
name: one-case
trials: 1
target: python:startup_echo:respond
cases:
  - name: echoes
    turns:
      - content: "Echo case-0 please"
        assert:
          - {type: contains, value: "case-0"}
"""
# Run `main()` as the `proctor` script does, and write what was imported when the process exits.
PROBE = """\
import atexit, json, sys
def _dump(path=sys.argv[1]):
    with open(path, "w") as file:
        json.dump(sorted(sys.modules), file)
atexit.register(_dump)
sys.argv = ["proctor", *sys.argv[2:]]
from proctor.cli import main
main()
"""

NOT_FOR_A_DETERMINISTIC_RUN = (
    # checks the suite does not name (`contains` is `proctor.checks._text`)
    "proctor.checks._agent_scorers",
    "proctor.checks._arguments",
    "proctor.checks._expression",
    "proctor.checks._format",
    "proctor.checks._geval",
    "proctor.checks._judges",
    "proctor.checks._kotlin",
    "proctor.checks._prechecks",
    "proctor.checks._python",
    "proctor.checks._sandbox",
    "proctor.checks._state",
    "proctor.checks._timing",
    "proctor.checks._tool_checks",
    "proctor.checks._trajectory",
    # the model layer and simulated users: the suite names no judge and simulates no user
    "proctor.models",
    "proctor.run.arms",
    "proctor.run.services",
    "proctor.checks._transcript",
    # scenario scripts' driver, the simulator's module, a traced trial's notes, the results statistics
    "proctor.drivers.scenario",
    "proctor.drivers.simulator",
    "proctor._trace_records",
    "proctor.results._stats",
    "proctor.results._format",  # the results file's validators: for --resume and reading results files
    # the graph backends and their service: the suite asserts nothing on a graph; JUnit's XML writer
    "proctor.state._falkordb",
    "proctor.state._neo4j",
    "proctor.state._service",
    "xml.etree",
    # the YAML readers a clean suite file does not need (yaml-rs reads it), and parameters' expansion
    "yaml",
    "ruamel",
    "proctor.suite._libyaml",
    "proctor.suite._expander",
    "jinja2",
    # the other commands and the packages only they use
    "proctor.cli._calibrate",
    "proctor.cli._consume",
    "proctor.cli._produce",
    "proctor.cli._score",
    "proctor.cli._serve",
    "proctor.cli._view",
    "proctor.cluster",
    "proctor.recorded",
    "proctor.service",
    "proctor.tools",
    "proctor.view",
    # help rendering (Typer loads it for --help and usage errors only), web and protocol stacks
    "rich.markdown",
    "rich.traceback",
    "markdown_it",
    "pygments",
    "httpx",
    "aiohttp",
    "starlette",
    "uvicorn",
    "jsonschema",
    "simpleeval",
    "opentelemetry",
    "mcp",
    "redis",
    "dotenv",  # no .env anywhere above the working directory
)
# What Typer's help renderer imports and Proctor's help never uses (proctor.cli._render)
NOT_FOR_HELP = ("rich.markdown", "rich.traceback", "markdown_it", "pygments")
# What the list of commands (`proctor --help`, `-h`, no arguments) is printed without (proctor.cli._listing)
REPRODUCED = all(importlib.metadata.version(name) in versions for name, versions in RENDERED_BY.items())
"""Whether the installed Typer and rich are those `proctor.cli._listing` reproduces (else Typer prints the listing:
an upgrade of either never breaks `proctor --help`, it only makes it Typer's again until the listing is compared)."""
NOT_FOR_THE_LISTING = ("typer", "click", "rich", "pydantic", "logging", "pathlib", "proctor._redact")
# The variables Typer and rich read to choose the width and the colours of the help
TERMINAL_VARIABLES = (
    "NO_COLOR", "FORCE_COLOR", "PY_COLORS", "GITHUB_ACTIONS", "TTY_COMPATIBLE", "TERMINAL_WIDTH",
    "_TYPER_FORCE_DISABLE_TERMINAL", "TYPER_USE_RICH", "COLUMNS", "LINES", "TERM", "COLORTERM",
)  # fmt: skip
# The whole application's help, rendered by Typer as it is (every command's options built, nothing deferred)
FULL_HELP = """\
import sys
from proctor.cli import app
app(sys.argv[1:], prog_name="proctor")
"""


def _env(tmp_path: Path) -> dict[str, str]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), *sys.path])}
    for name in ("PROCTOR_TRUST", "PROCTOR_JUDGE_MODEL", *TERMINAL_VARIABLES):
        env.pop(name, None)
    return {**env, "COLUMNS": "100", "TERM": "xterm-256color"}


def _modules(
    tmp_path: Path, *arguments: str, cwd: Path, env: dict[str, str] | None = None
) -> tuple[subprocess.CompletedProcess[str], set[str]]:
    dump = tmp_path / "modules.json"
    done = subprocess.run(
        [sys.executable, "-c", PROBE, str(dump), *arguments],
        capture_output=True, text=True, cwd=cwd, env=env or _env(tmp_path), stdin=subprocess.DEVNULL, timeout=120,
        check=False,
    )  # fmt: skip
    return done, set(json.loads(dump.read_text()))


def _typers_help(
    tmp_path: Path, *arguments: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """The help Typer prints for `arguments` (the whole application, as it is), in a fresh process."""
    return subprocess.run(
        [sys.executable, "-c", FULL_HELP, *arguments],
        capture_output=True, text=True, cwd=tmp_path, env=env or _env(tmp_path), stdin=subprocess.DEVNULL,
        timeout=120, check=False,
    )  # fmt: skip


def _loaded(modules: set[str], names: tuple[str, ...]) -> set[str]:
    return {m for m in modules if any(m == name or m.startswith(name + ".") for name in names)}


@pytest.fixture(scope="module")
def one_case_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, subprocess.CompletedProcess[str], set[str]]:
    tmp_path = tmp_path_factory.mktemp("startup")
    (tmp_path / "startup_echo.py").write_text(AGENT)
    suites = tmp_path / "suites"
    suites.mkdir()
    (suites / "suite.yaml").write_text(SUITE)
    work = tmp_path / "work"
    work.mkdir()
    done, modules = _modules(
        tmp_path, "run", str(suites), "--trust", "--ci", "--results-dir", "results", "--output", "results.json",
        cwd=work,
    )  # fmt: skip
    return work, done, modules


def test_a_one_case_deterministic_run_loads_only_what_it_uses(
    one_case_run: tuple[Path, subprocess.CompletedProcess[str], set[str]],
) -> None:
    work, done, modules = one_case_run
    assert done.returncode == 0, done.stderr
    summary = json.loads(done.stdout)
    assert (summary["summary"]["passed"], summary["summary"]["checks"]["passed"]) == (1, 1)
    assert json.loads((work / "results.json").read_text())["cases"][0]["status"] == "passed"
    assert "proctor.checks._text" in modules  # the check it ran: loaded when the suite named it
    loaded = sorted(
        m for m in modules if any(m == name or m.startswith(name + ".") for name in NOT_FOR_A_DETERMINISTIC_RUN)
    )
    assert loaded == []


def test_version_is_answered_before_typer_loads(tmp_path: Path) -> None:
    done, modules = _modules(tmp_path, "--version", cwd=tmp_path)
    assert (done.returncode, done.stdout, done.stderr) == (0, f"proctor {__version__}\n", "")
    assert not {m for m in modules if m.split(".")[0] in ("typer", "click", "rich", "pydantic", "dotenv")}
    eager = CliRunner().invoke(app, ["--version"])  # Typer's own `--version` says the same
    assert (eager.exit_code, eager.output) == (0, done.stdout)


def test_a_command_builds_only_itself(tmp_path: Path) -> None:
    done, modules = _modules(tmp_path, "schema", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["title"] == "Proctor suite"
    commands = {name for name in COMMANDS if f"proctor.cli._{name}" in modules}
    assert commands == {"schema"}


@pytest.mark.parametrize("command", COMMANDS)
def test_a_command_alone_has_the_help_it_has_among_all(command: str) -> None:
    runner = CliRunner()
    alone = runner.invoke(build_app([command]), [command, "--help"], terminal_width=100)
    among_all = runner.invoke(app, [command, "--help"], terminal_width=100)
    assert alone.exit_code == among_all.exit_code == 0
    assert alone.output == among_all.output


@pytest.mark.parametrize("arguments", [["--help"], ["-h"], [], ["run", "--help"], ["score", "-h"]])
def test_help_is_typers_own_without_the_markdown_and_traceback_renderers(tmp_path: Path, arguments: list[str]) -> None:
    done, modules = _modules(tmp_path, *arguments, cwd=tmp_path)
    full = _typers_help(tmp_path, *arguments)
    assert "Usage: proctor" in done.stdout + done.stderr
    assert (done.returncode, done.stdout, done.stderr) == (full.returncode, full.stdout, full.stderr)
    assert not _loaded(modules, NOT_FOR_HELP)
    if arguments in ([], ["--help"], ["-h"]) and REPRODUCED:  # the list of commands: no Typer, no command module
        assert not _loaded(modules, NOT_FOR_THE_LISTING)
        assert {m for m in modules if m.startswith("proctor.")} == {
            "proctor.cli",
            "proctor.cli._dotenv",
            "proctor.cli._listing",
        }


@pytest.mark.parametrize(
    ("variables", "arguments", "without_typer"),
    [
        ({"COLUMNS": "60"}, ["--help"], True),
        ({"COLUMNS": "200"}, ["-h"], True),
        ({"COLUMNS": "not a number"}, ["--help"], True),  # no terminal either: 80 columns
        ({"COLUMNS": "80", "FORCE_COLOR": "1"}, [], True),
        ({"COLUMNS": "60", "FORCE_COLOR": "1", "NO_COLOR": "1"}, ["--help"], True),
        ({"COLUMNS": "120", "PY_COLORS": "1", "TERM": "xterm"}, ["--help"], True),
        ({"COLUMNS": "80", "GITHUB_ACTIONS": "true", "COLORTERM": "truecolor"}, ["--help"], True),
        ({"COLUMNS": "80", "TTY_COMPATIBLE": "1", "NO_COLOR": "1"}, [], True),
        ({"COLUMNS": "80", "TTY_COMPATIBLE": "0", "FORCE_COLOR": "1"}, ["--help"], True),
        ({"COLUMNS": "80", "FORCE_COLOR": ""}, ["--help"], True),
        ({"COLUMNS": "80", "FORCE_COLOR": "1", "_TYPER_FORCE_DISABLE_TERMINAL": "1"}, ["--help"], True),
        ({"COLUMNS": "100", "TERMINAL_WIDTH": "70", "FORCE_COLOR": "1"}, ["--help"], True),
        # what Typer prints itself: narrower than the listing lays out, a dumb terminal, no UTF-8, no rich
        ({"COLUMNS": "44"}, [], False),
        ({"COLUMNS": "100", "TERMINAL_WIDTH": "30"}, ["--help"], False),
        ({"COLUMNS": "100", "TERM": "dumb", "FORCE_COLOR": "1"}, ["--help"], False),
        ({"COLUMNS": "80", "PYTHONIOENCODING": "latin-1"}, ["--help"], False),
        ({"COLUMNS": "80", "TYPER_USE_RICH": "0"}, [], False),
    ],
)
def test_the_listing_is_typers_in_every_terminal(
    tmp_path: Path, variables: dict[str, str], arguments: list[str], without_typer: bool
) -> None:
    env = {**_env(tmp_path), **variables}
    done, modules = _modules(tmp_path, *arguments, cwd=tmp_path, env=env)
    full = _typers_help(tmp_path, *arguments, env=env)
    assert "Usage: " in done.stdout + done.stderr  # the help, whatever its colours
    assert (done.returncode, done.stdout, done.stderr) == (full.returncode, full.stdout, full.stderr)
    assert ("typer" not in modules) is (without_typer and REPRODUCED)


@pytest.mark.parametrize(("columns", "variables"), [(100, {}), (72, {"NO_COLOR": "1"}), (30, {})])
def test_the_listing_on_a_terminal_is_typers(tmp_path: Path, columns: int, variables: dict[str, str]) -> None:
    env = {**_env(tmp_path), **variables}
    del env["COLUMNS"]  # the terminal's own width

    def on_a_terminal(command: list[str]) -> tuple[int, bytes]:
        controller, terminal = os.openpty()
        fcntl.ioctl(terminal, termios.TIOCSWINSZ, struct.pack("HHHH", 24, columns, 0, 0))
        process = subprocess.Popen(command, stdin=terminal, stdout=terminal, stderr=terminal, cwd=tmp_path, env=env)
        os.close(terminal)
        printed = b""
        while True:
            try:
                chunk = os.read(controller, 65536)
            except OSError:  # the terminal is closed once the process has ended
                break
            if not chunk:
                break
            printed += chunk
        os.close(controller)
        return process.wait(timeout=120), printed

    dump = tmp_path / "modules.json"
    ours = on_a_terminal([sys.executable, "-c", PROBE, str(dump), "--help"])
    typers = on_a_terminal([sys.executable, "-c", FULL_HELP, "--help"])
    assert ours == typers
    assert b"\x1b[1;36m" in ours[1] if not variables else b"\x1b[1m" in ours[1]
    assert ("typer" not in json.loads(dump.read_text())) is (columns >= 45 and REPRODUCED)


def test_with_other_typer_or_rich_versions_typer_prints_the_listing(tmp_path: Path) -> None:
    dump = tmp_path / "modules.json"
    versions = "{'typer': ('0.1',), 'rich': ('1.0',)}"
    other = f"import proctor.cli._listing as listing; listing.RENDERED_BY = {versions}\n{PROBE}"
    done = subprocess.run(
        [sys.executable, "-c", other, str(dump), "--help"],
        capture_output=True, text=True, cwd=tmp_path, env=_env(tmp_path), stdin=subprocess.DEVNULL, timeout=120,
        check=False,
    )  # fmt: skip
    full = _typers_help(tmp_path, "--help")
    assert (done.returncode, done.stdout, done.stderr) == (full.returncode, full.stdout, full.stderr)
    assert "typer" in json.loads(dump.read_text())


def test_the_listing_follows_the_dotenv_file(tmp_path: Path) -> None:
    (tmp_path / ".env").write_text("COLUMNS=64\nFORCE_COLOR=1\nNO_COLOR=1\n")
    env = _env(tmp_path)
    del env["COLUMNS"]
    done, modules = _modules(tmp_path, "--help", cwd=tmp_path, env=env)
    full = _typers_help(tmp_path, "--help", env={**env, "COLUMNS": "64", "FORCE_COLOR": "1", "NO_COLOR": "1"})
    assert (done.returncode, done.stdout, done.stderr) == (full.returncode, full.stdout, full.stderr)
    assert "\x1b[1;2m<" in done.stdout and ("typer" not in modules) is REPRODUCED


def test_a_closed_pipe_ends_the_listing_as_it_ends_typers(tmp_path: Path) -> None:
    def into_a_closed_pipe(command: list[str]) -> tuple[int, str]:
        reader, writer = os.pipe()
        os.close(reader)
        done = subprocess.run(
            command, stdout=writer, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True, cwd=tmp_path,
            env=_env(tmp_path), timeout=120, check=False,
        )  # fmt: skip
        os.close(writer)
        return done.returncode, done.stderr

    dump = tmp_path / "modules.json"
    ours = into_a_closed_pipe([sys.executable, "-c", PROBE, str(dump), "--help"])
    assert ours == into_a_closed_pipe([sys.executable, "-c", FULL_HELP, "--help"]) == (1, "")
    assert ("typer" not in json.loads(dump.read_text())) is REPRODUCED


def test_the_listing_under_another_program_name_is_typers(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "proctor", "--help"],
        capture_output=True, text=True, cwd=tmp_path, env=_env(tmp_path), stdin=subprocess.DEVNULL, timeout=120,
        check=False,
    )  # fmt: skip
    assert done.returncode == 0 and "Usage: python -m proctor [OPTIONS] COMMAND" in done.stdout


def test_the_help_renderers_stand_ins_are_the_real_classes_on_use(tmp_path: Path) -> None:
    probe = """\
import sys
from proctor.cli._render import import_help_renderer
import_help_renderer()
import typer.rich_utils as renderer
assert "rich.markdown" not in sys.modules and "rich.traceback" not in sys.modules
import rich.markdown, rich.traceback
assert isinstance(renderer.Markdown("*x*"), rich.markdown.Markdown)
assert renderer.Traceback.from_exception.__func__ is rich.traceback.Traceback.from_exception.__func__
assert renderer._make_rich_text(text="*x*", markup_mode="markdown").markup == "*x*"
print("ok")
"""
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, env=_env(tmp_path), timeout=120, check=False
    )
    assert (done.returncode, done.stdout, done.stderr) == (0, "ok\n", "")


def test_a_typer_that_wants_more_from_those_modules_gets_the_real_ones(tmp_path: Path) -> None:
    probe = """\
import sys
import proctor.cli._render as render
render.DEFERRED = {"rich.markdown": "NotWhatTyperImports", "rich.traceback": "Traceback"}
render.import_help_renderer()
import rich.markdown, typer.rich_utils
assert typer.rich_utils.Markdown is rich.markdown.Markdown and rich.markdown.__file__
print("ok")
"""
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, env=_env(tmp_path), timeout=120, check=False
    )
    assert (done.returncode, done.stdout, done.stderr) == (0, "ok\n", "")


def test_an_unknown_command_still_gets_every_command_to_choose_from(tmp_path: Path) -> None:
    done, modules = _modules(tmp_path, "runn", cwd=tmp_path)
    assert done.returncode == 2
    assert "No such command 'runn'" in done.stderr and "'run', 'runs'" in done.stderr
    assert {name for name in COMMANDS if f"proctor.cli._{name}" in modules} == set(COMMANDS)


# `main` reads `.env` with `_dotenv` before the listing (no Typer, no pathlib); `_common` has the commands' copy
DOTENV_LOADERS = pytest.mark.parametrize("load_dotenv_upwards", [_dotenv.load_dotenv_upwards])


@DOTENV_LOADERS
def test_dotenv_is_read_from_a_parent_directory_and_the_environment_wins(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, load_dotenv_upwards: Callable[[], None]
) -> None:
    (tmp_path / ".env").write_text("PROCTOR_TEST_FROM_DOTENV=file\nPROCTOR_TEST_SET_ALREADY=file\n")
    (tmp_path / "a" / "b").mkdir(parents=True)
    monkeypatch.chdir(tmp_path / "a" / "b")
    monkeypatch.setenv("PROCTOR_TEST_SET_ALREADY", "environment")
    monkeypatch.setenv("PROCTOR_TEST_FROM_DOTENV", "placeholder")  # restored (removed) after the test
    monkeypatch.delenv("PROCTOR_TEST_FROM_DOTENV")
    load_dotenv_upwards()
    assert os.environ["PROCTOR_TEST_FROM_DOTENV"] == "file"
    assert os.environ["PROCTOR_TEST_SET_ALREADY"] == "environment"


@DOTENV_LOADERS
def test_a_directory_named_dotenv_is_not_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, load_dotenv_upwards: Callable[[], None]
) -> None:
    (tmp_path / ".env").write_text("PROCTOR_TEST_FROM_DOTENV=outer\n")
    (tmp_path / "inner" / ".env").mkdir(parents=True)  # not a file: the search goes on upwards
    monkeypatch.chdir(tmp_path / "inner")
    monkeypatch.setenv("PROCTOR_TEST_FROM_DOTENV", "placeholder")
    monkeypatch.delenv("PROCTOR_TEST_FROM_DOTENV")
    load_dotenv_upwards()
    assert os.environ["PROCTOR_TEST_FROM_DOTENV"] == "outer"


@pytest.mark.parametrize(("command", "collecting"), [("schema", True), ("run", False)])
def test_garbage_collection_is_off_through_start_up_until_the_command_starts(
    command: str, collecting: bool, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.chdir(tmp_path)  # no `.env` read into this process
    seen: list[bool] = []
    module = proctor.cli._schema if command == "schema" else proctor.cli._run
    monkeypatch.setattr(module, f"{command}_command", lambda: seen.append(gc.isenabled()))
    monkeypatch.setattr(sys, "argv", ["proctor", command])
    try:
        with pytest.raises(SystemExit) as ended:
            main()
        # `run` turns collection back on itself once its suites are loaded; any other command starts with it on
        assert (ended.value.code, seen) == (0, [collecting])
        assert gc.isenabled()  # and `main` leaves it on, whatever happened
    finally:
        gc.enable()


def test_garbage_collection_is_back_on_after_a_usage_error(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "argv", ["proctor", "run", "--no-such-option"])
    try:
        with pytest.raises(SystemExit) as ended:
            main()
        assert ended.value.code == 2
        assert gc.isenabled()
    finally:
        gc.enable()
