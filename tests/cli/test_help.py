"""Every command's help and `--json`, walked from the registered commands (a new command is checked too).

Help: rendered at 80 and 160 columns, it has "Examples" and "Exit codes", shows every environment
variable name whole (not cut off with "…", not broken across lines) and every example command line on
one line. `--json`: every command that prints a result or a listing has it, and each is run for real on
a small project (suites against a loopback OpenAI-compatible agent, two recorded runs) with stdout
parsed as one JSON document. The commands whose output is always JSON are run and parsed too.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import click
import pytest
from typer.main import get_command
from typer.testing import CliRunner

from proctor.cli import app
from servers._serve import serve_app
from servers.chat import ChatServer, build_app
from service.conftest import RedisServer, redis_server  # noqa: F401  # the session's Redis, for consume/produce

runner = CliRunner()
COMMANDS: dict[str, click.Command] = dict(get_command(app).commands)  # type: ignore[attr-defined]

PASSING = """\
name: greets
trials: 2
tags: [smoke]
target: {url}
turns:
  - content: "hello there"
    assert:
      - {{type: contains, value: hello}}
"""
FAILING = """\
name: fails
trials: 1
target: {url}
turns:
  - content: "hello there"
    assert:
      - {{type: contains, value: goodbye}}
"""
ROW = {
    "agent_task": "find x",
    "agent_role": "searcher",
    "agent_response": "x",
    "tool_calls": [{"name": "search", "arguments": {"q": "x"}}],
    "expected_tool_call": {"name": "search", "arguments": {"q": "x"}},
}

JSON_OPTION = "--json"
ALWAYS_JSON = {"schema", "produce", "consume"}
"""Commands whose only stdout is JSON, with or without options: `--json` would change nothing."""
NO_RESULT = {"serve", "view", "init"}
"""Commands that print no result or listing: servers (`serve`, `view`; `serve --print-openapi` is JSON, tested
below) and `init`, which writes a file."""


def help_text(command: str, columns: int) -> str:
    result = runner.invoke(app, [command, "--help"], env={"COLUMNS": str(columns)})
    assert result.exit_code == 0, result.output
    return result.output


def env_vars(command: click.Command) -> list[str]:
    names: list[str] = []
    for param in command.params:
        envvar = getattr(param, "envvar", None)
        if envvar and not getattr(param, "hidden", False):
            names += [envvar] if isinstance(envvar, str) else list(envvar)
    return names


def example_lines(command: click.Command) -> list[str]:
    """The command lines of the epilog's examples, as a reader sees them (Rich escapes removed)."""
    examples = (command.epilog or "").partition("Exit codes")[0]
    return [line.strip().replace("\\[", "[") for line in examples.splitlines() if line.startswith("    ")]


def exit_codes(command: click.Command) -> dict[int, str]:
    section = (command.epilog or "").partition("Exit codes")[2]
    return {int(m[1]): m[2] for m in re.finditer(r"^\s+(\d+)  (.+)$", section, re.MULTILINE)}


@pytest.mark.parametrize("name", sorted(COMMANDS))
@pytest.mark.parametrize("columns", [80, 160])
def test_help_has_examples_exit_codes_and_whole_env_var_names(name: str, columns: int) -> None:
    command = COMMANDS[name]
    text = help_text(name, columns)
    assert "Examples" in text and "Exit codes" in text, f"{name}: epilog missing (see cli/_help.py)"
    examples = example_lines(command)
    assert 2 <= len(examples) <= 4, f"{name}: {len(examples)} examples"
    for line in examples:
        assert line.startswith(f"proctor {name}") or f"| proctor {name}" in line, line
        assert line in text, f"{name}: example wraps at {columns} columns: {line!r}"
    codes = exit_codes(command)
    assert 0 in codes and 2 in codes, f"{name}: exit codes {sorted(codes)}"  # every command has usage errors
    missing = [var for var in env_vars(command) if var not in text]
    assert not missing, f"{name} --help at {columns} columns cuts off {missing}"
    assert "…" not in text, f"{name} --help at {columns} columns truncates something"


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_every_command_is_classified_and_reporting_ones_have_json(name: str) -> None:
    has_json = any(JSON_OPTION in getattr(param, "opts", []) for param in COMMANDS[name].params)
    if name in ALWAYS_JSON | NO_RESULT:
        assert not has_json, f"{name}: --json would be a no-op"
    else:
        assert has_json, f"{name} prints a result or listing: it needs --json (or belong to ALWAYS_JSON/NO_RESULT)"
        assert name in JSON_ARGS, f"{name}: add how to run it to JSON_ARGS"


