"""The OTel-instrumented example agent (examples/traced/agent.py), loaded from its file."""

from __future__ import annotations

import importlib.util
from dataclasses import dataclass
from pathlib import Path
from typing import Any

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "traced"


def agent_module() -> Any:
    """The example agent's module (it is a script, not a package)."""
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
