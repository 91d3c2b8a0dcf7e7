"""The default scorer set of `proctor score`: every scorer some record of the file can feed.

NovaEval runs each scorer on each record and a scorer without its input returns an error dictionary;
choosing the scorers from the first record alone (as `score_file` does when it is given none) misses
scorers later records could feed and keeps scorers whose input the first record only names empty
(`"tool_calls": []`). This pass reads the file once, streaming, and keeps each scorer that at least one
record has every required field for (non-empty, `AgentScorer.required`); a record without a kept
scorer's input gets that scorer `skipped` (nothing to score), never an error.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from contextlib import closing

from proctor.checks._agent_scorers import AGENT_SCORERS, missing_fields
from proctor.recorded._readers import RecordReader

__all__ = ["default_scorers"]


def default_scorers(
    path: str | os.PathLike[str], fmt: str | None = None, columns: Mapping[str, str] | None = None
) -> list[str] | None:
    """The scorers at least one record of the file can feed, in `AGENT_SCORERS` order.

    Records that cannot be read are passed over (the scoring pass reports them). `None` when no record
    can feed any scorer (the scoring pass then decides, and reports each record's missing fields).

    Raises:
        proctor.recorded.DatasetError: The file cannot be opened or a mapped column is missing.
    """
    remaining = dict(AGENT_SCORERS)
    usable: set[str] = set()
    reader = RecordReader(path, fmt, columns)
    with closing(iter(reader)) as records:
        for record in records:
            if record.data is None:
                continue
            for name, scorer in list(remaining.items()):
                if missing_fields(scorer, record.data) is None and _structured(name, record.data):
                    usable.add(name)
                    del remaining[name]
            if not remaining:
                break
    return [name for name in AGENT_SCORERS if name in usable] or None


def _structured(name: str, data: object) -> bool:
    """The deterministic `tool_correctness_exact` compares JSON calls: text calls cannot feed it."""
    if name != "tool_correctness_exact":
        return True
    return not isinstance(getattr(data, "expected_tool_call", None), str) and not isinstance(
        getattr(data, "tool_calls", None), str
    )
