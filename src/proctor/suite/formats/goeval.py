"""The Go Eval Agent's `configs/judges.yaml` is configuration for `proctor serve`/`consume`, not a suite.

A directory search leaves it out; named as a suite, it is one located error saying where it belongs.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from proctor.suite._yaml import fast_load, top_level_keys

__all__ = ["is_judges_config", "is_judges_file", "judges_file_message"]


def is_judges_config(data: Any) -> bool:
    """Whether parsed YAML is a Go judges file (only a top-level `judges` mapping, with `evaluators`)."""
    return (
        isinstance(data, dict)
        and set(data) == {"judges"}
        and isinstance(data["judges"], dict)
        and "evaluators" in data["judges"]
    )


def is_judges_file(path: Path) -> bool:
    """Whether a YAML file is a Go judges file (unreadable YAML is not: the suite loader reports it)."""
    try:
        text = path.read_text(encoding="utf-8")
        keys = top_level_keys(text)
        if keys is not None and keys != {"judges"}:
            return False  # decided without parsing: suites can be large, this runs for every file found
        return is_judges_config(fast_load(text))
    except Exception:  # not YAML or unreadable: left to the loader
        return False


def judges_file_message() -> str:
    """The error for a judges file named as a suite."""
    return (
        "a Go Eval Agent judges configuration (judges.evaluators), not a suite: "
        "pass it to proctor serve or proctor consume with --judges-config"
    )
