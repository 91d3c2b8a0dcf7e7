"""The OTel-instrumented example agent (examples/traced/agent.py) served on loopback, writing its spans."""

from __future__ import annotations

import importlib.util
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "traced"


def _agent_module() -> Any:
    spec = importlib.util.spec_from_file_location("traced_example_agent", EXAMPLE / "agent.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@dataclass
class ServedAgent:
    agent: Any
    url: str
    spans: Path

    def suite(self, tmp_path: Path, trials: int = 1) -> Path:
        """The example suite, pointed at this agent."""
        text = (EXAMPLE / "suite.yaml").read_text(encoding="utf-8")
        text = text.replace("http://127.0.0.1:8765", self.url).replace("trials: 1", f"trials: {trials}")
        path = tmp_path / "suite.yaml"
        path.write_text(text, encoding="utf-8")
        return path


@pytest.fixture
def traced_agent(tmp_path: Path) -> Iterator[ServedAgent]:
    from servers._serve import serve_app

    module = _agent_module()
    spans = tmp_path / "agent-spans.jsonl"
    agent = module.TripAgent(spans)
    with serve_app(agent.app()) as url:
        yield ServedAgent(agent, url, spans)
    agent.provider.shutdown()
