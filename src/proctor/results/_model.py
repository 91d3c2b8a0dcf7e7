"""Result data: trials, cases and runs, and their versioned JSON form.

The JSON form is the interchange format (`.results/*.json`, `--output`, `--ci`). Changing the meaning
or name of a field requires bumping `RESULTS_VERSION`.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from proctor.checks import CheckResult
from proctor.results._aggregate import (
    TRIAL_STATUSES,
    CaseAggregate,
    RoleCosts,
    RunAggregate,
    add_costs,
    aggregate_case,
    aggregate_one,
    aggregate_run,
    incomplete_case,
    mean_statistics,
    zero_costs,
)
from proctor.results._json import dumps, orjson_line
from proctor.results._writers import results_chunks
from proctor.scoring import nothing_scored_reason, pass_statistics, wilson_interval
from proctor.transcript import Message, ToolCall, Usage

__all__ = [
    "RESULTS_VERSION",
    "TRIAL_STATUSES",
    "CaseResult",
    "RunResult",
    "TrialFigures",
    "TrialResult",
    "case_statistics",
    "round_figure",
    "run_statistics",
    "with_k",
]

RESULTS_VERSION = 1
"""Version of the results JSON format."""

_RECORD_HEAD = ("kind", "case", "name", "file")
"""The keys of a trial's journal record before its JSON form's (`TrialResult.journal_line`)."""

TrialFigures = tuple[int, str, float | None, float | None, int, dict[str, Any] | None, list[float]]
"""A trial's number, status, score, duration (ms), agent tokens, costs by role and reply latencies (ms),
as its JSON form has them: what the history store keeps (`TrialResult.figures`, `_summary.trial_figures`)."""


@dataclass(slots=True)
class TrialResult:
    """One run of a case."""

    case_key: str
    """`<file>::<case name>`: identifies the case across runs (for `--resume`)."""
    trial: int
    """1-based trial number."""
    status: str
    """`passed`, `failed`, `error`, `inconclusive` (the simulated user, not the agent, misbehaved) or
    `skipped` (e.g. no simulator model configured)."""
    score: float | None
    """0..1, or `None` when nothing was scored."""
    turns: list[Message] = field(default_factory=list)
    """The transcript: user and assistant messages with latencies and tool calls."""
    checks: list[CheckResult] = field(default_factory=list)
    """Every check result, in turn order, the rubric last."""
    error: str | None = None
    """Why the conversation could not complete (target error, timeout)."""
    warnings: list[str] = field(default_factory=list)
    """Things a reader should know."""
    retries: int = 0
    """Agent calls re-sent after retryable failures."""
    duration_ms: float = 0.0
    """Wall time of the whole trial."""
    usage: Usage = field(default_factory=Usage)
    """Agent tokens summed over the turns."""
    trace_ids: list[str] = field(default_factory=list)
    """Trace ids the agent returned, one per turn that had one."""
    error_type: str | None = None
    """The error's class when the conversation failed, e.g. `TargetUnreachable` or `TargetTimeout`."""
    agent_cost_usd: float | None = None
    """What the agent's tokens cost, when the evaluated model's price is known."""
    reason: str | None = None
    """Why a trial is `skipped` or `inconclusive` (in the JSON only when set)."""
    simulation: dict[str, Any] | None = None
    """A simulated-user trial's arms (transcripts, checks, composite components) and their difference."""
    trace_id: str | None = None
    """The trial's own OpenTelemetry trace id, when the run exported traces (in the JSON only when set)."""
    trace_url: str | None = None
    """A link to that trace (from `--trace-url`; in the JSON only when set)."""
    _json: dict[str, Any] | None = field(default=None, repr=False, compare=False)
    _tail: bytes | None = field(default=None, repr=False, compare=False)
    """The JSON form encoded, without its opening `{` (as the journal line holds it: `journal_line`)."""
    _rounded: tuple[float | None, list[float]] | None = field(default=None, repr=False, compare=False)
    """The duration and the reply latencies as the JSON form has them (rounded when it was made), for `figures`."""
    _costs: dict[str, RoleCosts] | None = field(default=None, repr=False, compare=False)

    def __post_init__(self) -> None:
        if self.status == "skipped" and self.reason is None:  # a skipped trial always says why
            self.reason = nothing_scored_reason(self.checks)

    @property
    def passed(self) -> bool:
        """Whether the trial passed."""
        return self.status == "passed"

    def costs(self) -> dict[str, RoleCosts]:
        """Tokens and USD by role: the agent's, the judges' and, in a simulated trial, the simulator's.

        A simulated trial counts every arm, not only the primary one. Computed once (a finished trial does
        not change).
        """
        if self._costs is None:
            self._costs = self._count_costs()
        return self._costs

    def _count_costs(self) -> dict[str, RoleCosts]:
        arms = list(self.simulation.get("arms", {}).values()) if self.simulation else []
        if arms:
            return self._arm_costs(arms)
        judge: RoleCosts = {"calls": 0, "cached_calls": 0, "prompt": 0, "completion": 0, "cost_usd": None}
        for check in self.checks:  # plain loops (no list made), no call but for a judged check: once per trial
            detail = check.details
            call = detail.get("judge") if detail else None
            if call:
                add_costs(judge, _call_costs(call))
        calls = 0
        for message in self.turns:
            if message.role == "assistant":
                calls += 1
        usage, cost = self.usage, self.agent_cost_usd
        agent: RoleCosts = {  # `_agent_costs(calls)`, written out
            "calls": calls,
            "cached_calls": 0,
            "prompt": usage.prompt_tokens,
            "completion": usage.completion_tokens,
            "cost_usd": None if cost is None else round(0.0 + cost, 8),
        }
        return {"agent": agent, "judge": judge}  # the judge's: `zero_costs()` and what its checks add

    def _agent_costs(self, calls: int) -> RoleCosts:
        """The agent's costs: `calls` replies and the trial's tokens (as `add_costs` adds them to `zero_costs()`)."""
        usage, cost = self.usage, self.agent_cost_usd
        return {
            "calls": calls,
            "cached_calls": 0,
            "prompt": usage.prompt_tokens,
            "completion": usage.completion_tokens,
            "cost_usd": None if cost is None else round(0.0 + cost, 8),
        }

    def _arm_costs(self, arms: list[dict[str, Any]]) -> dict[str, RoleCosts]:
        """`costs()` of a simulated trial: every arm's judge calls, agent replies and simulator calls."""
        judge = zero_costs()
        for detail in [c.get("details") for arm in arms for c in arm.get("checks") or []]:
            call = detail.get("judge") if detail else None
            if call:
                add_costs(judge, _call_costs(call))
        roles = [m.get("role") for a in arms for m in a.get("turns") or []]
        simulator = zero_costs()
        for arm in arms:
            tokens = arm.get("simulator_usage") or {}
            part = {"prompt": tokens.get("prompt", 0), "completion": tokens.get("completion", 0)}
            add_costs(
                simulator, {**part, "calls": arm.get("simulator_calls", 0), "cost_usd": arm.get("simulator_cost_usd")}
            )
        return {"agent": self._agent_costs(roles.count("assistant")), "judge": judge, "simulator": simulator}

    def latencies(self) -> list[float]:
        """Latency of each assistant reply, in ms."""
        return [m.latency_ms for m in self.turns if m.role == "assistant" and m.latency_ms is not None]

    def to_dict(self) -> dict[str, Any]:
        """Return the JSON form (computed once: a finished trial does not change)."""
        if self._json is None:
            self._json = self._own_dict()
        return self._json

    def _own_dict(self) -> dict[str, Any]:
        """The JSON form, made anew: the journal record's fields after its head (`_record`)."""
        return dict(itertools.islice(self._record("", "").items(), len(_RECORD_HEAD), None))

    def to_json(self) -> bytes:
        """Return the JSON form encoded (compact UTF-8; encoded once, for the journal and the results file).

        The dict it is encoded from is not kept (unless `to_dict` made it): ~3 KB a trial that a run
        writing its files never reads again (the history takes `figures`).
        """
        return b"{" + self.json_tail()

    def json_tail(self) -> bytes:
        """`to_json()` without its opening `{` (encoded once; what the journal line and the results file hold)."""
        if self._tail is None:
            data = self._json if self._json is not None else self._own_dict()  # not kept: `to_json`'s docstring
            # A copy (the slice): the bytes orjson returns keep its whole output buffer (~8 KB for a 0.7 KB trial)
            self._tail = dumps(data)[1:]
        return self._tail

    def journal_line(self, name: str, file: str) -> bytes:
        """The trial's journal line: `kind`, `case`, `name`, `file`, then the JSON form's fields, and a newline.

        Encoded once, for the line and the results file: the trial's own JSON (`json_tail`) is cut from
        the line (unless it was encoded before). The same bytes as the two parts encoded by `dumps` and
        spliced, which is what is done when orjson refuses a value (`dumps` then falls back part by part).
        """
        if self._tail is None:
            line = orjson_line(self._record(name, file))
            if line is not None:
                # the trial's fields start at its first key: `,"` is never inside a JSON string (`"` is escaped)
                self._tail = line[line.index(b',"trial":') + 1 : -1]
                return line
        head = {"kind": "trial", "case": self.case_key, "name": name, "file": file}
        return dumps(head)[:-1] + b"," + self.json_tail() + b"\n"  # as the line was always made

    def figures(self) -> TrialFigures:
        """What the history store keeps of the trial, as its JSON form has it (see `TrialFigures`)."""
        usage = self.usage
        duration, replies = self.rounded()
        return (
            self.trial,
            self.status,
            None if self.score is None else round_figure(self.score),
            duration,
            usage.prompt_tokens + usage.completion_tokens,
            self.costs(),
            replies,
        )

    def rounded(self) -> tuple[float | None, list[float]]:
        """The duration (ms) and each reply's latency (ms) as the JSON form has them, rounded to 3 digits.

        Kept when the JSON form is made (the journal line rounds them once for the file and the history).
        """
        if self._rounded is None:
            replies = [round(m.latency_ms, 3) for m in self.turns if m.role == "assistant" and m.latency_ms is not None]
            self._rounded = (round_figure(self.duration_ms, 3), replies)
        return self._rounded

    def _record(self, name: str, file: str) -> dict[str, Any]:
        """The journal's record of the trial (`_RECORD_HEAD`, then the JSON form's fields): one dict, made once a trial.

        A literal of at most 15 keys, then the rest assigned: a longer literal is built by growing an empty
        dict (~20 % slower for these 18 keys).
        """
        score, duration = self.score, round_figure(self.duration_ms, 3)
        replies: list[float] = []
        out: dict[str, Any] = {
            "kind": "trial",
            "case": self.case_key,
            "name": name,
            "file": file,
            "trial": self.trial,
            "status": self.status,
            "passed": self.status == "passed",
            "score": None if score is None else round_figure(score),
            "error": self.error,
            "error_type": self.error_type,
            "warnings": self.warnings,
            "retries": self.retries,
            "duration_ms": duration,
            "tokens": self.usage.to_dict(),
            "costs": self.costs(),
        }
        out["trace_ids"] = self.trace_ids
        out["turns"] = _turns_json(self.turns, replies)
        self._rounded = (duration, replies)  # for `figures`: rounded once
        out["checks"] = [check.to_dict() for check in self.checks]
        if self.reason is not None:
            out["reason"] = self.reason
        if self.simulation is not None:
            out["simulation"] = self.simulation
        if self.trace_id is not None:
            out["trace_id"] = self.trace_id
        if self.trace_url is not None:
            out["trace_url"] = self.trace_url
        return out

    @classmethod
    def from_dict(cls, case_key: str, data: dict[str, Any]) -> TrialResult:
        """Rebuild a trial from its JSON form."""
        tokens = data.get("tokens") or {}
        return cls(
            case_key=case_key,
            trial=data["trial"],
            status=data["status"],
            score=data.get("score"),
            turns=[
                Message(
                    role=m["role"],
                    content=m["content"],
                    latency_ms=m.get("latency_ms"),
                    tool_calls=[
                        ToolCall(
                            t["name"],
                            t.get("arguments") or {},
                            t.get("id"),
                            t.get("result"),
                            t.get("source"),
                            t.get("latency_ms"),
                            bool(t.get("error")),
                        )
                        for t in m.get("tool_calls") or []
                    ],
                )
                for m in data.get("turns") or []
            ],
            checks=[CheckResult.from_dict(c) for c in data.get("checks") or []],
            error=data.get("error"),
            warnings=list(data.get("warnings") or []),
            retries=data.get("retries", 0),
            duration_ms=data.get("duration_ms", 0.0),
            usage=Usage(tokens.get("prompt", 0), tokens.get("completion", 0)),
            trace_ids=list(data.get("trace_ids") or []),
            error_type=data.get("error_type"),
            agent_cost_usd=((data.get("costs") or {}).get("agent") or {}).get("cost_usd"),
            reason=data.get("reason"),
            simulation=data.get("simulation"),
            trace_id=data.get("trace_id"),
            trace_url=data.get("trace_url"),
        )


