"""Helpers shared by the demo tests: a real demo server in a thread, and the example cases."""

from __future__ import annotations

from pathlib import Path

from proctor.demo._server import create_app
from proctor.suite import load_suites
from servers._serve import serve_app

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
# examples/traced/ brings its own (OpenTelemetry-instrumented) agent: its suite is tested in tests/traces/
SUITES = [suite for suite in load_suites([EXAMPLES]) if "traced" not in suite.path.parts]
# Cases with mocked tools answer from their mocks, not from the agent's data: checked by test_demo_tools.
CASES = [case for suite in SUITES for case in suite.cases if not case.tools]


class RunningServer:
    """The demo app served on a free loopback port, in a background thread (see `servers._serve`)."""

    def __init__(self, latency_ms: float = 0.0) -> None:
        self.app = create_app(latency_ms=latency_ms)
        self._serving = serve_app(self.app)
        self.url = ""

    def __enter__(self) -> RunningServer:
        self.url = self._serving.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        self._serving.__exit__(None, None, None)
