"""Options shared by the commands that judge (`run`, `rescore`): one declaration each, one meaning."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer

from proctor.cli._common import K_HELP

__all__ = [
    "ALLOW_SKIPPED",
    "CACHE_DIR",
    "CI",
    "JUDGE",
    "JUDGE_CONCURRENCY",
    "JUDGE_RPM",
    "JUDGE_TIMEOUT",
    "NO_CACHE",
    "PRICES",
    "STRICT",
    "K",
    "judging",
]

JUDGE = typer.Option(
    None,
    "--judge",
    envvar="PROCTOR_JUDGE_MODEL",
    help="Judge model for LLM-judged checks, provider/model (e.g. openai/gpt-4.1-mini, ollama/llama3.1).",
)
JUDGE_CONCURRENCY = typer.Option(
    None, "--judge-concurrency", envvar="PROCTOR_JUDGE_CONCURRENCY", min=1, help="Judge calls in flight."
)
JUDGE_RPM = typer.Option(None, "--judge-rpm", envvar="PROCTOR_JUDGE_RPM", min=1, help="Judge requests per minute.")
JUDGE_TIMEOUT = typer.Option(
    None,
    "--judge-timeout",
    envvar="PROCTOR_JUDGE_TIMEOUT",
    min=0.001,
    help="Seconds one judge call attempt may take (default 60; each retry gets the same again).",
)
NO_CACHE = typer.Option(
    False, "--no-cache", envvar="PROCTOR_NO_CACHE", help="Do not read or write the judge call cache."
)
CACHE_DIR = typer.Option(
    None, "--cache-dir", envvar="PROCTOR_CACHE_DIR", help="Model call cache (default .proctor/cache)."
)
PRICES = typer.Option(
    None, "--prices", envvar="PROCTOR_PRICES", help="JSON/YAML price table overriding the bundled one."
)
STRICT = typer.Option(
    False, "--strict", envvar="PROCTOR_STRICT", help="Any failed check fails its trial, whatever the score."
)
K = typer.Option(None, "--k", envvar="PROCTOR_K", min=1, help=K_HELP)
CI = typer.Option(False, "--ci", envvar="PROCTOR_CI", help="Print only the JSON summary to stdout.")
ALLOW_SKIPPED = typer.Option(
    False,
    "--allow-skipped",
    envvar="PROCTOR_ALLOW_SKIPPED",
    help="With --ci: skipped cases (nothing scored, e.g. no judge model) do not fail the run (no exit 6), "
    "and LLM-judged checks may run without a judge (they are skipped).",
)


def judging(
    *,
    judge: str | None,
    judge_concurrency: int | None,
    judge_rpm: int | None,
    judge_timeout: float | None,
    no_cache: bool,
    cache_dir: Path | None,
    prices: Path | None,
    strict: bool,
    k: int | None,
) -> dict[str, Any]:
    """The `RunOptions` fields of the shared judging options."""
    return {
        "judge": judge,
        "judge_concurrency": judge_concurrency,
        "judge_rpm": judge_rpm,
        "judge_timeout": judge_timeout,
        "cache": not no_cache,
        "cache_dir": cache_dir,
        "prices": prices,
        "strict": strict,
        "k": k,
    }