@dataclass(slots=True)
class CaseResult:
    """A case with all its trials."""

    name: str
    """Case name."""
    suite: str
    """Suite name."""
    file: str
    """Suite file path."""
    tags: list[str]
    """Case tags."""
    min_pass_rate: float
    """Pass rate the case needs."""
    trials: list[TrialResult]
    """Its trials, by trial number."""
    description: str | None = None
    """What the case tests."""
    planned: int | None = None
    """The trials the run planned for the case (`None`: not known; the trials it has are all there are).
    With fewer trials than that, the case is `incomplete` (`_aggregate.incomplete_case`)."""
    stopped: str | None = None
    """How the run ended when it did not complete (`interrupted`, `aborted`): an incomplete case's reason
    says it (set by `RunResult.end`)."""
    _aggregate: tuple[int, int | None, CaseAggregate, dict[str, Any]] | None = field(
        default=None, repr=False, compare=False
    )
    """The aggregate and the JSON fields before the trials, with the trial count and k they are for."""

    @property
    def key(self) -> str:
        """`<file>::<name>`."""
        return f"{self.file}::{self.name}"

    @property
    def missing_trials(self) -> int:
        """Planned trials the case does not have (0 when `planned` is not known)."""
        return 0 if self.planned is None else max(0, self.planned - len(self.trials))

    def summarize(self, k: int | None = None) -> CaseAggregate:
        """The case's figures over its trials (computed once per trial count and k)."""
        cached = self._aggregate  # read five times a case (summary, results file, history, --ci): no call when made
        if cached is not None and cached[0] == len(self.trials) and cached[1] == k:
            return cached[2]
        return self._summarized(k)[2]

    def _summarized(self, k: int | None) -> tuple[int, int | None, CaseAggregate, dict[str, Any]]:
        """The aggregate and the JSON fields before the trials, computed once per trial count and k."""
        cached = self._aggregate
        if cached is not None and cached[0] == len(self.trials) and cached[1] == k:
            return cached
        trials = self.ordered_trials()  # one trial (most cases): its aggregate's own path, called positionally
        if len(trials) == 1:
            aggregate = aggregate_one(trials[0], self.min_pass_rate, k)
        else:
            aggregate = aggregate_case(trials, min_pass_rate=self.min_pass_rate, k=k)
        planned = self.planned
        if planned is not None and len(trials) < planned:  # the run stopped before all its trials ran
            aggregate = incomplete_case(aggregate, len(trials), planned, self.stopped)
        head = aggregate.case_fields(self.name, self.suite, self.file, self.description, self.tags, self.min_pass_rate)
        self._aggregate = (len(self.trials), k, aggregate, head)
        return self._aggregate

    def ordered_trials(self) -> list[TrialResult]:
        """The trials by trial number (the list itself when it has fewer than two: do not change it)."""
        trials = self.trials
        if len(trials) < 2:
            return trials
        return sorted(trials, key=lambda t: t.trial)

    def aggregate_fields(self, k: int | None = None) -> dict[str, Any]:
        """The JSON form's fields before the trials: identity, the aggregates of `summarize(k)`, the threshold.

        The same dict on every call for the same trials and k (the caller must not change it).
        """
        cached = self._aggregate
        if cached is not None and cached[0] == len(self.trials) and cached[1] == k:
            return cached[3]
        return self._summarized(k)[3]

    def to_dict(self, k: int | None = None) -> dict[str, Any]:
        """Return the JSON form: identity, the aggregates of `summarize(k)`, then the trials."""
        return {**self.aggregate_fields(k), "trials": [t.to_dict() for t in self.ordered_trials()]}

    def to_json(self, k: int | None = None) -> bytes:
        """Return `to_dict(k)` encoded (compact UTF-8), each trial's bytes reused from `TrialResult.to_json`."""
        return b"".join(self.json_pieces(k))

    def json_pieces(self, k: int | None = None) -> list[bytes | memoryview]:
        """`to_json(k)` in pieces, none copied: the fields before the trials, then each trial's own bytes."""
        head = dumps(self.aggregate_fields(k))
        trials = self.ordered_trials()
        if not trials:
            return [memoryview(head)[:-1], b',"trials":[]}']
        pieces: list[bytes | memoryview] = [memoryview(head)[:-1], b',"trials":[{']
        for trial in trials:
            if len(pieces) > 2:
                pieces.append(b",{")
            pieces.append(trial.json_tail())
        pieces.append(b"]}")
        return pieces


