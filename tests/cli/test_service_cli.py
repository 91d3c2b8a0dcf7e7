"""`proctor serve`, `consume`, `produce` and `calibrate` through the command line."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from proctor.cli import app
from proctor.cli._serve import judge_settings
from proctor.service._openapi import schema_text
from service import conftest as service_fixtures
from service.conftest import RedisServer, Streams
from service.events import SEED_EARLY_EXIT, SEED_EVALUATE, event
from service.judge_server import verdict

runner = CliRunner()

# the service tests' fixtures: a real redis-server, per-test stream names, a scripted judge
redis_server = service_fixtures.redis_server
streams = service_fixtures.streams
rdb = service_fixtures.rdb
judge_server = service_fixtures.judge_server


def stream_options(server: RedisServer, streams: Streams) -> list[str]:
    return ["--redis-url", server.url, "--stream", streams.events]


def consume_options(streams: Streams) -> list[str]:
    return [
        "--results-stream",
        streams.results,
        "--dead-letter-stream",
        streams.dead,
        "--name",
        "cli",
        "--block-ms",
        "50",
        "--exit-when-idle",
        "--log-level",
        "warning",
    ]


def test_help_does_not_import_the_service_stack() -> None:
    code = (
        "import sys, proctor.cli; print([m for m in ('redis', 'fastapi', 'uvicorn', 'starlette') if m in sys.modules])"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_print_openapi() -> None:
    result = runner.invoke(app, ["serve", "--print-openapi"])
    assert result.exit_code == 0 and result.stdout == schema_text()


def test_produce_then_consume(redis_server: RedisServer, streams: Streams, rdb: Any) -> None:
    sent = runner.invoke(app, ["produce", "--sample", "7", "--early-exit", *stream_options(redis_server, streams)])
    assert sent.exit_code == 0, sent.output
    assert json.loads(sent.stdout)["sent"] == 7 and rdb.xlen(streams.events) == 7
    done = runner.invoke(app, ["consume", *stream_options(redis_server, streams), *consume_options(streams)])
    assert done.exit_code == 0, done.output
    stats = json.loads(done.stdout.strip().splitlines()[-1])
    assert (stats["consumer"], stats["results"], stats["read"]) == ("cli", 7, 7)
    verdicts = {fields["verdict"] for _, fields in rdb.xrange(streams.results)}
    assert verdicts == {"fail"}


def test_consume_reads_the_seed_redis_variables(
    redis_server: RedisServer, streams: Streams, rdb: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    rdb.xadd(streams.events, {"payload": SEED_EARLY_EXIT})
    monkeypatch.setenv("REDIS_ADDR", f"127.0.0.1:{redis_server.port}")
    monkeypatch.setenv("EARLY_EXIT_THRESHOLD", "0.0")  # nothing exits early, and no judge: verdict error
    done = runner.invoke(app, ["consume", "--stream", streams.events, *consume_options(streams)])
    assert done.exit_code == 0, done.output
    (record,) = [fields for _, fields in rdb.xrange(streams.results)]
    assert record["verdict"] == "error"
    assert "no judge model configured" in json.loads(record["result"])["errors"][0]["reason"]


def test_produce_validates_its_file(tmp_path: Path, redis_server: RedisServer, streams: Streams, rdb: Any) -> None:
    events = tmp_path / "events.jsonl"
    events.write_text(json.dumps(json.loads(SEED_EVALUATE)) + "\n" + '{"event_id": "x"}\n')
    refused = runner.invoke(app, ["produce", str(events), *stream_options(redis_server, streams)])
    assert refused.exit_code == 2 and "line 2: Field required" in refused.output
    forced = runner.invoke(app, ["produce", str(events), "--no-validate", *stream_options(redis_server, streams)])
    assert forced.exit_code == 0 and rdb.xlen(streams.events) == 2
    assert runner.invoke(app, ["produce"]).exit_code == 2


def test_unreachable_redis_is_a_clean_error(tmp_path: Path) -> None:
    from servers._serve import closed_port

    url = f"redis://127.0.0.1:{closed_port()}/0"
    done = runner.invoke(app, ["consume", "--redis-url", url, "--log-level", "error"])
    assert done.exit_code == 2 and "cannot reach Redis" in done.output
    sent = runner.invoke(app, ["produce", "--sample", "1", "--redis-url", url])
    assert sent.exit_code == 2 and "cannot reach Redis" in sent.output


def test_bad_service_options_exit_2() -> None:
    bad = runner.invoke(app, ["consume", "--judges", "relevance,tone"])
    assert bad.exit_code == 2 and "unknown judge 'tone'" in bad.output
    weights = runner.invoke(app, ["serve", "--precheck-weight", "0.5"])
    assert weights.exit_code == 2 and "must add up to 1" in weights.output


def test_claude_model_id_names_a_bedrock_judge(monkeypatch: pytest.MonkeyPatch) -> None:
    options: dict[str, Any] = {
        "judge_base_url": None,
        "judge_api_key": None,
        "judges": "relevance, coherence",
        "judge_timeout": 5.0,
        "judge_concurrency": 4,
        "early_exit_threshold": 0.2,
        "precheck_weight": 0.3,
        "judge_weight": 0.7,
        "cache_dir": None,
    }
    monkeypatch.setenv("CLAUDE_MODEL_ID", "us.anthropic.claude-3-5-haiku-20241022-v1:0")
    settings = judge_settings(judge=None, **options)
    assert settings.judge_model == "bedrock/us.anthropic.claude-3-5-haiku-20241022-v1:0"
    assert settings.pipeline.judges == ("relevance", "coherence")
    assert judge_settings(judge="openai/gpt-4.1-mini", **options).judge_model == "openai/gpt-4.1-mini"


def write_labels(path: Path) -> Path:
    rows = []
    for event_id, base, label in [
        ("p1", SEED_EVALUATE, "pass"),
        ("p2", SEED_EVALUATE, "pass"),
        ("r1", SEED_EVALUATE, "review"),
        ("f1", SEED_EARLY_EXIT, "fail"),
    ]:
        rows.append(json.dumps({**event(base, event_id), "label": label}))
    path.write_text("\n".join(rows) + "\n")
    return path


def test_calibrate_exit_codes(tmp_path: Path, judge_server: Any) -> None:
    script = judge_server.script(default=verdict(0.95))
    labels = write_labels(tmp_path / "labels.jsonl")
    judge = ["--judge", "openai/judge-test", "--judge-base-url", script.base_url, "--judge-api-key", "k"]
    passed = runner.invoke(app, ["calibrate", str(labels), *judge])
    assert passed.exit_code == 0, passed.output
    assert "agreement:         0.750" in passed.output and "PASS" in passed.output
    strict = runner.invoke(app, ["calibrate", str(labels), "--correlation-threshold", "0.95", "--json", *judge])
    assert strict.exit_code == 1
    report = json.loads(strict.stdout)
    assert report["passed"] is False and report["confusion"]["review"]["pass"] == 1
    no_judge = runner.invoke(app, ["calibrate", str(labels)])
    assert no_judge.exit_code == 2 and "configure a judge" in no_judge.output
