"""Planted secrets never leave a run: stdout, stderr, logs, results, journal, history, reports.

A real run against a loopback REST agent whose URL carries a password in its userinfo, an API key read
from the environment by a template (`{{ env.PLANTED_KEY }}`) and a `token=` query value; a second suite
points the same secrets at a closed port, so error messages quote the URL too.
"""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

from servers._serve import closed_port, serve_app
from servers.rest import RestServer, build_app

PASSWORD = "pw-planted-7f3a"
KEY = "key-planted-91c2"
TOKEN = "tok-planted-55e0"
JUDGE_PASSWORD = "pw-judge-planted-c4d1"
SECRETS = (PASSWORD, KEY, TOKEN, JUDGE_PASSWORD)


def suite(path: Path, port: int) -> None:
    url = f"http://alice:{PASSWORD}@127.0.0.1:{port}/chat?api_key={{{{ env.PLANTED_KEY }}}}&token={TOKEN}"
    target = {"type": "http", "request": {"url": url, "body": {"messages": "{{ history }}"}}, "reply_path": "$.reply"}
    checks = [{"type": "contains", "value": "hello"}, {"type": "llm-rubric", "value": "is a greeting"}]
    turns = [{"content": "hello", "assert": checks}]
    path.write_text(json.dumps({"name": path.stem, "target": target, "trials": 1, "turns": turns}), encoding="utf-8")


def proctor(*args: str, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "proctor", *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=120
    )


def test_no_planted_secret_reaches_any_output(tmp_path: Path) -> None:
    evals = tmp_path / "evals"
    evals.mkdir()
    env = {
        **os.environ,
        "PLANTED_KEY": KEY,
        "PYTHONPATH": str(Path(__file__).parents[1]),
        "OPENAI_BASE_URL": f"http://judge:{JUDGE_PASSWORD}@127.0.0.1:{closed_port()}/v1",  # the judge is down
        "OPENAI_API_KEY": "k",
    }
    env.pop("PROCTOR_TRUST", None)
    server = RestServer()
    with serve_app(build_app(server)) as url:
        suite(evals / "up.yaml", int(url.rsplit(":", 1)[1]))
        suite(evals / "down.yaml", closed_port())
        history = tmp_path / "history.db"
        outputs = [
            proctor(
                "run",
                "evals",
                "-v",
                "-o",
                "out.json",
                "--history",
                str(history),
                "--judge",
                "openai/judge-test",
                "--no-cache",
                cwd=tmp_path,
                env=env,
            ),
            proctor(
                *("run", "evals", "--ci", "--allow-skipped", "-o", "out.xml", "--history", str(history)),
                cwd=tmp_path,
                env=env,
            ),
            proctor("runs", "--history", str(history), cwd=tmp_path, env=env),
            proctor("report", "--history", str(history), "-o", str(tmp_path / "report"), cwd=tmp_path, env=env),
        ]
    assert len(server.chats) == 2  # the agent was reached (with the key: it is masked, not missing)
    assert outputs[0].returncode == 5  # errored: the judge is down, and so is one agent
    assert "up" in outputs[0].stdout and "down" in outputs[0].stdout
    assert "cannot connect to http://alice:***@127.0.0.1" in outputs[0].stdout + outputs[0].stderr
    assert "cannot reach http://judge:***@127.0.0.1" in (tmp_path / "out.json").read_text(encoding="utf-8")
    files = [p for p in tmp_path.rglob("*") if p.is_file() and p.suffix != ".db"]
    assert {p.suffix for p in files} >= {".json", ".xml", ".md", ".html"}, files
    texts = {"stdout/stderr " + " ".join(o.args[3:5]): o.stdout + o.stderr for o in outputs}
    texts.update({str(p): p.read_text(encoding="utf-8", errors="replace") for p in files if p.suffix != ".yaml"})
    with sqlite3.connect(history) as db:
        rows = [repr(row) for table in ("runs",) for row in db.execute(f"SELECT * FROM {table}")]
        texts["history.db"] = "\n".join(rows) + history.read_bytes().decode("utf-8", "replace")
    leaks = {where: secret for where, text in texts.items() for secret in SECRETS if secret in text}
    assert leaks == {}, leaks
    assert any("***" in text for text in texts.values())