def _turns_json(messages: list[Message], replies: list[float]) -> list[dict[str, Any]]:
    """`[m.to_dict() for m in messages]`, each dict made here (once per trial; the tests hold them equal).

    No call per message, and no list comprehension run for a reply without tool calls. Each assistant
    reply's rounded latency is appended to `replies` (`TrialResult.rounded`).
    """
    out = []
    for message in messages:
        latency, calls, role = message.latency_ms, message.tool_calls, message.role
        if latency is not None:
            latency = round(latency, 3)
            if role == "assistant":
                replies.append(latency)
        out.append(
            {
                "role": role,
                "content": message.content,
                "latency_ms": latency,
                "tool_calls": [call.to_dict() for call in calls] if calls else [],
            }
        )
    return out


def _call_costs(call: dict[str, Any]) -> RoleCosts:
    """A judged check's `details.judge` as costs."""
    calls = call.get("calls", 1)
    return {
        "calls": calls,
        "cached_calls": calls if call.get("cached") else 0,
        "prompt": call["usage"]["prompt"],
        "completion": call["usage"]["completion"],
        "cost_usd": call.get("cost_usd"),
    }


@dataclass(slots=True)
class RunResult:
    """A whole run."""

    run_id: str
    """`<model-slug>_<UTC timestamp>`."""
    started_at: str
    """ISO 8601 UTC."""
    model: str | None
    """The `--model` evaluated."""
    target: str
    """Description of the target(s)."""
    cases: list[CaseResult]
    """Every planned case, in plan order."""
    finished_at: str | None = None
    """ISO 8601 UTC; `None` while running."""
    status: str = "complete"
    """`complete`, `interrupted` (Ctrl-C) or `aborted` (the run could not complete); set with `end`."""
    seed: int | None = None
    """The `--seed`, if given."""
    planned_trials: int = 0
    """Trials the run planned (finished ones are in the cases)."""
    reason: str | None = None
    """Why the run stopped early (`aborted`), e.g. the budget was reached."""
    rescored_from: str | None = None
    """For a run made by `proctor rescore`: the run whose transcripts it re-checked (in the JSON only when set)."""
    k: int | None = None
    """The k of pass@k and pass^k (`--k`); `None`: each case's number of scored trials."""
    group: str | None = None
    """The group of runs this one belongs to (a matrix: `matrix_<time>`; in the JSON only when set)."""
    _summary: tuple[tuple[Any, ...], RunAggregate, dict[str, Any]] | None = field(
        default=None, repr=False, compare=False
    )

    @property
    def summary(self) -> RunAggregate:
        """The run's figures (computed once per set of trials; each case's are in `CaseResult.summarize`)."""
        return self._summarized()[1]

    def end(self, status: str, reason: str | None = None) -> None:
        """Set how the run ended (`status`, and `reason` when it stopped early).

        A run that did not complete tells each case so (`CaseResult.stopped`): a case some of whose planned
        trials did not run is `incomplete`, its reason saying how the run ended.
        """
        self.status, self.reason = status, reason
        stopped = None if status == "complete" else status
        for case in self.cases:
            if case.stopped != stopped:
                case.stopped = stopped
                if case.missing_trials:  # only an incomplete case's figures say how the run ended
                    case._aggregate = None
        self._summary = None

    def _summarized(self) -> tuple[tuple[Any, ...], RunAggregate, dict[str, Any]]:
        key = (tuple([len(c.trials) for c in self.cases]), self.k, self.planned_trials)
        if self._summary is None or self._summary[0] != key:
            aggregates = [case.summarize(self.k) for case in self.cases]
            summary = aggregate_run([c.trials for c in self.cases], aggregates, k=self.k, planned=self.planned_trials)
            self._summary = (key, summary, summary.to_dict())
        return self._summary

    def summary_fields(self) -> dict[str, Any]:
        """`summary.to_dict()`, computed once per set of trials (the same dict each call: do not change it)."""
        return self._summarized()[2]

    def head_fields(self) -> dict[str, Any]:
        """The JSON form's fields before the cases (a new dict each call; its `summary` is shared: do not change it)."""
        return {
            "version": RESULTS_VERSION,
            "run_id": self.run_id,
            "status": self.status,
            "reason": self.reason,
            "started_at": self.started_at,
            "finished_at": self.finished_at,
            "model": self.model,
            "target": self.target,
            "seed": self.seed,
            **({"rescored_from": self.rescored_from} if self.rescored_from is not None else {}),
            **({"group": self.group} if self.group is not None else {}),
            "summary": self._summarized()[2],
        }

    def to_dict(self) -> dict[str, Any]:
        """Return the versioned JSON form (a serialisation of the fields and `summary`; nothing computed)."""
        return {**self.head_fields(), "cases": [c.to_dict(self.k) for c in self.cases]}

    def parts(self) -> tuple[dict[str, Any], list[tuple[dict[str, Any], list[TrialFigures]]]]:
        """What the history store reads of `to_dict()`, without building it.

        The fields before the cases, and each case's fields before its trials with its trials' `figures`
        (the dicts are shared: do not change them).
        """
        k = self.k
        return self.head_fields(), [
            (c.aggregate_fields(k), [t.figures() for t in c.ordered_trials()]) for c in self.cases
        ]

    def release_encoded(self) -> None:
        """Drop the bytes each trial keeps of its JSON form (once the results file has them).

        ~1.3 KB a trial that nothing reads again after the file is written; `to_json` encodes a trial
        anew if asked (the same bytes).
        """
        for case in self.cases:
            for trial in case.trials:
                trial._tail = None

    def to_json(self) -> bytes:
        """Return the results file's bytes: `to_dict()` laid out by `results_chunks` (each trial encoded once)."""
        return b"".join(self.json_chunks())

    def json_chunks(self) -> Iterator[bytes | memoryview]:
        """`to_json()` in pieces, each case's made as it is reached (for writing without the whole in memory)."""
        return results_chunks(self.head_fields(), (c.json_pieces(self.k) for c in self.cases))