def test_concurrency_is_one_option_with_documented_defaults() -> None:
    """One name and one variable everywhere; the default is 8 conversations, 16 recorded rows, 64 events."""
    found = {}
    for name, command in COMMANDS.items():
        for param in command.params:
            if "--concurrency" in getattr(param, "opts", []):
                envvar = param.envvar if isinstance(param.envvar, list) else [param.envvar]
                found[name] = (param.default, "PROCTOR_CONCURRENCY" in envvar, param.opts[0])
    assert set(found) >= {"run", "rescore", "score", "consume", "calibrate"}
    defaults = {"score": 16, "consume": 64}
    assert found == {name: (defaults.get(name, 8), True, "--concurrency") for name in found}, found


# A small project: two suites against a loopback agent (it echoes), and two recorded runs of them.


@dataclass
class Project:
    root: Path
    suites: Path
    run_a: str
    run_b: str
    rows: Path
    labels: Path


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Project]:
    root = tmp_path_factory.mktemp("project")
    suites = root / "evals"
    suites.mkdir()
    server = ChatServer()
    with serve_app(build_app(server)) as base_url:
        server.base_url = base_url
        url = server.script()  # no scripted replies: the agent echoes the user
        (suites / "greets.yaml").write_text(PASSING.format(url=url), encoding="utf-8")
        (suites / "fails.yaml").write_text(FAILING.format(url=url), encoding="utf-8")
        ids = []
        for model in ("model-a", "model-b"):
            result = runner.invoke(app, ["run", str(suites), "--model", model, "--ci"])
            assert result.exit_code == 1, result.output  # one case fails on purpose
            ids.append(json.loads(result.stdout)["run_id"])
        rows = root / "runs.jsonl"
        rows.write_text(json.dumps(ROW) + "\n", encoding="utf-8")
        labels = root / "labels.csv"  # the human agrees with the check on every trial
        labels.write_text(
            "case,trial,check,label\ngreets,1,contains: hello,pass\ngreets,2,contains: hello,pass\n"
            "fails,1,contains: goodbye,fail\n",
            encoding="utf-8",
        )
        yield Project(root, suites, ids[0], ids[1], rows, labels)


JSON_ARGS: dict[str, Callable[[Project], list[str]]] = {
    "run": lambda p: ["run", str(p.suites), "--model", "model-c"],
    "list": lambda p: ["list", str(p.suites), "--tag", "smoke"],
    "runs": lambda p: ["runs", "--history", str(p.suites)],
    "report": lambda p: ["report", "--history", str(p.suites), "-o", str(p.root)],
    "compare": lambda p: ["compare", p.run_a, p.run_b, "--history", str(p.suites)],
    "rescore": lambda p: ["rescore", p.run_a, "--history", str(p.suites)],
    "calibrate": lambda p: ["calibrate", str(p.labels), "--results", p.run_a, "--history", str(p.suites)],
    "score": lambda p: ["score", str(p.rows), "--scorers", "tool_correctness_exact,context_relevancy"],
}
"""How to run each command with `--json` on the project (its exit code is checked against its help)."""


@pytest.mark.parametrize("name", sorted(JSON_ARGS))
def test_json_output_parses_and_is_all_stdout_holds(name: str, project: Project) -> None:
    result = runner.invoke(app, [*JSON_ARGS[name](project), JSON_OPTION])
    assert result.exit_code in exit_codes(COMMANDS[name]), result.output
    assert result.exit_code in (0, 1), result.output  # ran: a failed case is a result, not an error
    document: Any = json.loads(result.stdout)  # nothing but one JSON document on stdout
    assert document, result.stdout


