"""`proctor run`'s outputs and inputs that are not suites: refused at start (exit 2, no traceback, no trial run)
when they cannot be used, and reported without losing the results when writing fails at the end.

- `--results-dir` (or `results:` in proctor.yaml, or the default `.results`) that cannot be made or written in;
- `--output` that is a directory, has a suffix that says no format, or lies where no file can be made;
- `--output` or the results file that could still not be written at the end (a full disk);
- `--prices`, read whenever given (a missing or malformed file), pricing the agent's calls without a judge;
- a `rubric:` file that is empty (a load error: the agent is never called).

Unwritable places are under `/proc`, which refuses new files to root too (the tests run as root).
"""

from __future__ import annotations

import errno
import json
import os
import uuid
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from proctor.cli import app

runner = CliRunner()

AGENT = """\
import os


async def respond(messages):
    with open(os.environ["AGENT_CALLS"], "a", encoding="utf-8") as calls:
        calls.write("called\\n")
    return "alice"
"""


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A project with one suite whose python agent notes each call in `calls.txt`."""
    module = f"outputs_agent_{uuid.uuid4().hex}"  # a module of its own: never another test's imported one
    (tmp_path / f"{module}.py").write_text(AGENT, encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setenv("AGENT_CALLS", str(tmp_path / "calls.txt"))
    (tmp_path / ".git").mkdir()  # the project root: a proctor.yaml above tmp_path is never read
    (tmp_path / "s.yaml").write_text(
        f"name: s\ntrials: 1\ntarget: python:{module}:respond\n"
        "turns:\n  - content: who?\n    assert: [{type: contains, value: alice}]\n",
        encoding="utf-8",
    )
    monkeypatch.chdir(tmp_path)
    return tmp_path


def run(*args: str) -> Any:
    return runner.invoke(app, ["run", "s.yaml", *args])


def calls(project: Path) -> int:
    path = project / "calls.txt"
    return len(path.read_text().splitlines()) if path.exists() else 0


def refused(result: Any, project: Path, *expected: str) -> str:
    """The run exited 2 at start with a one-line error saying `expected`, before any trial ran."""
    assert result.exit_code == 2, result.output
    assert isinstance(result.exception, SystemExit), repr(result.exception)  # no traceback
    assert "Traceback" not in result.output and result.stdout == ""
    (line,) = result.stderr.splitlines()
    assert line.startswith("error: ")
    for text in expected:
        assert text in line, line
    assert calls(project) == 0  # the agent was never called
    return str(line)


def results_files(directory: Path) -> list[Path]:
    return sorted(p for p in directory.glob("*.json") if not p.name.endswith(".matrix.json"))


# --- the results directory ---------------------------------------------------------------------------


@pytest.mark.parametrize("place", ["/proc/nope", "/proc/nope/deeper"])
def test_an_unwritable_results_dir_is_refused_at_start(project: Path, place: str) -> None:
    line = refused(run("--results-dir", place), project, f"--results-dir: cannot create {place}")
    assert "no directory can be made in /proc (No such file or directory)" in line
    assert "expected a directory the results files can be written in" in line


def test_a_results_dir_that_is_a_file_is_refused_at_start(project: Path) -> None:
    (project / "taken").write_text("a file\n")
    refused(run("--results-dir", "taken"), project, "--results-dir: taken is not a directory")


def test_the_results_setting_of_proctor_yaml_is_located(project: Path) -> None:
    (project / "proctor.yaml").write_text("trusted: true\nresults: /proc/nope\n")
    line = refused(run(), project, f"{project / 'proctor.yaml'}:2:10: results: cannot create /proc/nope")
    assert "--results-dir" not in line


def test_the_environment_s_results_dir_is_named_as_the_option(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PROCTOR_RESULTS_DIR", "/proc/nope")
    refused(run(), project, "--results-dir: cannot create /proc/nope")


def test_a_blocked_default_results_dir_is_refused_at_start(project: Path) -> None:
    (project / ".results").write_text("not a directory\n")
    refused(run(), project, "the results directory (default: .results beside s.yaml", "is not a directory")


def test_a_writable_results_dir_is_made_as_before(project: Path) -> None:
    result = run("--results-dir", "out/deeper")
    assert result.exit_code == 0, result.output
    assert len(results_files(project / "out" / "deeper")) == 1 and calls(project) == 1
    assert not list((project / "out" / "deeper").glob(".proctor-write-check-*"))  # the check leaves nothing


# --- --output, at start --------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["/proc/out.json", "/proc/out.xml", "/proc/nope/out.json"])
def test_an_output_where_no_file_can_be_made_is_refused_at_start(project: Path, name: str) -> None:
    line = refused(run("--output", name), project, f"--output {name}: cannot create ")
    assert "(No such file or directory)" in line
    assert not (project / ".results").exists()  # nothing ran, nothing written


def test_an_output_that_is_a_directory_is_refused_at_start(project: Path) -> None:
    (project / "out.json").mkdir()
    refused(run("--output", "out.json"), project, "--output out.json: is a directory; expected a file")


@pytest.mark.parametrize(("name", "found"), [("out.txt", "found the suffix '.txt'"), ("out", "found no suffix")])
def test_an_output_whose_suffix_names_no_format_is_refused_at_start(project: Path, name: str, found: str) -> None:
    refused(run("--output", name), project, f"--output {name}: expected a .json (results JSON) or .xml", found)


@pytest.mark.parametrize("name", ["new/dir/out.json", "new/dir/out.XML"])
def test_an_output_in_folders_still_to_make_is_written(project: Path, name: str) -> None:
    result = run("--output", name, "--ci")
    assert result.exit_code == 0, result.output
    text = (project / name).read_text()
    assert text.startswith("<?xml") if name.endswith(".XML") else json.loads(text)["summary"]["passed"] == 1


# --- writing fails at the end ----------------------------------------------------------------------------


@pytest.fixture
def full_disk(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Files whose names end as one of the list's entries cannot be written: `No space left on device`."""
    full: list[str] = []
    real = os.replace

    def replace(source: Any, target: Any, *args: Any, **kwargs: Any) -> None:
        if any(str(target).endswith(end) for end in full):
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        real(source, target, *args, **kwargs)

    monkeypatch.setattr(os, "replace", replace)  # as `proctor.results._writers` calls it
    return full


