"""Run one case from Python code (a pytest test, a notebook) and explain its outcome."""

from __future__ import annotations

import itertools
import os
import sys
import types
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from proctor.checks import registry
from proctor.checks._judging import unjudged_checks
from proctor.errors import ConfigError
from proctor.run import RunOptions, run_sync
from proctor.suite import Case, Suite, Trust, load_suite_file, parse_target_string

__all__ = ["CaseOutcome", "env_flag", "given_judge", "run_case", "run_loaded_case"]

EXCERPT_MESSAGES = 6
"""Messages of the failing trial's transcript shown in an explanation (its last ones)."""
_AGENTS_MODULE = "proctor_testing_agents"
"""A module made at run time that holds the agent functions tests pass, so the python target can name them."""
_counter = itertools.count(1)
_YES = frozenset({"1", "true", "t", "yes", "y", "on"})
_NO = frozenset({"", "0", "false", "f", "no", "n", "off"})


def env_flag(name: str) -> bool:
    """A boolean environment variable read as the CLI reads its flags' variables (`PROCTOR_NO_CACHE=1`).

    Unset or empty is false; `1`, `true`, `t`, `yes`, `y`, `on` (any case) are true; `0`, `false`, `f`,
    `no`, `n`, `off` are false.

    Raises:
        ConfigError: Any other value (the CLI refuses it too).
    """
    value = os.environ.get(name, "").strip().lower()
    if value in _YES:
        return True
    if value in _NO:
        return False
    raise ConfigError(f"{name}={os.environ[name]!r} is not a valid boolean: use 1 or 0 (true/false, yes/no, on/off)")


def given_judge(judge: str | None) -> str | None:
    """The judge model a caller chose, as the CLI's `--judge` (whose variable is `PROCTOR_JUDGE_MODEL`) reads it.

    `judge` when given, else `PROCTOR_JUDGE_MODEL`; an empty or blank value is no judge (the suite's
    `judge:` applies). A given blank `judge` is no judge, as `--judge ""` is: the variable is not read then.
    """
    if judge is None:
        judge = os.environ.get("PROCTOR_JUDGE_MODEL")
    name = judge.strip() if judge is not None else ""
    return name or None