def test_json_answers_what_the_tables_say(project: Project) -> None:
    listed = json.loads(runner.invoke(app, ["list", str(project.suites), "--json"]).stdout)
    assert {(c["name"], c["trials"], c["checks"]) for c in listed} == {("greets", 2, 1), ("fails", 1, 1)}
    planned = json.loads(runner.invoke(app, ["run", str(project.suites), "--list", "--tag", "smoke", "--json"]).stdout)
    assert [c["name"] for c in planned] == ["greets"]
    checks = json.loads(runner.invoke(app, ["list", "--checks", "--json"]).stdout)
    assert {"contains", "llm-rubric"} <= {c["type"] for c in checks}
    runs = json.loads(runner.invoke(app, ["runs", "--history", str(project.suites), "--json"]).stdout)
    assert {project.run_a, project.run_b} <= {r["run_id"] for r in runs}
    report = json.loads(
        runner.invoke(
            app, ["report", project.run_a, "--history", str(project.suites), "--json", "-o", str(project.root)]
        ).stdout
    )
    assert [r["run_id"] for r in report["runs"]] == [project.run_a]
    assert all(Path(path).is_file() for path in report["written"])
    run = runner.invoke(app, ["run", str(project.suites), "--model", "model-d", "--json"])
    summary = json.loads(run.stdout)
    assert run.exit_code == summary["exit_code"] == 1 and summary["summary"]["failed"] == 1
    rescored = json.loads(
        runner.invoke(app, ["rescore", project.run_a, "--history", str(project.suites), "--json"]).stdout
    )
    assert rescored["rescored_from"] == project.run_a
    scored = runner.invoke(
        app, ["score", str(project.rows), "--scorers", "tool_correctness_exact,context_relevancy", "--json"]
    )
    assert "no judge model" not in scored.stdout  # the note goes to stderr
    assert json.loads(scored.stdout)["scorers"]["tool_correctness_exact"]["passed"] == 1


def test_schema_and_openapi_print_json() -> None:
    schema = runner.invoke(app, ["schema"])
    assert schema.exit_code == 0 and "anyOf" in json.loads(schema.stdout)  # a suite, or an Embabel job
    openapi = runner.invoke(app, ["serve", "--print-openapi"])
    assert openapi.exit_code == 0 and "paths" in json.loads(openapi.stdout)


def test_produce_and_consume_print_json(project: Project, redis_server: RedisServer) -> None:  # noqa: F811
    stream = f"help-{project.run_a}"
    redis = ["--redis-url", redis_server.url, "--stream", stream]
    sent = runner.invoke(app, ["produce", "--sample", "2", *redis])
    assert sent.exit_code == 0, sent.output
    assert json.loads(sent.stdout)["sent"] == 2
    streams = ["--results-stream", f"{stream}-results", "--dead-letter-stream", f"{stream}-dead", "--group", stream]
    consumed = runner.invoke(
        app, ["consume", *redis, *streams, "--exit-when-idle", "--block-ms", "50", "--log-level", "warning"]
    )
    assert consumed.exit_code == 0, consumed.output
    assert json.loads(consumed.stdout)["results"] == 2


# Exit codes the help promises, reached for real (run's and score's are covered in test_run.py and test_score.py).


def test_documented_exit_codes_are_the_real_ones(project: Project, tmp_path: Path) -> None:
    def code(*args: str) -> int:
        result = runner.invoke(app, list(args))
        assert "Traceback" not in result.output
        return result.exit_code

    history = ["--history", str(project.suites)]
    assert code("list", str(tmp_path / "nowhere")) == 2
    assert code("runs", "--history", str(tmp_path)) == 2
    assert code("report", "--history", str(tmp_path)) == 2
    assert code("compare", project.run_a, project.run_a, *history) == 2
    assert code("compare", project.run_a, project.run_b, *history, "--fail-on-regression") == 0  # same outcomes
    assert code("calibrate", str(project.labels), "--results", project.run_a, *history, "--min-kappa", "0.5") == 0
    disagreeing = tmp_path / "labels.csv"
    disagreeing.write_text(
        "case,trial,check,label\ngreets,1,contains: hello,fail\ngreets,2,contains: hello,pass\n"
        "fails,1,contains: goodbye,pass\n"
    )
    assert code("calibrate", str(disagreeing), "--results", project.run_a, *history, "--min-kappa", "0.5") == 1
    assert code("produce", "--sample", "1", "--redis-url", "redis://127.0.0.1:1/0") == 2
    assert code("rescore", "no-such-run", *history) == 2
    assert code("schema", "--no-such-option") == 2