def case_statistics(statuses: list[str], k: int | None) -> dict[str, Any]:
    """A case's `k`, `pass_at_k`, `pass_hat_k` and `pass_rate_ci` from its trials' statuses.

    `pass_rate_ci` is the trial pass rate's 95 % Wilson interval; `pass_k` is pass^k at that k (the field
    older readers use).
    """
    stats = pass_statistics(statuses, k)
    return {**stats.to_dict(), "pass_k": round_figure(stats.pass_hat_k)}


def run_statistics(cases: list[dict[str, Any]], k: int | None) -> dict[str, Any]:
    """A run's `k`, mean `pass_at_k` and `pass_hat_k` over the cases that have them, and `pass_rate_ci`.

    From the cases' JSON (what `with_k` recomputes for a results file); a run being recorded gets the same
    figures from `RunResult.summary`, through the same `mean_statistics`.
    """
    at_k, hat_k, interval = mean_statistics(
        [c["status"] for c in cases], (c.get("pass_at_k") for c in cases), (c.get("pass_hat_k") for c in cases)
    )
    return {
        "k": k,
        "pass_at_k": round_figure(at_k),
        "pass_hat_k": round_figure(hat_k),
        "pass_rate_ci": None if interval is None else [round(v, 6) for v in interval],
    }


