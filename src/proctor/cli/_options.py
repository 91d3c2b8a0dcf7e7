"""Options shared by the commands that judge (`run`, `rescore`): one declaration each, one meaning.

`--json` and `--concurrency` are declared here for every command that has them: one name, one default.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer

from proctor.cli._help import JSON_HELP, PANEL_JUDGE, PANEL_RUN

__all__ = [
    "ALLOW_SKIPPED",
    "CACHE_DIR",
    "CI",
    "CONCURRENCY",
    "CONSUMER_CONCURRENCY",
    "DEFAULT_CONCURRENCY",
    "JSON",
    "JUDGE",
    "JUDGE_CONCURRENCY",
    "JUDGE_RPM",
    "JUDGE_TIMEOUT",
    "NO_CACHE",
    "PRICES",
    "SCORE_CONCURRENCY",
    "STRICT",
    "K",
    "given_judge",
    "judging",
]

DEFAULT_CONCURRENCY = 8
"""`--concurrency`'s default where the unit of work is a conversation with the agent (`run`, `rescore`,
`calibrate`)."""
SCORE_CONCURRENCY = 16
"""`score`'s default: recorded rows, each mostly waiting on judge calls (as before the option was unified)."""
CONSUMER_CONCURRENCY = 64
"""`consume`'s default: stream events, mostly cheap prechecks (a lower default would cut a consumer's
throughput with judges by 8x)."""


def given_judge(context: typer.Context, parameter: typer.CallbackParam, value: str | None) -> str | None:
    """`--judge`'s callback: an empty or blank value is no judge, as if the option were not given.

    `--judge "$JUDGE"` with the variable unset gives `--judge ""`: like an empty `PROCTOR_JUDGE_MODEL`
    (which Click ignores), it names no judge, so `proctor.yaml`'s or the suite's `judge:` applies, and
    without one `--ci` refuses the judged checks at start rather than letting them be skipped.
    """
    name = value.strip() if value is not None else ""
    if name:
        return name
    source = context.get_parameter_source(parameter.name) if parameter.name is not None else None
    if value is not None and source is not None:  # as not given: `from_project` takes proctor.yaml's judge
        context.set_parameter_source(parameter.name, type(source).DEFAULT)  # (Typer's own Click's enum)
    return None


JUDGE = typer.Option(
    None,
    "--judge",
    envvar="PROCTOR_JUDGE_MODEL",
    metavar="MODEL",
    rich_help_panel=PANEL_JUDGE,
    callback=given_judge,
    help="Judge for LLM-judged checks, provider/model (openai/gpt-4.1-mini, ollama/llama3.1).",
)
JUDGE_CONCURRENCY = typer.Option(
    None,
    "--judge-concurrency",
    envvar="PROCTOR_JUDGE_CONCURRENCY",
    min=1,
    metavar="N",
    rich_help_panel=PANEL_JUDGE,
    help="Judge calls in flight.",
)
JUDGE_RPM = typer.Option(
    None,
    "--judge-rpm",
    envvar="PROCTOR_JUDGE_RPM",
    min=1,
    metavar="N",
    rich_help_panel=PANEL_JUDGE,
    help="Judge requests per minute.",
)
JUDGE_TIMEOUT = typer.Option(
    None,
    "--judge-timeout",
    envvar="PROCTOR_JUDGE_TIMEOUT",
    min=0.001,
    metavar="SECONDS",
    rich_help_panel=PANEL_JUDGE,
    help="Per judge call attempt (default 60; each retry gets as long).",
)
NO_CACHE = typer.Option(
    False,
    "--no-cache",
    envvar="PROCTOR_NO_CACHE",
    rich_help_panel=PANEL_JUDGE,
    help="Do not read or write the judge call cache.",
)
CACHE_DIR = typer.Option(
    None,
    "--cache-dir",
    envvar="PROCTOR_CACHE_DIR",
    metavar="DIR",
    rich_help_panel=PANEL_JUDGE,
    help="Model call cache (default .proctor/cache).",
)
PRICES = typer.Option(
    None,
    "--prices",
    envvar="PROCTOR_PRICES",
    metavar="FILE",
    rich_help_panel=PANEL_JUDGE,
    help="JSON/YAML price table overriding the bundled one.",
)
STRICT = typer.Option(
    False,
    "--strict",
    envvar="PROCTOR_STRICT",
    rich_help_panel=PANEL_JUDGE,
    help="Any failed check fails its trial, whatever the score.",
)
K = typer.Option(
    None,
    "--k",
    envvar="PROCTOR_K",
    min=1,
    metavar="K",
    rich_help_panel=PANEL_JUDGE,
    help="k of pass@k (one of k trials passes) and pass^k (all k pass); default: the trial count.",
)
CI = typer.Option(
    False,
    "--ci",
    envvar="PROCTOR_CI",
    help="For CI: only the JSON summary on stdout, and a skipped case (nothing scored) exits 6.",
)
ALLOW_SKIPPED = typer.Option(
    False,
    "--allow-skipped",
    envvar="PROCTOR_ALLOW_SKIPPED",
    rich_help_panel=PANEL_JUDGE,
    help="With --ci: a skipped case (e.g. no judge) does not fail the run; LLM-judged checks may go unjudged.",
)
JSON = typer.Option(False, "--json", envvar="PROCTOR_JSON", help=JSON_HELP)
CONCURRENCY = typer.Option(
    DEFAULT_CONCURRENCY,
    "--concurrency",
    envvar="PROCTOR_CONCURRENCY",
    min=1,
    metavar="N",
    rich_help_panel=PANEL_RUN,
    help="Trials in flight.",
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
    """The `RunOptions` fields of the shared judging options (an empty or blank `judge` is none).

    A `prices` file is read now, whether or not anything will be judged: a missing or malformed one exits 2
    at start (it prices the agent's calls too, `proctor.run.services.ModelServices.account_agent`).
    """
    if prices is not None:
        _check_prices(prices)
    return {
        "judge": (judge or "").strip() or None,
        "judge_concurrency": judge_concurrency,
        "judge_rpm": judge_rpm,
        "judge_timeout": judge_timeout,
        "cache": not no_cache,
        "cache_dir": cache_dir,
        "prices": prices,
        "strict": strict,
        "k": k,
    }


def _check_prices(path: Path) -> None:
    """Read `--prices` (over the bundled table); exit 2 saying what is wrong with it when it cannot be used."""
    from proctor.cli._common import fail
    from proctor.errors import ConfigError
    from proctor.models import load_prices  # must stay fast: the model layer loads only for `--prices`

    try:
        load_prices(path)
    except ConfigError as exc:
        fail(f"--prices: {exc}")
