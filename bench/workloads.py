"""Suite generators for the benchmark workloads (written to a temporary directory at run time).

- W1: 400 one-turn cases, one `contains` check each, for the fixed-latency OpenAI-compatible server.
- W1J: W1's 400 cases with one `llm-rubric` assertion each besides the `contains` check, for the same
  server answering both the agent and the judge (`--judge openai/bench-judge`).
- W2: 5,000 one-turn cases with 2-3 deterministic checks (`contains`, `regex`, `not-contains`), for the
  in-process `python:bench_agent:respond` target; written as 10 files of 500 cases.
"""

from __future__ import annotations

import json
from pathlib import Path

W1_CASES = 400
W1J_CRITERION = "The reply states a numeric answer to the question."
"""The `llm-rubric` criterion of every W1J case (the judge prompt still differs per case: the question)."""
W2_CASES = 5000
W2_FILES = 10


def _q(text: str) -> str:
    """A YAML scalar (JSON strings are valid YAML flow scalars)."""
    return json.dumps(text)


def write_w1(directory: Path) -> Path:
    """Write W1's suite file into `directory` (created) and return the directory."""
    directory.mkdir(parents=True, exist_ok=True)
    lines = ["name: w1-latency", "trials: 1", "timeout: 30", "cases:"]
    for i in range(W1_CASES):
        lines += [
            f"  - name: case-{i:04d}",
            "    turns:",
            f"      - content: {_q(f'Question number {i}: what is the answer?')}",
            "        assert:",
            "          - type: contains",
            "            value: '42'",
        ]
    (directory / "w1.yaml").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return directory


def write_w1j(directory: Path) -> Path:
    """Write W1J's suite file (W1 plus one `llm-rubric` per case) into `directory` and return it."""
    directory.mkdir(parents=True, exist_ok=True)
    lines = ["name: w1j-latency-judged", "trials: 1", "timeout: 30", "cases:"]
    for i in range(W1_CASES):
        lines += [
            f"  - name: case-{i:04d}",
            "    turns:",
            f"      - content: {_q(f'Question number {i}: what is the answer?')}",
            "        assert:",
            "          - type: contains",
            "            value: '42'",
            "          - type: llm-rubric",
            f"            value: {_q(W1J_CRITERION)}",
        ]
    (directory / "w1j.yaml").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return directory


def write_w2(directory: Path) -> Path:
    """Write W2's suite files into `directory` (created) and return the directory."""
    directory.mkdir(parents=True, exist_ok=True)
    per_file = W2_CASES // W2_FILES
    for f in range(W2_FILES):
        lines = [f"name: w2-part-{f:02d}", "trials: 1", "timeout: 30", "cases:"]
        for j in range(per_file):
            i = f * per_file + j
            lines += [
                f"  - name: case-{i:05d}",
                "    turns:",
                f"      - content: {_q(f'Message {i}: say hello and give the answer.')}",
                "        assert:",
                "          - type: contains",
                "            value: '42'",
                "          - type: regex",
                "            value: 'answer is \\d+'",
            ]
            if i % 2 == 0:  # every other case has a third check
                lines += ["          - type: not-contains", "            value: error"]
        (directory / f"w2_{f:02d}.yaml").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return directory
