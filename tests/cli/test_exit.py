"""The `proctor` script's end: `atexit` handlers run, output flushed, files complete, then `os._exit`."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from proctor.cli._exit import exit_status

SUITE = """\
name: ending
target: python:ending_agent:respond
cases:
  - name: one
    turns:
      - content: "Echo one"
        assert:
          - {type: contains, value: "one"}
  - name: two
    turns:
      - content: "Echo two"
        assert:
          - {type: contains, value: "three"}
"""
AGENT = "async def respond(messages):\n    return messages[-1]['content']\n"


def _python(code: str, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    buffered = {name: value for name, value in os.environ.items() if name != "PYTHONUNBUFFERED"}
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        cwd=tmp_path, capture_output=True, text=True, timeout=60, env=buffered,
    )  # fmt: skip


@pytest.mark.parametrize(("code", "status"), [(None, 0), (0, 0), (3, 3), (True, 1), ("a message", 1)])
def test_the_status_is_pythons_own(code: object, status: int, capsys: pytest.CaptureFixture[str]) -> None:
    assert exit_status(code) == status
    assert capsys.readouterr().err == ("a message\n" if isinstance(code, str) else "")


def test_a_run_leaves_complete_files_and_its_exit_code(tmp_path: Path) -> None:
    (tmp_path / "suite.yaml").write_text(SUITE)
    (tmp_path / "ending_agent.py").write_text(AGENT)
    command = [sys.executable, "-m", "proctor", "run", "suite.yaml", "--trust", "--ci", "--results-dir", "results"]
    ended = subprocess.run(
        [*command, "--history", "history.db", "--output", "out.json"],
        cwd=tmp_path, capture_output=True, text=True, timeout=120, env=_env(tmp_path),
    )  # fmt: skip
    assert ended.returncode == 1, ended.stderr  # case `two` fails its check
    assert json.loads(ended.stdout)["summary"]["failed"] == 1  # stdout flushed whole
    written = json.loads((tmp_path / "out.json").read_text())
    assert [case["status"] for case in written["cases"]] == ["passed", "failed"]
    (results,) = (tmp_path / "results").glob("*.json")
    assert json.loads(results.read_text()) == written
    with sqlite3.connect(tmp_path / "history.db") as db:  # the store's committed rows, WAL or not
        assert db.execute("SELECT COUNT(*) FROM runs").fetchone() == (1,)


def test_atexit_handlers_run_and_buffered_output_is_flushed(tmp_path: Path) -> None:
    ended = _python(
        """
        import atexit, sys
        from pathlib import Path
        from proctor.cli._exit import end_process
        atexit.register(lambda: Path("handler-ran").write_text("yes"))
        for _ in range(10_000):  # small writes, no newline: the last ones are still in the buffer
            sys.stdout.write("x" * 10)
        end_process(4)
        """,
        tmp_path,
    )
    assert (ended.returncode, len(ended.stdout)) == (4, 100_000)
    assert (tmp_path / "handler-ran").read_text() == "yes"


def test_a_message_is_printed_and_ends_with_status_one(tmp_path: Path) -> None:
    ended = _python("from proctor.cli._exit import end_process\nend_process('no suite found')", tmp_path)
    assert (ended.returncode, ended.stderr) == (1, "no suite found\n")


def test_a_running_thread_is_waited_for(tmp_path: Path) -> None:
    ended = _python(
        """
        import threading, time
        from pathlib import Path
        from proctor.cli._exit import end_process
        def work():
            time.sleep(0.3)
            Path("thread-done").write_text("yes")
        threading.Thread(target=work).start()
        end_process(5)
        """,
        tmp_path,
    )
    assert ended.returncode == 5
    assert (tmp_path / "thread-done").read_text() == "yes"


def test_output_that_cannot_be_flushed_ends_with_pythons_status(tmp_path: Path) -> None:
    ended = _python(
        """
        import io, sys
        from proctor.cli._exit import end_process
        class Closed(io.StringIO):
            def flush(self):
                raise BrokenPipeError(32, "Broken pipe")
        sys.stdout = Closed()
        end_process(0)
        """,
        tmp_path,
    )
    assert ended.returncode == 120


def _env(tmp_path: Path) -> dict[str, str]:
    unbuffered = {name: value for name, value in os.environ.items() if name != "PYTHONUNBUFFERED"}
    return {**unbuffered, "PYTHONPATH": str(tmp_path)}


def test_a_profiled_run_exits_the_normal_way_so_the_profiler_writes_its_figures(tmp_path: Path) -> None:
    (tmp_path / "suite.yaml").write_text(SUITE)
    (tmp_path / "ending_agent.py").write_text(AGENT)
    profile = [sys.executable, "-m", "cProfile", "-o", "run.prof", "-m", "proctor"]
    ended = subprocess.run(
        [*profile, "run", "suite.yaml", "--trust", "--ci", "--results-dir", "results", "--history", "history.db"],
        cwd=tmp_path, capture_output=True, text=True, timeout=120, env=_env(tmp_path),
    )  # fmt: skip
    assert json.loads(ended.stdout)["summary"]["failed"] == 1, ended.stderr  # cProfile's own status: 0
    assert (tmp_path / "run.prof").stat().st_size > 0