@pytest.mark.parametrize("name", ["out.json", "out.xml"])
def test_an_output_not_written_at_the_end_is_reported_and_the_results_kept(
    project: Path, full_disk: list[str], name: str
) -> None:
    full_disk.append(name)
    result = run("--output", name, "--ci")
    assert result.exit_code == 2, result.output
    assert isinstance(result.exception, SystemExit) and "Traceback" not in result.output
    summary = json.loads(result.stdout)  # the run's summary, printed in full
    assert summary["exit_code"] == 2 and summary["summary"]["passed"] == 1
    kept = Path(summary["results_file"])
    assert json.loads(kept.read_text())["summary"]["passed"] == 1  # the results file is there, whole
    assert result.stderr.strip() == (
        f"error: --output {name}: could not write it (No space left on device); the results are in {kept}"
    )
    assert not (project / name).exists() and not list(project.glob(f".{name}.*.tmp"))
    assert calls(project) == 1


def test_the_table_does_not_claim_an_output_that_was_not_written(project: Path, full_disk: list[str]) -> None:
    full_disk.append("out.json")
    result = run("--output", "out.json")
    assert result.exit_code == 2, result.output
    assert "1 passed" in result.stdout and "results: .results/" in result.stdout
    assert "output: out.json" not in result.stdout
    assert "error: --output out.json: could not write it (No space left on device)" in result.stderr


def test_a_results_file_not_written_at_the_end_keeps_the_journal_to_resume(project: Path, full_disk: list[str]) -> None:
    full_disk.append(".json")  # the results file (and any --output)
    result = run()
    assert result.exit_code == 3, result.output  # the run could not complete
    assert isinstance(result.exception, SystemExit) and "Traceback" not in result.output
    (journal,) = (project / ".results").glob("*.journal.jsonl")
    assert not results_files(project / ".results")
    run_id = journal.name.removesuffix(".journal.jsonl")
    assert result.stderr.strip() == (
        f"error: could not write .results/{run_id}.json (No space left on device); the finished trials are kept "
        f"in .results/{run_id}.journal.jsonl: rerun with --resume .results/{run_id}.journal.jsonl to write it"
    )
    full_disk.clear()
    resumed = run("--resume", f".results/{run_id}.journal.jsonl", "--ci")
    assert resumed.exit_code == 0, resumed.output
    (written,) = results_files(project / ".results")
    assert written.name == f"{run_id}.json" and json.loads(written.read_text())["summary"]["passed"] == 1
    assert calls(project) == 1  # the trial was not run again


# --- --prices ------------------------------------------------------------------------------------------


PRICED = """\
name: priced
trials: 1
target: python:helpers.agents:json_agent
turns: [{content: hi, assert: [{type: contains, value: answer}]}]
"""


def test_a_missing_prices_file_is_refused_at_start_without_a_judge(project: Path) -> None:
    refused(
        run("--prices", "/nonexistent.json"),
        project,
        "--prices: cannot read price file /nonexistent.json: No such file or directory",
    )


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("{nope", "price file bad.json does not parse: Expecting property name enclosed in double quotes: line 1"),
        ('{"hr-assistant": {"input": "x"}}', "bad.json: hr-assistant: needs numeric 'input' and 'output'"),
        ("[1, 2]", "bad.json: expected a mapping of model name to {input, output} prices"),
    ],
)
def test_a_malformed_prices_file_is_refused_at_start_without_a_judge(project: Path, text: str, expected: str) -> None:
    (project / "bad.json").write_text(text)
    refused(run("--prices", "bad.json"), project, f"--prices: {expected}")


def test_prices_price_the_agent_without_a_judge_or_budget(project: Path) -> None:
    (project / "priced.yaml").write_text(PRICED)
    (project / "prices.json").write_text(json.dumps({"hr-assistant": {"input": 1000, "output": 2000}}))
    result = runner.invoke(app, ["run", "priced.yaml", "-m", "hr-assistant", "--prices", "prices.json", "--ci"])
    assert result.exit_code == 0, result.output
    summary = json.loads(result.stdout)
    cost = (3 * 1000 + 4 * 2000) / 1e6  # json_agent reports 3 prompt and 4 completion tokens
    assert summary["summary"]["costs"]["agent"]["cost_usd"] == pytest.approx(cost)
    (trial,) = json.loads(Path(summary["results_file"]).read_text())["cases"][0]["trials"]
    assert trial["costs"]["agent"]["cost_usd"] == pytest.approx(cost)


# --- an empty rubric ---------------------------------------------------------------------------------


def test_an_empty_rubric_file_is_refused_at_load_before_the_agent_runs(project: Path) -> None:
    (project / "r.md").write_text(" \n")
    text = (project / "s.yaml").read_text().replace("trials: 1\n", "trials: 1\nrubric: r.md\n")
    (project / "s.yaml").write_text(text)
    result = run()
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output and calls(project) == 0
    assert "s.yaml:3:9: rubric: the rubric file r.md is empty: it has no criteria" in result.stderr
