"""`proctor run` on suites from strangers: no code they name runs unless trusted; templates are sandboxed."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from proctor.cli import app
from servers._serve import serve_app
from servers.rest import RestServer, build_app

runner = CliRunner()


@pytest.fixture(autouse=True)
def _untrusted(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("PROCTOR_TRUST", raising=False)  # undo tests/cli/conftest.py: these test the default


def test_a_python_target_in_an_untrusted_suite_is_a_located_usage_error(tmp_path: Path) -> None:
    marker = tmp_path / "owned"
    suite = tmp_path / "s.yaml"
    suite.write_text(
        "name: s\n"
        "target: {type: python, callable: 'helpers.agents:echo', seed: 'os:system'}\n"
        f"seeds: [{{text: 'touch {marker}'}}]\n"
        "turns: [{content: hi}]\n",
        encoding="utf-8",
    )
    refused = runner.invoke(app, ["run", str(suite), "--ci", "--results-dir", str(tmp_path / "r")])
    assert refused.exit_code == 2 and "Traceback" not in refused.output
    assert f"{suite}:2:63: target.seed: the suite names Python code to run (os:system)" in refused.output
    assert "pass --trust" in refused.output and not marker.exists()
    listed = runner.invoke(app, ["list", str(suite)])  # listing runs nothing: allowed
    assert listed.exit_code == 0 and "1 case" in listed.output


def test_trusted_or_named_on_the_command_line_it_runs(tmp_path: Path) -> None:
    suite = tmp_path / "s.yaml"
    suite.write_text(
        "name: s\ntarget: python:helpers.agents:echo\nturns: [{content: hi, assert: [{type: contains, value: hi}]}]\n",
        encoding="utf-8",
    )
    results = ["--ci", "--results-dir", str(tmp_path / "r")]
    assert runner.invoke(app, ["run", str(suite), *results]).exit_code == 2
    assert runner.invoke(app, ["run", str(suite), "--trust", *results]).exit_code == 0
    assert runner.invoke(app, ["run", str(suite), "--target", "python:helpers.agents:echo", *results]).exit_code == 0


def test_a_template_escape_in_an_http_target_is_an_error_not_a_command(tmp_path: Path) -> None:
    marker = tmp_path / "owned"
    server = RestServer()
    with serve_app(build_app(server)) as url:
        suite = tmp_path / "s.yaml"
        escape = "{{ cycler.__init__.__globals__.os.popen('touch " + str(marker) + "').read() }}"
        target = {
            "type": "http",
            "request": {"url": f"{url}/chat", "body": {"messages": [{"role": "user", "content": escape}]}},
            "reply_path": "$.reply",
        }
        suite.write_text(f"name: s\ntarget: {json.dumps(target)}\nturns: [{{content: hi}}]\n", encoding="utf-8")
        result = runner.invoke(app, ["run", str(suite), "--ci", "--results-dir", str(tmp_path / "r")])
    assert result.exit_code == 5, result.output  # errored (5 since issue 14), never run
    assert not marker.exists() and server.chats == []  # nothing ran, nothing was sent
    summary = json.loads(result.output)["summary"]
    assert (summary["errored"], summary["passed"]) == (1, 0)
    stored = json.loads(Path(json.loads(result.output)["results_file"]).read_text(encoding="utf-8"))
    assert "access to attribute '__init__'" in json.dumps(stored)
