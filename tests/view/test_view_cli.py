"""`proctor view` and `proctor run --view` as a user runs them: a real process, its printed address, Ctrl-C."""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest
from live import LIVE, LiveRun
from typer.testing import CliRunner
from viewstore import GPT, Store

from proctor.cli import app
from proctor.view._gate import is_loopback
from proctor.view._serve import browser_available, view_url

TESTS = Path(__file__).parents[1]
runner = CliRunner()


def environment(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("DISPLAY", "WAYLAND_DISPLAY", "BROWSER")}
    return {**env, "PYTHONPATH": str(TESTS), "PROCTOR_TRUST": "1", **extra}


@contextmanager
def proctor(*args: str, cwd: Path | None = None) -> Iterator[tuple[subprocess.Popen[str], str]]:
    """Start `proctor ARGS`; yields the process and the address it printed (then stops it with Ctrl-C)."""
    process = subprocess.Popen(
        [sys.executable, "-m", "proctor", *args],
        cwd=cwd,
        env=environment(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert process.stdout is not None
    seen = []
    try:
        for line in process.stdout:
            seen.append(line)
            found = re.search(r"Proctor view: (\S+)", line)
            if found:
                yield process, found.group(1)
                break
        else:
            pytest.fail(f"no address printed: {''.join(seen)} {process.stderr.read() if process.stderr else ''}")
    finally:
        if process.poll() is None:
            process.send_signal(signal.SIGINT)
        process.output = process.communicate(timeout=20)  # type: ignore[attr-defined]  # waits, closes the pipes


def test_view_serves_the_history_until_ctrl_c(store: Store) -> None:
    with proctor("view", "--history", str(store.history), "--port", "0", "--no-browser") as (process, url):
        assert re.fullmatch(r"http://127\.0\.0\.1:\d+/", url)
        page = httpx.get(url, timeout=10)
        assert page.status_code == 200 and f'data-copy="{GPT}"' in page.text
        process.send_signal(signal.SIGINT)
        assert process.wait(timeout=20) == 0


def test_view_opens_a_run_by_a_prefix_of_its_id(store: Store) -> None:
    with proctor("view", "claude", "--history", str(store.history), "--port", "0", "--no-browser") as (_, url):
        assert url.endswith("/runs/claude")
        page = httpx.get(url, timeout=10, follow_redirects=True)
        assert page.status_code == 200 and "What failed" in page.text


def test_a_shared_viewer_prints_a_token_and_checks_it(store: Store) -> None:
    args = ("view", "--history", str(store.history), "--host", "0.0.0.0", "--port", "0", "--no-browser")
    with proctor(*args) as (_, url):
        found = re.fullmatch(r"http://127\.0\.0\.1:(\d+)/\?token=([\w-]{32})", url)
        assert found, url
        base = f"http://127.0.0.1:{found.group(1)}/"
        assert httpx.get(base, timeout=10).status_code == 401
        assert httpx.get(base + "?token=" + "x" * 32, timeout=10).status_code == 401
        assert httpx.get(url, timeout=10).status_code == 200


def test_bad_tokens_and_busy_ports_are_clean_errors(store: Store) -> None:
    short = runner.invoke(app, ["view", "--history", str(store.history), "--token", "abc", "--no-browser"])
    assert short.exit_code == 2 and "--token: use at least 16" in short.output
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen(1)
        port = str(busy.getsockname()[1])
        result = runner.invoke(app, ["view", "--history", str(store.history), "--port", port, "--no-browser"])
    assert result.exit_code == 2 and f"cannot listen on 127.0.0.1:{port}" in result.output
    assert "Traceback" not in result.output


def test_run_view_serves_the_finished_run_and_keeps_the_runs_exit_code(tmp_path: Path) -> None:
    suite = tmp_path / "fails.yaml"
    suite.write_text(
        "name: fails\ntrials: 1\ntarget: python:helpers.agents:echo\n"
        "turns: [{content: hello there, assert: [{type: contains, value: goodbye}]}]\n",
        encoding="utf-8",
    )
    with proctor("run", str(tmp_path), "--model", "m", "--view") as (process, url):
        (results,) = (tmp_path / ".results").glob("m_*.json")
        assert url.endswith(f"/runs/{results.stem}")
        page = httpx.get(url, timeout=10)
        assert page.status_code == 200, page.text
        assert "What failed" in page.text and "goodbye" in page.text.split('id="failures"')[1], page.text
        process.send_signal(signal.SIGINT)
        assert process.wait(timeout=20) == 1  # the run's exit code: a case failed


def test_addresses_and_browsers() -> None:
    assert view_url("127.0.0.1", 80) == "http://127.0.0.1:80/"
    assert view_url("0.0.0.0", 80, "/runs/x", "tok") == "http://127.0.0.1:80/runs/x?token=tok"
    assert view_url("::1", 80) == "http://[::1]:80/"
    assert is_loopback("127.0.0.1") and is_loopback("localhost") and is_loopback("::1") and is_loopback("127.1.2.3")
    assert not is_loopback("0.0.0.0") and not is_loopback("192.168.1.2") and not is_loopback("example.com")


def test_a_browser_is_opened_only_where_there_is_one(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("DISPLAY", "WAYLAND_DISPLAY", "BROWSER"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(sys, "platform", "linux")
    assert not browser_available()  # a server or CI job: print the address, open nothing
    monkeypatch.setenv("DISPLAY", ":0")
    assert browser_available()


def test_ctrl_c_ends_open_live_streams_cleanly(tmp_path: Path) -> None:
    run = LiveRun(tmp_path)
    run.add("a", 1, True)
    args = ("view", "--history", str(run.history), "--port", "0", "--no-browser")
    try:
        with proctor(*args) as (process, url), httpx.stream("GET", f"{url}runs/{LIVE}/events", timeout=10) as stream:
            lines = stream.iter_lines()
            assert next(line for line in lines if line.startswith("event:")) == "event: trial"
            process.send_signal(signal.SIGINT)  # a live page is still open
            assert process.wait(timeout=20) == 0
        _, stderr = process.output  # type: ignore[attr-defined]
        assert "ERROR" not in stderr and "Traceback" not in stderr, stderr
    finally:
        run.journal.close()
