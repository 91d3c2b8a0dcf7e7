"""The demo agent's MCP mode: examples/tools runs it against mocked, recorded and replayed tools."""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path
from typing import Any

import pytest
from demo_helpers import EXAMPLES

from proctor.checks import registry
from proctor.run import RunOptions, run_sync
from proctor.suite import load_suites


def transcript(case: dict[str, Any]) -> list[tuple[str, str, list[tuple[str, Any, Any]]]]:
    return [
        (m["role"], m["content"], [(c["name"], c["arguments"], c.get("result")) for c in m["tool_calls"]])
        for m in case["trials"][0]["turns"]
    ]


def test_mocked_recorded_and_replayed_tools(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # the example starts the real tools as `python -m proctor.demo tools`: this interpreter's python first
    monkeypatch.setenv("PATH", f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}")
    examples = tmp_path / "tools"
    shutil.copytree(EXAMPLES / "tools", examples, ignore=shutil.ignore_patterns(".results"))
    committed = json.loads((examples / "cassettes" / "hr.json").read_text())
    data = run_sync(load_suites([examples], registry), RunOptions(write_results=False)).data
    cases = {case["name"]: case for case in data["cases"]}
    assert {name: case["status"] for name, case in cases.items()} == dict.fromkeys(
        ("mocked", "recorded", "replayed"), "passed"
    )
    # the agent reports no tool calls: every call in the transcript was seen at Proctor's tool server
    calls = [c for case in cases.values() for m in case["trials"][0]["turns"] for c in m["tool_calls"]]
    assert calls and all(c["source"] == "tools" for c in calls)
    # replayed from the cassette, the transcript is the recorded one; recording again changed nothing
    assert transcript(cases["replayed"]) == transcript(cases["recorded"])
    assert json.loads((examples / "cassettes" / "hr.json").read_text()) == committed
    assert "sick leave from 2025-06-10" in cases["mocked"]["trials"][0]["turns"][3]["content"]