@dataclass(frozen=True, slots=True)
class CaseOutcome:
    """A case's result, as in the results JSON (`data`), with what a test needs to say why it failed."""

    data: Mapping[str, Any]
    """The case's entry of the results JSON (`cases[0]`)."""
    unjudged: str | None = None
    """An LLM-judged check of the case that no judge model graded (none was configured), if any: the case
    was not fully checked, and `assert_passed` refuses it unless skipped checks are allowed."""
    allow_skipped: bool | None = None
    """`run_case`'s `allow_skipped`: `assert_passed`'s default (else `PROCTOR_ALLOW_SKIPPED`)."""

    @property
    def name(self) -> str:
        """The case name."""
        return str(self.data["name"])

    @property
    def status(self) -> str:
        """`passed`, `failed`, `error`, `inconclusive`, `skipped`, or `incomplete` (the run stopped first).

        An incomplete case's planned trials did not all run: never a pass; its `reason` says how many ran.
        """
        return str(self.data["status"])

    @property
    def passed(self) -> bool:
        """Whether the run passed the case (its pass rate reached `min_pass_rate`).

        As the run said: a case whose LLM-judged checks went unjudged for want of a judge model (`unjudged`)
        may have passed on its other checks; `assert_passed` refuses that unless skipped checks are allowed.
        """
        return self.status == "passed"

    def failures(self) -> list[tuple[int, str, str, str]]:
        """Every failed or errored check: `(trial, check name, status, reason)`, trial by trial."""
        out = []
        for trial in self.data.get("trials", []):
            for check in trial.get("checks", []):
                if check["status"] in ("failed", "error"):
                    out.append((trial["trial"], check["name"], check["status"], check.get("reason", "")))
        return out

    def explain(self) -> str:
        """Why the case has its status: the trials' errors, the failing checks' reasons, a transcript excerpt."""
        data = self.data
        rate = data.get("pass_rate")
        figure = f"pass rate {rate:.0%}" if isinstance(rate, int | float) else "no scored trial"
        lines = [f"proctor case {self.name!r}: {self.status} ({figure})"]
        if self.status == "incomplete":  # not the agent's failure: the run did not finish the case
            why = data.get("reason") or "not every planned trial ran"
            lines = [
                f"proctor case {self.name!r}: incomplete ({why}): the run stopped before all its planned trials "
                "ran, so it did not pass",
                *([f"  {figure} over the trials that ran"] if isinstance(rate, int | float) else []),
            ]
        for trial in data.get("trials", []):
            if trial.get("error"):
                lines.append(f"  trial {trial['trial']} error: {trial['error']}")
            elif trial.get("status") in ("skipped", "inconclusive") and trial.get("reason"):
                lines.append(f"  trial {trial['trial']} {trial['status']}: {trial['reason']}")
        for trial, name, status, reason in self.failures():
            lines.append(f"  trial {trial}: {status} {name}: {reason}")
        failing = next((t for t in data.get("trials", []) if t.get("status") not in ("passed", "skipped")), None)
        if failing is not None and failing.get("turns"):
            lines.append(f"  transcript of trial {failing['trial']} (last {EXCERPT_MESSAGES} messages):")
            for message in failing["turns"][-EXCERPT_MESSAGES:]:
                text = " ".join(str(message.get("content", "")).split())
                lines.append(f"    {message.get('role')}: {text[:200]}{'...' if len(text) > 200 else ''}")
        return "\n".join(lines)

    def unjudged_hint(self) -> str:
        """Why the case was not fully checked and what to pass (empty when every judged check had a judge)."""
        if self.unjudged is None:
            return ""
        return (
            f"proctor case {self.name!r} was not fully checked: {self.unjudged!r} needs a judge model and none is "
            "configured: pass judge='provider/model', set PROCTOR_JUDGE_MODEL, or add 'judge:' to the suite; "
            "or allow_skipped=True (or PROCTOR_ALLOW_SKIPPED=1) lets it pass on its other checks"
        )

    def assert_passed(self, *, allow_skipped: bool | None = None) -> None:
        """Raise `AssertionError` with `explain()` unless the case passed, and fully checked.

        A case that passed while an LLM-judged check went unjudged (no judge model: `unjudged`) fails too,
        naming the check and what to pass, as `proctor run --ci` stops on it, unless skipped checks are
        allowed: `allow_skipped`, else `run_case`'s `allow_skipped`, else `PROCTOR_ALLOW_SKIPPED`.

        Raises:
            AssertionError: The case did not pass, or was not fully checked and that is not allowed.
            proctor.errors.ConfigError: `PROCTOR_ALLOW_SKIPPED` is read and is not a boolean.
        """
        if not self.passed:
            raise AssertionError("\n".join(filter(None, [self.explain(), self.unjudged_hint()])))
        if self.unjudged is None:
            return
        allowed = allow_skipped if allow_skipped is not None else self.allow_skipped
        if not (allowed if allowed is not None else env_flag("PROCTOR_ALLOW_SKIPPED")):
            raise AssertionError(self.unjudged_hint())


def agent_target(agent: Callable[..., Any]) -> dict[str, Any]:
    """A `python` target for a function object (the target names code by `module:function`)."""
    module = sys.modules.get(_AGENTS_MODULE)
    if module is None:
        module = sys.modules[_AGENTS_MODULE] = types.ModuleType(_AGENTS_MODULE)
    name = f"agent_{next(_counter)}"
    setattr(module, name, agent)
    return {"type": "python", "callable": f"{_AGENTS_MODULE}:{name}"}


