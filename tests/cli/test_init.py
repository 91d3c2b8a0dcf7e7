"""A project through the CLI: `proctor init`, `proctor.yaml` defaults under the command line, one store read
from anywhere inside the project, and discovery that loads only suites."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from proctor.cli import app
from proctor.cli._init import CONFIG_TEXT, EXAMPLE_SUITE

runner = CliRunner()

ECHO_SUITE = """\
name: echo
target: python:helpers.agents:echo
trials: 1
cases:
  - name: hello
    turns: [{content: hello, assert: [{type: contains, value: hello}]}]
  - name: bye
    turns: [{content: bye, assert: [{type: contains, value: bye}]}]
"""


@pytest.fixture(autouse=True)
def _no_home(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("PROCTOR_HOME", raising=False)
    monkeypatch.delenv("PROCTOR_HISTORY", raising=False)


def invoke(*args: str, env: dict[str, str] | None = None) -> Any:
    return runner.invoke(app, list(args), env=env)


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


@pytest.fixture
def project(tmp_path: Path) -> Path:
    write(tmp_path / "proctor.yaml", "suites: ['evals/**/*.yaml']\nmodel: from-config\nresults: out\nconcurrency: 2\n")
    write(tmp_path / "evals" / "echo.yaml", ECHO_SUITE)
    (tmp_path / "src" / "deep").mkdir(parents=True)
    return tmp_path


def test_init_writes_a_project_and_never_overwrites(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    first = invoke("init")
    assert first.exit_code == 0, first.output
    assert (tmp_path / "proctor.yaml").read_text() == CONFIG_TEXT
    assert (tmp_path / "evals" / "example.yaml").read_text() == EXAMPLE_SUITE
    listed = invoke("list")  # the config's suites: glob finds the example from the root
    assert listed.exit_code == 0 and "greets" in listed.stdout and "remembers-a-name" in listed.stdout
    (tmp_path / "proctor.yaml").write_text("trusted: true\n")
    again = invoke("init")
    assert again.exit_code == 2 and "already exist" in again.output and "Traceback" not in again.output
    assert (tmp_path / "proctor.yaml").read_text() == "trusted: true\n"  # untouched


def test_a_run_takes_the_config_defaults_and_lands_in_the_project_store(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(project / "src" / "deep")  # anywhere inside the project
    result = invoke("run", "--ci")
    assert result.exit_code == 0, result.output
    summary = json.loads(result.stdout)
    assert Path(summary["results_file"]).parent == project / "out"  # results: out
    data = json.loads(Path(summary["results_file"]).read_text())
    assert data["model"] == "from-config" and len(data["cases"]) == 2
    assert (project / ".proctor" / "history.db").exists()

    override = invoke("run", "--ci", "--model", "from-cli", "--case", "hello")  # the command line wins
    assert override.exit_code == 0, override.output
    assert json.loads(Path(json.loads(override.stdout)["results_file"]).read_text())["model"] == "from-cli"

    from_env = invoke("run", "--ci", "--case", "bye", env={"PROCTOR_MODEL": "from-env"})  # so does its variable
    assert json.loads(Path(json.loads(from_env.stdout)["results_file"]).read_text())["model"] == "from-env"

    monkeypatch.chdir(project / "evals")
    listing = invoke("runs", "--json")  # read from another directory of the project
    assert listing.exit_code == 0, listing.output
    runs = json.loads(listing.stdout)
    assert [r["model"] for r in runs] == ["from-env", "from-cli", "from-config"]
    assert [r["cases"] for r in runs] == [1, 1, 2]


def test_proctor_home_moves_the_store(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(project)
    home = project.parent / "elsewhere"
    result = invoke("run", "--ci", env={"PROCTOR_HOME": str(home)})
    assert result.exit_code == 0, result.output
    assert (home / "history.db").exists() and not (project / ".proctor").exists()
    listing = invoke("runs", "--json", env={"PROCTOR_HOME": str(home)})
    assert len(json.loads(listing.stdout)) == 1


def test_a_bad_config_is_a_located_error(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write(project / "proctor.yaml", "model: m\nconcurency: 2\n")
    monkeypatch.chdir(project / "src")
    for command in (["run"], ["runs"]):
        result = invoke(*command)
        assert result.exit_code == 2, result.output
        assert f"{project / 'proctor.yaml'}:2:1: concurency: unknown setting 'concurency'" in result.output
        assert "Traceback" not in result.output


def test_discovery_skips_files_that_are_not_suites(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write(tmp_path / "evals" / "echo.yaml", ECHO_SUITE)
    write(tmp_path / "docker-compose.yml", "version: '3'\nservices: {agent: {image: x}}\n")
    write(tmp_path / ".github" / "workflows" / "ci.yml", "on: push\njobs: {}\n")
    monkeypatch.chdir(tmp_path)
    quiet = invoke("run", "--ci")
    assert quiet.exit_code == 0, quiet.output
    assert "docker-compose" not in quiet.output
    verbose = invoke("run", "-v", "--quiet")
    assert verbose.exit_code == 0, verbose.output
    assert "skipped docker-compose.yml: not a suite" in verbose.stderr
    assert ".github" not in verbose.stderr  # hidden folders are not searched at all
    named = invoke("run", "docker-compose.yml")
    assert named.exit_code == 2 and "docker-compose.yml:1:1: not a suite file" in named.output
    assert "Traceback" not in named.output


def test_suites_globs_pass_over_files_that_are_not_suites(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write(project / "evals" / "settings.yaml", "retries: 3\n")  # matched by evals/**/*.yaml, not a suite
    monkeypatch.chdir(project)
    result = invoke("run", "-v", "--quiet")
    assert result.exit_code == 0, result.output
    assert f"skipped {project / 'evals' / 'settings.yaml'}: not a suite" in result.stderr
    write(project / "proctor.yaml", "suites: ['nothing/*.yaml']\n")
    empty = invoke("run")
    assert empty.exit_code == 2 and "match no suite file" in empty.output


def test_rescore_reads_and_writes_the_project_store_from_anywhere(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(project)
    first = json.loads(invoke("run", "--ci").stdout)
    monkeypatch.chdir(project / "src" / "deep")
    rescored = invoke("rescore", first["run_id"], "--ci")  # by id: found in the root's store
    assert rescored.exit_code == 0, rescored.output
    runs = json.loads(invoke("runs", "--json").stdout)
    assert len(runs) == 2 and runs[0]["rescored_from"] == first["run_id"]
