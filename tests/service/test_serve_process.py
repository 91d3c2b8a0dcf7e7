"""`proctor serve` as a process: the seed's curl examples as written, and a graceful shutdown."""

from __future__ import annotations

import json
import shutil
import signal
import subprocess
import threading
import time
from typing import Any

import httpx
import pytest

from servers.model_server import Reply
from service.events import SEED_EARLY_EXIT, SEED_EVALUATE
from service.judge_server import verdict
from service.processes import serving

CURL_HEALTH = "curl http://localhost:18081/api/v1/health"
CURL_EVALUATE = f"""curl -X POST http://localhost:18081/api/v1/evaluate \\
  -H "Content-Type: application/json" \\
  -d '{SEED_EVALUATE}'"""
CURL_EARLY_EXIT = f"""curl -X POST http://localhost:18081/api/v1/evaluate \\
  -H "Content-Type: application/json" \\
  -d '{SEED_EARLY_EXIT}'"""


def curl(command: str, port: int) -> Any:
    done = subprocess.run(
        ["bash", "-c", command.replace("18081", str(port)) + " --silent --show-error"],
        capture_output=True,
        text=True,
        check=True,
        timeout=30,
    )
    return json.loads(done.stdout)


@pytest.mark.skipif(shutil.which("curl") is None, reason="curl is not installed")
def test_the_seed_curl_examples_work_as_written(judge_server: Any) -> None:
    script = judge_server.script(default=verdict(0.95, "Clear and grounded."))
    judge = ["--judge", "openai/judge-test", "--judge-base-url", script.base_url]
    with serving(*judge) as (_, port):
        assert curl(CURL_HEALTH, port) == {"status": "ok", "version": "0.1.0"}
        result = curl(CURL_EVALUATE, port)
        assert (result["id"], result["verdict"], len(result["stages"])) == ("evt-001", "pass", 8)
        calls = script.calls
        early = curl(CURL_EARLY_EXIT, port)
        assert (early["id"], early["verdict"], len(early["stages"])) == ("evt-002", "fail", 3)
        assert script.calls == calls == 5


def test_seed_environment_variables_are_honoured(judge_server: Any) -> None:
    script = judge_server.script(default=verdict(0.5))
    env = {"EARLY_EXIT_THRESHOLD": "0.95", "PRECHECK_WEIGHT": "0.5", "LLM_JUDGE_WEIGHT": "0.5"}
    with serving("--judge", "openai/judge-test", "--judge-base-url", script.base_url, env=env) as (_, port):
        result = httpx.post(f"http://127.0.0.1:{port}/api/v1/evaluate", content=SEED_EVALUATE).json()
    assert result["verdict"] == "fail" and script.calls == 0  # mean 0.89 < 0.95: early exit


def test_sigterm_lets_requests_in_flight_finish(judge_server: Any) -> None:
    slow = Reply(json.dumps({"reason": "took a while", "score": 0.9}), delay=1.5)
    script = judge_server.script(default=slow)
    with serving("--judge", "openai/judge-test", "--judge-base-url", script.base_url) as (process, port):
        answers: list[httpx.Response] = []
        thread = threading.Thread(
            target=lambda: answers.append(
                httpx.post(f"http://127.0.0.1:{port}/api/v1/evaluate", content=SEED_EVALUATE, timeout=20)
            )
        )
        thread.start()
        deadline = time.monotonic() + 10
        while script.calls < 3 and time.monotonic() < deadline:  # the judges are working
            time.sleep(0.02)
        process.send_signal(signal.SIGTERM)
        thread.join(timeout=20)
        # uvicorn re-raises the signal once it has shut down, so the status is SIGTERM's, not a crash's
        assert process.wait(timeout=20) in (0, -signal.SIGTERM)
        _, log = process.communicate()
    assert "Finished server process" in log and "Traceback" not in log
    (answer,) = answers
    assert answer.status_code == 200 and answer.json()["verdict"] == "pass"


def test_forked_workers_share_the_port_and_stop_together() -> None:
    with serving("--workers", "2") as (process, port):
        for _ in range(20):
            response = httpx.post(f"http://127.0.0.1:{port}/api/v1/evaluate", content=SEED_EARLY_EXIT)
            assert response.status_code == 200 and response.json()["verdict"] == "fail"
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=20) == 0
        _, log = process.communicate()
    assert log.count("Finished server process") == 2