def run_case(
    path: str | Path,
    name: str | None = None,
    *,
    agent: Callable[..., Any] | None = None,
    target: Any = None,
    trials: int | None = None,
    judge: str | None = None,
    simulator: str | None = None,
    trust: Trust | None = None,
    cache: bool | None = None,
    cache_dir: str | Path | None = None,
    allow_skipped: bool | None = None,
) -> CaseOutcome:
    """Load a suite file and run one of its cases (all its trials); never writes result files.

    Args:
        path: The suite file.
        name: The case; may be omitted when the file has one case.
        agent: A Python agent (a function taking the conversation, as the `python` target calls it);
            replaces the suite's target.
        target: A target spec or string (`--target`'s forms) replacing the suite's; ignored with `agent`.
        trials: Trials per case, overriding the file.
        judge: The judge model (`provider/model`); default `PROCTOR_JUDGE_MODEL` (as the CLI's `--judge`),
            else the suite's `judge:`. An empty or blank value is no judge.
        simulator: The simulated user's model.
        trust: The trust policy for loading; default none (the caller chose the file, as library callers do).
        cache: Whether judge calls use the model call cache; default on unless `PROCTOR_NO_CACHE` is true
            (as the CLI's `--no-cache` and its variable).
        cache_dir: Where the cache lives; default `PROCTOR_CACHE_DIR`, else `.proctor/cache`.
        allow_skipped: Whether the outcome's `assert_passed` lets a case pass on its other checks when an
            LLM-judged check went unjudged for want of a judge model; default `PROCTOR_ALLOW_SKIPPED`.

    Raises:
        proctor.errors.SuiteError: The file does not load.
        proctor.errors.ConfigError: No such case, the case has no target, or `PROCTOR_NO_CACHE` is not a
            boolean.
    """
    suite = load_suite_file(path, registry, trust=trust)
    if name is None:
        if len(suite.cases) != 1:
            names = ", ".join(case.name for case in suite.cases)
            raise ConfigError(f"{path} has {len(suite.cases)} cases: name one ({names})")
        case = suite.cases[0]
    else:
        case = next((c for c in suite.cases if c.name == name), None)  # type: ignore[assignment]
        if case is None:
            raise ConfigError(f"{path} has no case {name!r}; it has: {', '.join(c.name for c in suite.cases)}")
    spec = agent_target(agent) if agent is not None else target
    return run_loaded_case(
        suite,
        case,
        target=spec,
        trials=trials,
        judge=judge,
        simulator=simulator,
        cache=cache,
        cache_dir=cache_dir,
        allow_skipped=allow_skipped,
    )


def run_loaded_case(
    suite: Suite,
    case: Case,
    *,
    target: Any = None,
    trials: int | None = None,
    judge: str | None = None,
    simulator: str | None = None,
    cache: bool | None = None,
    cache_dir: str | Path | None = None,
    allow_skipped: bool | None = None,
) -> CaseOutcome:
    """Run one loaded case (the pytest plugin's test items call this); the arguments as `run_case`'s."""
    judge = given_judge(judge)
    if isinstance(target, str):
        target = parse_target_string(target)
    if cache_dir is None and os.environ.get("PROCTOR_CACHE_DIR"):
        cache_dir = os.environ["PROCTOR_CACHE_DIR"]
    options = RunOptions(
        target=target,
        trials=trials,
        judge=judge,
        simulator=simulator,
        cache=not env_flag("PROCTOR_NO_CACHE") if cache is None else cache,
        cache_dir=None if cache_dir is None else Path(cache_dir),
        write_results=False,
        handle_sigint=False,
        history=None,
    )
    outcome = run_sync([suite], options, cases=[case])
    unjudged = unjudged_checks([case], judge)
    return CaseOutcome(
        outcome.data["cases"][0], unjudged=unjudged[0][1] if unjudged else None, allow_skipped=allow_skipped
    )
