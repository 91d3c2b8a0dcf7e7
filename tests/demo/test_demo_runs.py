"""End to end: the example suites run through the real CLI against the demo agent over real HTTP."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from demo_helpers import EXAMPLES, RunningServer
from typer.testing import CliRunner

from proctor.checks import registry
from proctor.cli import app
from proctor.run import RunOptions, run_sync
from proctor.suite import load_suites

runner = CliRunner()


def copy_examples(tmp_path: Path, url: str) -> Path:
    """The examples with the demo's address replaced by the test server's."""
    target = tmp_path / "examples"
    shutil.copytree(EXAMPLES, target, ignore=shutil.ignore_patterns(".results"))
    for path in target.rglob("*.yaml"):
        path.write_text(path.read_text().replace("http://127.0.0.1:8765", url))
    return target


def test_example_suites_over_every_target_kind(demo_server: RunningServer, tmp_path: Path) -> None:
    examples = copy_examples(tmp_path, demo_server.url)
    # No judge model here: --ci alone refuses judged checks at start (issue 14); --allow-skipped accepts skips.
    result = runner.invoke(app, ["run", str(examples / "suites"), "--ci", "--allow-skipped", "--model", "hr-assistant"])
    assert result.exit_code == 1, result.output  # deliberate-failure fails on purpose
    summary = json.loads(result.stdout)
    failed = [c["name"] for c in summary["cases"] if c["status"] != "passed"]
    assert failed == ["deliberate-failure"]
    data = json.loads(Path(summary["results_file"]).read_text())
    targets = data["target"]
    for kind in ("openai", "http", "lobu", "python"):
        assert kind in targets
    tool_calls = [
        call["name"] for case in data["cases"] for t in case["trials"] for m in t["turns"] for call in m["tool_calls"]
    ]
    assert {"lookup_user", "create_reminder", "list_reminders", "get_time_off"} <= set(tool_calls)
    assert summary["summary"]["checks"]["skipped"] > 0  # llm-rubric and rubric: no judge configured
    assert summary["summary"]["checks"]["error"] == 0


@pytest.mark.parametrize("kind", ["openai", "lobu", "python", "http", "a2a"])
def test_a_lobu_file_runs_unchanged_over_each_target_kind(
    demo_server: RunningServer, tmp_path: Path, kind: str
) -> None:
    lobu_file = copy_examples(tmp_path, demo_server.url) / "lobu" / "hr-smoke.yaml"
    url = demo_server.url
    target = {
        "openai": {"type": "openai", "base_url": f"{url}/v1", "model": "hr-assistant"},
        "lobu": {"type": "lobu", "gateway": url, "agent": "hr-assistant"},
        "python": {"type": "python", "callable": "proctor.demo:respond"},
        "a2a": {"type": "a2a", "url": f"{url}/a2a"},  # the demo's A2A front (a2a-sdk server)
        "http": {
            "type": "http",
            "request": {
                "url": f"{url}/api/sessions/{{{{ session_id }}}}/messages",
                "body": {"message": "{{ message }}"},
            },
            "reply_path": "$.reply",
            "tool_calls_path": "$.tool_calls",
            "session": {"open": {"url": f"{url}/api/sessions", "body": {}}, "id_path": "$.session_id"},
        },
    }[kind]
    outcome = run_sync(load_suites([lobu_file], registry), RunOptions(target=target, write_results=False))
    (case,) = outcome.data["cases"]
    assert case["status"] == "passed" and case["pass_rate"] == 1.0
    trial = case["trials"][0]
    assert [c["status"] for c in trial["checks"]].count("passed") >= 2
    assert any(m["tool_calls"] for m in trial["turns"]), "tool calls are captured over every target kind"
    assert all(m["latency_ms"] > 0 for m in trial["turns"] if m["role"] == "assistant")


def test_an_a2a_agent_runs_the_example_suites(demo_server: RunningServer, tmp_path: Path) -> None:
    examples = copy_examples(tmp_path, demo_server.url)
    target = f"a2a:{demo_server.url}/a2a"
    result = runner.invoke(
        app, ["run", str(examples / "suites"), "--target", target, "--ci", "--allow-skipped", "--trust"]
    )
    assert result.exit_code == 1, result.output  # deliberate-failure fails on purpose
    summary = json.loads(result.stdout)
    assert summary["target"].startswith("a2a")
    failed = {c["name"]: c["status"] for c in summary["cases"] if c["status"] != "passed"}
    assert failed == {"deliberate-failure": "failed"}, failed
    data = json.loads(Path(summary["results_file"]).read_text())
    calls = {c["name"] for case in data["cases"] for t in case["trials"] for m in t["turns"] for c in m["tool_calls"]}
    assert {"lookup_user", "create_reminder", "list_reminders", "get_time_off"} <= calls  # from the data parts


def test_lobu_cli_flags_like_the_lobu_cli(demo_server: RunningServer, tmp_path: Path) -> None:
    examples = copy_examples(tmp_path, demo_server.url)
    lobu_flags = ["--gateway", demo_server.url, "--agent", "hr-assistant"]
    # The file's llm-rubric has no judge here: skipped, and --allow-skipped accepts that under --ci (issue 14).
    result = runner.invoke(app, ["run", str(examples / "lobu"), *lobu_flags, "--ci", "--allow-skipped"])
    assert result.exit_code == 0, result.output
    summary = json.loads(result.stdout)
    assert summary["target"].startswith("lobu") and summary["summary"]["passed"] == 1


def test_state_examples_catch_an_agent_that_claims_without_doing(demo_server: RunningServer, tmp_path: Path) -> None:
    examples = copy_examples(tmp_path, demo_server.url)
    result = runner.invoke(app, ["run", str(examples / "state"), "--ci"])
    assert result.exit_code == 1, result.output
    summary = json.loads(result.stdout)
    assert {c["name"]: c["status"] for c in summary["cases"]} == {
        "claims-without-doing": "failed",
        "reminders-graph": "passed",
    }
    data = json.loads(Path(summary["results_file"]).read_text())
    claims = next(c for c in data["cases"] if c["name"] == "claims-without-doing")
    reasons = [c["reason"] for c in claims["trials"][0]["checks"] if c["status"] == "failed"]
    assert reasons == [
        "expected reminders = 1; found 0",
        "expected objectContext.resources.size == 1 to be true; it is false",
    ]
    honest = next(c for c in data["cases"] if c["name"] == "reminders-graph")
    assert all(check["status"] == "passed" for t in honest["trials"] for check in t["checks"])
    assert len(honest["trials"]) == 2  # each trial wrote to its own graph: exactly one Reminder in each
