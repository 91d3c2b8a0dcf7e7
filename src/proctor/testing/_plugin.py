"""The pytest plugin: Proctor suite files as test items, one per case, and the `proctor_case` fixture.

Registered through the `pytest11` entry point, so it loads in every pytest session where Proctor is
installed: it imports nothing of Proctor's until a suite file is collected or the fixture is used.

A YAML file is collected when it is named on the command line (`pytest evals/capitals.yaml`) or lies
under a folder listed in the `proctor_suites` ini option (`proctor_suites = evals` in `pytest.ini`, or
`[tool.pytest.ini_options] proctor_suites = ["evals"]`; a YAML list there is a dataset, not a suite);
other YAML files are left alone. Each case is one item (its trials run inside it); `-k` selects by case
name, `-m` by the case's tags (registered as markers), `-x` stops at the first failing case. A failing
or errored case reports its failing checks' reasons (a check or trial error's too) and an excerpt of the
transcript; a skipped case (nothing scored: no checks, or no judge or simulator model) is a pytest skip
with the hint. An incomplete case (the run stopped before all its planned trials ran) fails, saying how
many of them ran: a case the run did not finish is not a pass.

Nothing unchecked passes: a case with an LLM-judged check and no judge model (`--proctor-judge`, else
`PROCTOR_JUDGE_MODEL` as for the CLI's `--judge`, or the suite's `judge:`; an empty or blank value is no
judge) that passed on its other checks is a pytest skip with the hint, not a pass, unless
`--proctor-allow-skipped` (or `PROCTOR_ALLOW_SKIPPED=1`) allows it, as `proctor run --ci` stops on such a
check unless `--allow-skipped`. A case that failed or errored on its other checks still fails.
`--proctor-no-cache` (or `PROCTOR_NO_CACHE=1`) keeps judge calls out of the model call cache, and
`PROCTOR_CACHE_DIR` moves it, as for the CLI.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from proctor.suite import Case, Suite
    from proctor.testing._helper import CaseOutcome

__all__ = ["CaseFailed", "ProctorCase", "SuiteFile"]

SUITE_SUFFIXES = (".yaml", ".yml")
_NOT_SUITES = frozenset({"proctor.yaml", "pytest.yaml"})
_TRUE = frozenset({"1", "true", "yes", "on", "True"})


def pytest_addoption(parser: pytest.Parser) -> None:
    """The plugin's options and ini setting."""
    group = parser.getgroup("proctor", "Proctor suite files as tests")
    group.addoption(
        "--proctor-target", default=None, help="Run collected suites against this target (--target's forms)."
    )
    group.addoption("--proctor-trials", type=int, default=None, help="Trials per case, overriding the suite files.")
    group.addoption(
        "--proctor-judge",
        default=None,
        help="The judge model (provider/model) for judged checks (or PROCTOR_JUDGE_MODEL; empty: none).",
    )
    group.addoption("--proctor-simulator", default=None, help="The model that plays simulated users.")
    group.addoption(
        "--proctor-allow-skipped",
        action="store_true",
        default=False,
        help="Let a case whose LLM-judged checks went unjudged (no judge model) pass on its other checks "
        "(as `proctor run --ci --allow-skipped`; or PROCTOR_ALLOW_SKIPPED=1). Default: such a case is skipped.",
    )
    group.addoption(
        "--proctor-no-cache",
        action="store_true",
        default=False,
        help="Do not read or write the judge call cache (as `proctor run --no-cache`; or PROCTOR_NO_CACHE=1).",
    )
    group.addoption(
        "--proctor-trust",
        action="store_true",
        default=False,
        help="Trust the collected suites: code they name may run (as `proctor run --trust`; or PROCTOR_TRUST=1).",
    )
    parser.addini("proctor_suites", type="paths", default=[], help="Folders whose *.yaml suite files are collected.")


def _named(file_path: Path, config: pytest.Config) -> bool:
    """Whether the file itself was named on the command line."""
    resolved = file_path.resolve()
    return any(Path(arg.split("::")[0]).resolve() == resolved for arg in config.args)


def _configured(file_path: Path, config: pytest.Config) -> bool:
    folders: list[Path] = config.getini("proctor_suites")
    resolved = file_path.resolve()
    inside = [folder for folder in folders if resolved.is_relative_to(folder.resolve())]
    hidden = any(part.startswith(".") for part in resolved.parts[len(Path("/").parts) : -1])
    return bool(inside) and not hidden


def pytest_collect_file(file_path: Path, parent: pytest.Collector) -> pytest.Collector | None:
    """Collect a suite file named on the command line or under a `proctor_suites` folder."""
    if file_path.suffix not in SUITE_SUFFIXES or file_path.name in _NOT_SUITES:
        return None
    if _named(file_path, parent.config):
        return SuiteFile.from_parent(parent, path=file_path)
    if _configured(file_path, parent.config) and not _data_list(file_path):
        return SuiteFile.from_parent(parent, path=file_path)
    return None


