"""What shapes a run besides its suites (`RunOptions`), and what watches it (`RunObserver`)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from proctor.errors import ConfigError
from proctor.results import TrialResult
from proctor.scoring import ErrorLimit
from proctor.suite import Case

__all__ = ["RunObserver", "RunOptions"]


@dataclass(frozen=True, slots=True)
class RunOptions:
    """Everything that shapes a run besides the suites. Limits are validated on creation."""

    target: Any = None
    """A target spec (or mapping) that overrides every suite's `target:`."""
    model: str | None = None
    """The model under evaluation: sent to the agent and used to name the run."""
    trials: int | None = None
    """Overrides every case's trial count."""
    timeout: float | None = None
    """Overrides every case's per-turn timeout, in seconds."""
    concurrency: int = 8
    """Trials in flight at once."""
    max_connections: int = 16
    """Open connections per target."""
    seed: int | None = None
    """Makes any randomness reproducible; each trial gets a seed derived from it."""
    results_dir: Path | None = None
    """Where `<run id>.json` goes; default `.results/` beside the first suite."""
    resume: Path | None = None
    """A previous run's results JSON or journal: only its missing or errored trials run."""
    write_results: bool = True
    """Write the journal and results file (off for library use that only wants the result)."""
    handle_sigint: bool = True
    """On Ctrl-C, stop starting trials, cancel running ones and return with status `interrupted`."""
    judge: str | None = None
    """The judge model (`provider/model`) for LLM-judged checks, overriding the suites' `judge:`."""
    simulator: str | None = None
    """The model (`provider/model`) that plays simulated users, overriding the suites' `simulator:`;
    default: the suite's `simulator:`, else the judge model. Without any, simulated cases are `skipped`."""
    judge_concurrency: int | None = None
    """Judge calls in flight at once (default: the suite's, else 8); separate from the agent's limits."""
    judge_rpm: int | None = None
    """Judge requests per minute (default: the suite's, else unlimited)."""
    cache: bool = True
    """Cache deterministic judge calls on disk (`--no-cache` turns it off); never used for the agent."""
    cache_dir: Path | None = None
    """Where the model cache lives (default `.proctor/cache`)."""
    budget: float | None = None
    """Stop starting new trials once model calls have cost this many USD (the run is then `aborted`)."""
    prices: Path | None = None
    """A JSON or YAML price table overriding the bundled one."""
    state: Any = None
    """State settings (a `proctor.suite.StateSpec` or a mapping) replacing every suite's `state:`."""
    k: int | None = None
    """The k of pass@k and pass^k (default: each case's trial count)."""
    strict: bool = False
    """Any failed check fails its trial, whatever the trial's score (promptfoo's semantics)."""
    judge_timeout: float | None = None
    """Seconds one judge call attempt may take (default: the provider's); past it the attempt fails."""
    max_errors: ErrorLimit | None = None
    """Stop starting trials once more trials errored than this allows (the run is then `aborted`)."""
    history: Path | None = None
    """The history store the finished run is indexed in (default `.proctor/history.db` beside the results
    directory, i.e. beside the suites); only when `write_results` is on."""
    otel: bool = False
    """Export one OpenTelemetry trace per trial over OTLP (also on when `OTEL_EXPORTER_OTLP_ENDPOINT` is set)."""
    otel_endpoint: str | None = None
    """The OTLP collector's base URL (e.g. `http://localhost:4318`); default from `OTEL_EXPORTER_OTLP_*`."""
    trace_url: str | None = None
    """A link template naming `{trace_id}` (a Jaeger or Langfuse URL), stored with each trial's trace id."""
    group: str | None = None
    """The group of runs this run belongs to (a matrix sets it for each of its runs)."""

    def __post_init__(self) -> None:
        for name, low in (
            ("concurrency", 1),
            ("max_connections", 1),
            ("trials", 1),
            ("judge_concurrency", 1),
            ("judge_rpm", 1),
            ("k", 1),
        ):
            value = getattr(self, name)
            if value is not None and value < low:
                raise ConfigError(f"{name} must be >= {low}, got {value}")
        if self.timeout is not None and self.timeout <= 0:
            raise ConfigError(f"timeout must be > 0 seconds, got {self.timeout}")
        if self.judge_timeout is not None and self.judge_timeout <= 0:
            raise ConfigError(f"judge_timeout must be > 0 seconds, got {self.judge_timeout}")
        if self.budget is not None and self.budget <= 0:
            raise ConfigError(f"budget must be > 0 USD, got {self.budget}")


class RunObserver(Protocol):
    """Receives progress events (the CLI draws its progress bar from these)."""

    def started(self, total: int, skipped: int) -> None:
        """The run starts `total` trials (`skipped` were kept from a resumed run)."""
        ...

    def trial_finished(self, case: Case, trial: TrialResult) -> None:
        """A trial finished (passed, failed or error)."""
        ...
