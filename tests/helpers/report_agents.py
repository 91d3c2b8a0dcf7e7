"""Agents for the report, compare and rescore CLI tests (`python:helpers.report_agents:<name>`)."""

from __future__ import annotations

import hashlib
import os
from typing import Any


def by_model(messages: list[dict[str, str]], context: Any = None) -> str:
    """Answer "question N" with "answer N"; model `bad` fails questions 1-8; any model misses now and then.

    The occasional miss (about one trial in seven) is noise drawn from `REPORT_AGENT_NOISE`, the case and
    the trial number, so two runs with different noise differ the way repeated runs of a real agent do,
    and the same noise gives the same run wherever the suite lives.
    """
    number = int(messages[-1]["content"].rsplit(" ", 1)[-1])
    model = context.model if context is not None else None
    if model == "bad" and number <= 8:
        return "I do not know."
    noise = os.environ.get("REPORT_AGENT_NOISE")
    if noise is not None and context is not None:
        draw = hashlib.sha256(f"{noise}:{context.case}:{context.trial}".encode()).digest()[0]
        if draw % 7 == 0:
            return "Let me think about it."
    return f"The answer is {number}."