def _trial_interval(trials: list[dict[str, Any]]) -> list[float] | None:
    """The 95 % Wilson interval of passed / (passed + failed) trials."""
    passed = sum(1 for t in trials if t["status"] == "passed")
    interval = wilson_interval(passed, passed + sum(1 for t in trials if t["status"] == "failed"))
    return None if interval is None else [round(v, 6) for v in interval]


def round_figure(value: float | None, digits: int = 6) -> float | None:
    """`round(value, digits)`; a whole float is returned as it is (what `round` returns, ~10x sooner)."""
    if value is None or (value.__class__ is float and value.is_integer()):
        return value
    return round(value, digits)


def with_k(data: dict[str, Any], k: int | None) -> dict[str, Any]:
    """A results JSON with its pass statistics recomputed for `k` from the trials' statuses.

    What `proctor report --k` (and `run --k`) use; results written before these statistics existed get
    them. The input is not changed; the cases and summary of the copy are new dicts.
    """
    cases = [{**case, **case_statistics([t["status"] for t in case.get("trials") or []], k)} for case in data["cases"]]
    summary = dict(data.get("summary") or {})
    trials = [t for case in cases for t in case.get("trials") or []]
    summary.update(run_statistics(cases, k))
    summary["trial_pass_rate_ci"] = _trial_interval(trials)
    return {**data, "summary": summary, "cases": cases}
