"""Embabel's consumers' recall evals (urbot's `src/test/resources/eval/*.yml`), loaded and run unchanged.

urbot's `ConversationEvalIT` replays the seeds, asks each task as written in a fresh session, has the
transcript judge score each task, and passes when every task scores >= `minTaskScore` (default 0.5) and
the mean >= `minAverageScore` (default 0.6). The copies sit in `tests/seeds/embabel/urbot/` with urbot's
licence notice.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from proctor.checks import registry
from proctor.checks._transcript import TasksValue
from proctor.errors import SuiteError
from proctor.run import RunOptions, run_sync
from proctor.suite import load_suite_file, load_suites, parse_target_string
from servers._serve import serve_app
from servers.embabel import EmbabelAgent, build_app
from servers.model_server import Reply

URBOT = Path(__file__).resolve().parents[1] / "seeds" / "embabel" / "urbot"


def test_both_files_load_unchanged_as_recall_evals() -> None:
    short = load_suite_file(URBOT / "short-conversation-eval.yml", registry).cases[0]
    assert [turn.content for turn in short.turns] == [
        "What do you remember about my hobbies?",
        "What programming languages do I work with?",
        "Summarize what you know about me",
    ]
    assert short.simulate is None and short.trials == 1 and short.metadata == {"format": "embabel"}
    assert len(short.seeds) == 1 and short.seeds[0].conversation is not None
    first = short.seeds[0].conversation[0].content
    assert first == "I'm passionate about playing guitar, been playing since I was 12"
    (check,) = short.assert_
    value = check.value
    assert check.type == "tasks" and isinstance(value, TasksValue)
    assert (value.min_task_score, value.min_average_score) == (0.5, 0.6)  # urbot's defaults
    assert len(value.tasks) == 3 and value.tasks[0].acceptance_criteria == "Must mention guitar and/or hiking"
    assert len(value.facts) == 5
    long = load_suite_file(URBOT / "long-conversation-eval.yml", registry).cases[0]
    assert (long.assert_[0].value.min_task_score, long.assert_[0].value.min_average_score) == (0.0, 0.2)
    assert len(long.turns) == 14 and len(long.seeds) == 10 and len(long.assert_[0].value.facts) == 50


def test_bad_thresholds_are_located_errors(tmp_path: Path) -> None:
    text = (
        (URBOT / "long-conversation-eval.yml")
        .read_text(encoding="utf-8")
        .replace("minTaskScore: 0.0", "minTaskScore: 2")
    )
    path = tmp_path / "eval.yml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(SuiteError) as caught:
        load_suite_file(path, registry)
    (issue,) = caught.value.issues
    assert (issue.line, issue.field) == (6, "minTaskScore") and issue.message.endswith(
        "from 0 to 1 (as urbot compares them); found 2"
    )
    path.write_text("tasks: [{task: hi}]\nfacts: []\nminAverageScore: 0.5\nminAvgScore: 1\n", encoding="utf-8")
    with pytest.raises(SuiteError, match="minAvgScore") as caught:
        load_suite_file(path, registry)
    assert caught.value.issues[0].line == 4


@pytest.fixture
def agent(monkeypatch: pytest.MonkeyPatch) -> Iterator[EmbabelAgent]:
    monkeypatch.setenv("EMBABEL_API_KEY", "treehorn")
    server = EmbabelAgent(api_key="treehorn")
    with serve_app(build_app(server)) as url:
        server.base_url = url
        yield server


def _verdict(*scores: float) -> Reply:
    tasks = [{"task": n, "score": score, "reason": "r"} for n, score in enumerate(scores, 1)]
    return Reply(json.dumps({"tone": 0.8, "tone_reason": "fine", "tasks": tasks}))


def _run(agent: EmbabelAgent, model_server: Any, monkeypatch: pytest.MonkeyPatch, name: str, verdict: Reply) -> Any:
    judge = model_server.script(verdict)
    monkeypatch.setenv("OPENAI_BASE_URL", judge.base_url)
    monkeypatch.setenv("OPENAI_API_KEY", "k")
    options = RunOptions(
        target=parse_target_string(f"embabel:{agent.base_url}"),
        judge="openai/judge",
        model="gpt-4.1-mini",
        write_results=False,
        handle_sigint=False,
    )
    data = run_sync(load_suites([URBOT / name], registry), options).data
    return data["cases"][0]["trials"][0], judge


@pytest.mark.parametrize(
    ("scores", "status", "found"),
    [
        ((0.9, 0.7, 0.6), "passed", "found mean 0.73 (tone 0.80)"),
        ((1.0, 0.4, 1.0), "failed", "found mean 0.80; below 0.5: task 2 0.40"),  # the mean alone would pass
        ((0.6, 0.5, 0.55), "failed", "found mean 0.55 (tone"),  # every task passes, the mean does not
    ],
)
def test_short_eval_runs_as_urbot_runs_it(
    agent: EmbabelAgent,
    model_server: Any,
    monkeypatch: pytest.MonkeyPatch,
    scores: tuple[float, ...],
    status: str,
    found: str,
) -> None:
    trial, judge = _run(agent, model_server, monkeypatch, "short-conversation-eval.yml", _verdict(*scores))
    sent = [body["message"]["content"] for method, path, _, body in agent.requests if path.endswith("/messages")]
    seeds = [body["sessionId"] for method, path, _, body in agent.requests if path.endswith("/messages")]
    assert sent[:4] == [
        "I'm passionate about playing guitar, been playing since I was 12",
        "I work as a software engineer building distributed systems in Java",
        "My favorite food is sushi, I also love hiking on weekends",
        "I'm currently learning Rust for a side project",
    ]
    assert sent[4:] == [turn["content"] for turn in trial["turns"] if turn["role"] == "user"]
    assert len(set(seeds[:4])) == 1 and seeds[4] != seeds[0]  # the seeds in a session of their own
    (check,) = trial["checks"]
    assert (trial["status"], check["status"]) == (status, status)
    assert found in check["reason"]
    prompt = judge.bodies[0]["messages"][-1]["content"]
    assert "Claudia Carter likes hiking on weekends" in prompt  # the facts reach the judge
    assert "Must mention Java and/or Rust" in prompt


def test_long_eval_passes_at_its_own_low_thresholds(
    agent: EmbabelAgent, model_server: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    scores = (0.0, 0.5, 0.3, 0.2, 0.1, 0.0, 0.4, 0.3, 0.2, 0.2, 0.1, 0.3, 0.2, 0.2)  # mean 0.214
    trial, _ = _run(agent, model_server, monkeypatch, "long-conversation-eval.yml", _verdict(*scores))
    assert trial["status"] == "passed", trial["checks"][0]["reason"]
    assert trial["checks"][0]["details"]["mean"] == pytest.approx(sum(scores) / 14)
    assert len(agent.sessions) == 2  # the seeds (all ten conversations in one prior session), then the eval


def test_without_a_judge_the_eval_is_skipped_not_passed(agent: EmbabelAgent) -> None:
    options = RunOptions(
        target=parse_target_string(f"embabel:{agent.base_url}"), write_results=False, handle_sigint=False
    )
    data = run_sync(load_suites([URBOT / "short-conversation-eval.yml"], registry), options).data
    check = data["cases"][0]["trials"][0]["checks"][0]
    assert check["status"] == "skipped" and check["score"] is None
