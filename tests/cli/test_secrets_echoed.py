"""Credentials an agent or a judge echoes back in an error body never reach an output.

A loopback stub answers every request with 401 and a body quoting the `Authorization` and key headers it
got (as some gateways do). The suites send it a key read by a template (`{{ env.QA_KEY2 }}`), one read by
`${QA_KEY}`, a bearer token from `api_key_env`, and URL userinfo (sent as Basic auth); the judge sends
`OPENAI_API_KEY`. None of them, nor the base64 `user:password` of the Basic header, may show in stdout,
stderr, the results JSON, the JUnit XML, the markdown and HTML reports or `proctor score`'s output: the
mask (`***`) shows where they were.
"""

from __future__ import annotations

import base64
import json
import os
import subprocess
import sys
from pathlib import Path

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from servers._serve import serve_app

KEY = "sk-qaSECRETkey111"
KEY2 = "sk-qaSECRETkey222"
BEARER = "sk-qaBEARERkey333"
USER, PASSWORD = "qauser", "qaPASS-secret-31"
BASIC = base64.b64encode(f"{USER}:{PASSWORD}".encode()).decode("ascii")
JUDGE_KEY = "sk-judgeSECRETkey999"
SECRETS = (KEY, KEY2, BEARER, PASSWORD, BASIC, JUDGE_KEY)


def echo_app(seen: list[dict[str, str]]) -> Starlette:
    """Answers anything with 401 and the credentials it was sent, as a careless gateway does."""

    async def refuse(request: Request) -> Response:
        headers = request.headers
        seen.append(dict(headers))
        echoed = " ".join(headers.get(name, "") for name in ("authorization", "x-api-key", "api-key"))
        return JSONResponse({"error": f"invalid credentials: {echoed.strip()}"}, status_code=401)

    return Starlette(routes=[Route("/{path:path}", refuse, methods=["GET", "POST", "PUT", "DELETE"])])


def write_suites(evals: Path, base: str) -> None:
    host = base.removeprefix("http://")
    http = {
        "type": "http",
        "request": {
            "url": f"http://{USER}:{PASSWORD}@{host}/chat",
            "headers": {"X-Api-Key": "{{ env.QA_KEY2 }}"},
            "body": {"messages": "{{ history }}"},
        },
        "reply_path": "$.reply",
    }
    openai = {
        "type": "openai",
        "base_url": f"{base}/v1",
        "api_key_env": "QA_BEARER",
        "headers": {"X-Api-Key": "${QA_KEY}"},
    }
    for name, target in (("http-agent", http), ("openai-agent", openai)):
        turns = [{"content": "hello", "assert": [{"type": "contains", "value": "hello"}]}]
        suite = {"name": name, "target": target, "trials": 1, "turns": turns}
        (evals / f"{name}.yaml").write_text(json.dumps(suite), encoding="utf-8")


def proctor(*args: str, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "proctor", *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=120
    )


def base_env(tmp_path: Path) -> dict[str, str]:
    env = {
        **os.environ,
        "QA_KEY": KEY,
        "QA_KEY2": KEY2,
        "QA_BEARER": BEARER,
        "PYTHONPATH": str(Path(__file__).parents[1]),
        "PROCTOR_HOME": str(tmp_path / "home"),
    }
    env.pop("PROCTOR_TRUST", None)
    return env


def leaks(texts: dict[str, str]) -> dict[str, list[str]]:
    found = {where: [secret for secret in SECRETS if secret in text] for where, text in texts.items()}
    return {where: secrets for where, secrets in found.items() if secrets}


def test_credentials_echoed_in_an_agents_401_body_are_masked_everywhere(tmp_path: Path) -> None:
    evals = tmp_path / "evals"
    evals.mkdir()
    env = base_env(tmp_path)
    history = tmp_path / "history.db"
    seen: list[dict[str, str]] = []
    with serve_app(echo_app(seen)) as base:
        write_suites(evals, base)
        run = ("run", "evals", "-v", "--history", str(history), "--no-cache")
        outputs = [
            proctor(*run, "-o", "out.xml", cwd=tmp_path, env=env),
            proctor(*run, "-o", "out.json", cwd=tmp_path, env=env),
            proctor("report", "--history", str(history), "-o", "rep", cwd=tmp_path, env=env),
        ]
    # the agent got every credential (masked in the outputs, not missing from the requests)
    sent = json.dumps(seen)
    assert all(secret in sent for secret in (KEY, KEY2, BEARER, BASIC)), sent
    assert outputs[0].returncode == outputs[1].returncode == 3, outputs[0].stdout + outputs[0].stderr  # all errored
    assert outputs[2].returncode == 0, outputs[2].stdout + outputs[2].stderr
    names = ("run -o out.xml", "run -o out.json", "report")
    texts = {f"{name}: stdout+stderr": o.stdout + o.stderr for name, o in zip(names, outputs, strict=True)}
    files = [p for p in tmp_path.rglob("*") if p.is_file() and p.suffix not in (".yaml", ".db")]
    texts.update({str(p.relative_to(tmp_path)): p.read_text(encoding="utf-8", errors="replace") for p in files})
    texts["history.db"] = history.read_bytes().decode("utf-8", "replace")
    results = [name for name in texts if name.startswith("evals/.results/") and name.endswith(".json")]
    assert len(results) == 2, sorted(texts)
    assert leaks(texts) == {}
    for where in (
        "run -o out.xml: stdout+stderr",
        "out.xml",
        "out.json",
        *results,
        "rep/evals-report.md",
        "rep/evals-report.html",
    ):
        assert "invalid credentials: Basic ***" in texts[where], (where, texts[where][:3000])
        assert "invalid credentials: Bearer ***" in texts[where], where


def test_a_judges_key_echoed_in_its_401_body_is_masked_in_the_scores(tmp_path: Path) -> None:
    data = tmp_path / "two.jsonl"
    record = {"agent_task": "find x", "agent_role": "helper", "agent_response": "x is here"}
    data.write_text(json.dumps(record) + "\n" + json.dumps({**record, "agent_task": "find y"}) + "\n", encoding="utf-8")
    env = base_env(tmp_path)
    env["OPENAI_API_KEY"] = JUDGE_KEY
    with serve_app(echo_app([])) as base:
        env["OPENAI_BASE_URL"] = f"{base}/v1"
        scored = proctor(
            "score", "two.jsonl", "--scorers", "context_relevancy", "--judge", "openai/j", "--no-cache",
            cwd=tmp_path, env=env,
        )  # fmt: skip
    out = tmp_path / "two.scores.jsonl"
    texts = {"stdout+stderr": scored.stdout + scored.stderr, "two.scores.jsonl": out.read_text(encoding="utf-8")}
    assert leaks(texts) == {}
    assert "returned 401: invalid credentials: Bearer ***" in texts["two.scores.jsonl"], texts