def _data_list(file_path: Path) -> bool:
    """Whether a YAML file in a suites folder is a list (a dataset's rows), not a suite: not collected."""
    try:
        text = file_path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return False  # the load reports it
    body = "\n".join(line for line in text.splitlines() if line.strip() and not line.lstrip().startswith("#"))
    return body.lstrip().startswith(("-", "["))


def _marker(tag: str) -> str:
    return re.sub(r"\W", "_", tag) or "_"


class SuiteFile(pytest.File):
    """A suite file: loads it (a load error is a collection error with every located problem)."""

    def collect(self) -> Iterator[pytest.Item]:
        # Proctor's own code loads here, not at plugin import: pytest's start-up stays fast (must stay fast)
        from proctor.checks import registry  # (start-up time)
        from proctor.errors import SuiteError  # (start-up time)
        from proctor.suite import Trust, load_suite_file  # (start-up time)

        trusted = bool(self.config.getoption("proctor_trust")) or os.environ.get("PROCTOR_TRUST", "") in _TRUE
        trust = Trust(trusted=trusted, target_from_command_line=bool(self.config.getoption("proctor_target")))
        try:
            suite = load_suite_file(self.path, registry, trust=trust)
        except SuiteError as exc:
            raise self.CollectError(str(exc)) from None
        for case in suite.cases:
            item = ProctorCase.from_parent(self, name=case.name, suite=suite, case=case)
            for tag in case.tags:
                marker = _marker(tag)
                self.config.addinivalue_line("markers", f"{marker}: Proctor case tag {tag!r}")
                item.add_marker(marker)
            yield item


class CaseFailed(Exception):
    """A case did not pass; carries its outcome for the report."""

    def __init__(self, outcome: CaseOutcome) -> None:
        super().__init__(outcome.explain())
        self.outcome = outcome


class ProctorCase(pytest.Item):
    """One case of a suite file; its trials run inside the test."""

    def __init__(self, *, suite: Suite, case: Case, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.suite = suite
        self.case = case

    def runtest(self) -> None:
        """Run the case; fail with its failing checks, skip when it could not be (fully) judged."""
        from proctor.testing._helper import env_flag, run_loaded_case  # pytest's start-up stays fast (must stay fast)

        option = self.config.getoption
        outcome = run_loaded_case(
            self.suite,
            self.case,
            target=option("proctor_target"),
            trials=option("proctor_trials"),
            judge=option("proctor_judge"),  # else PROCTOR_JUDGE_MODEL
            simulator=option("proctor_simulator"),
            cache=False if option("proctor_no_cache") else None,
        )
        if outcome.status == "incomplete":  # the run stopped before all its trials ran: not a pass, nor a skip
            raise CaseFailed(outcome)
        unjudged = outcome.unjudged
        hint = _no_judge_hint(outcome.name, unjudged) if unjudged is not None else ""
        if outcome.status in ("skipped", "inconclusive"):
            pytest.skip("\n".join(filter(None, [hint, outcome.explain()])))
        if not outcome.passed:
            raise CaseFailed(outcome)
        if unjudged is not None and not (option("proctor_allow_skipped") or env_flag("PROCTOR_ALLOW_SKIPPED")):
            pytest.skip(
                f"{hint}\n  its other checks passed; --proctor-allow-skipped (or PROCTOR_ALLOW_SKIPPED=1) lets it "
                "pass on them"
            )

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None) -> str | Any:
        """A failing case: its failing checks and transcript excerpt; a Proctor error: its message."""
        from proctor.errors import ProctorError  # pytest's start-up stays fast (must stay fast)

        if isinstance(excinfo.value, CaseFailed | ProctorError):
            return str(excinfo.value)
        return super().repr_failure(excinfo, style=style)

    def reportinfo(self) -> tuple[Path, int | None, str]:
        """Where the case is, for pytest's report."""
        return self.path, None, f"{self.suite.name}::{self.case.name}"


def _no_judge_hint(case: str, check: str) -> str:
    """Why a case with an LLM-judged check and no judge model is a skip, and what to pass."""
    return (
        f"proctor case {case!r} was not fully checked: {check!r} needs a judge model and none is configured: "
        "pass --proctor-judge provider/model, set PROCTOR_JUDGE_MODEL, or add 'judge:' to the suite"
    )


@pytest.fixture
def proctor_case() -> Callable[..., Any]:
    """`proctor.testing.run_case`: run a case of a suite file from a test (optionally against a Python agent)."""
    from proctor.testing._helper import run_case  # pytest's start-up stays fast (must stay fast)

    return run_case
