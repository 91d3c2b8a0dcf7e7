"""LLM-judged checks: `llm-rubric`, `rubric`, and the five pointwise judges.

`llm-rubric` grades one reply, `rubric` the whole conversation against a rubric file, and the pointwise
judges (`relevance`, `faithfulness`, `coherence`, `completeness`, `instruction`) score a reply 0..1.

With no judge model configured they are `skipped` with a hint saying how to configure one; a judge that
fails is an `error` with its reason and raw output. Never a guessed score.
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter

from proctor.checks import _transcript  # noqa: F401 - registers the `tasks` check (a judge over the transcript)
from proctor.checks._judging import judge_error, no_judge
from proctor.checks._registry import CheckContext, CheckType, registry
from proctor.checks._result import CheckResult, CheckStatus
from proctor.checks._rubric import RubricCriterion, split_rubric
from proctor.suite import AssertionSpec

__all__ = [
    "FAILED_VERDICT_CAP",
    "POINTWISE_JUDGES",
    "CriterionVerdict",
    "PointwiseVerdict",
    "RubricFileVerdict",
    "RubricVerdict",
]

DEFAULT_THRESHOLD = 0.7
"""Pointwise judges pass at this score unless `options.threshold` says otherwise (the Go seed's default)."""

FAILED_VERDICT_CAP = 0.7
"""The most an `llm-rubric` verdict of `pass: false` scores when the check gives no `options.threshold`.

The prompt (`prompts/llm-rubric.j2`) says `pass` is true only if the criterion is fully met, and grades
1.0 fully met, 0.7 mostly met with a minor gap, 0.4 partly met, 0.0 not met: 0.7 is its highest failing
grade. A judge that answers `pass: false, score: 0.9` contradicts itself; taken as it is, that failed
check alone would pass its trial at the default pass threshold (0.8). Capped, a judge's "fail" never
passes a trial on its own there, and a failing verdict keeps its partial credit (0.7, 0.4, 0.0). The
judge's own `pass` and `score` stay in `details["verdict"]`, the cap applied in `details["capped_from"]`.
With `options.threshold` the status follows the score, and the score is the judge's as it is."""


class RubricVerdict(BaseModel):
    """The judge's answer for `llm-rubric`."""

    model_config = ConfigDict(populate_by_name=True)

    reason: str
    """Why, citing the reply."""
    passed: bool = Field(alias="pass", strict=True)
    """Whether the criterion is met: a JSON boolean only. A string (`"false"`) or number where the schema
    asks for a boolean is an answer that would have to be interpreted: it fails validation (the judge is
    shown the error once, then the check is an `error`), never read as a verdict."""
    score: float = Field(ge=0, le=1)
    """How well, 0..1."""


class CriterionVerdict(BaseModel):
    """One rubric criterion's verdict."""

    id: int | None = None
    """The criterion's number in the prompt (Proctor's split of the rubric)."""
    name: str = ""
    """The criterion, as the judge named it (matched when `id` is missing)."""
    passed: bool = Field(strict=True)
    """Whether the conversation meets it: a JSON boolean only (as `RubricVerdict.passed`)."""
    explanation: str = ""
    """Why, citing the conversation."""


class RubricFileVerdict(BaseModel):
    """The judge's answer for a rubric file."""

    criteria: list[CriterionVerdict] = Field(min_length=1)
    """Per-criterion verdicts, in rubric order."""
    score: float | None = Field(default=None, ge=0, le=1)
    """The judge's overall score (kept in the details; the check's score is the share of criteria met)."""


class PointwiseVerdict(BaseModel):
    """The answer of a pointwise judge."""

    reason: str
    score: float = Field(ge=0, le=1)


def _threshold(spec: AssertionSpec, default: float) -> float:
    value = spec.options.threshold
    return default if value is None else value


def _query(context: CheckContext) -> str:
    """The user message the checked reply answers."""
    for message in reversed(context.transcript[:-1] if context.reply is not None else context.transcript):
        if message.role == "user":
            return message.content
    return ""


async def _llm_rubric(spec: AssertionSpec, context: CheckContext) -> CheckResult:
    name, turn = spec.display_name(), context.turn
    if context.judge is None:
        return no_judge(name, spec.type, spec.weight, turn)
    if context.reply is None:
        raise ValueError("llm-rubric needs a turn's reply")
    variables = {"criterion": spec.value, "reply": context.reply.text, "transcript": context.transcript}
    try:
        verdict, call = await context.judge.structured("llm-rubric", variables, RubricVerdict)
    except Exception as exc:  # a judge failure is an error result, never a score
        return judge_error(name, spec.type, spec.weight, turn, exc)
    threshold = spec.options.threshold
    passed = verdict.passed if threshold is None else verdict.score >= threshold
    score, reason = verdict.score, f"judge: {verdict.reason}"
    details: dict[str, Any] = {"judge": call.to_details(), "verdict": {"pass": verdict.passed, "score": verdict.score}}
    if threshold is None and not verdict.passed and score > FAILED_VERDICT_CAP:
        score = FAILED_VERDICT_CAP
        details["capped_from"] = verdict.score
        reason += f" (verdict fail with score {verdict.score:g}: scored {score:g}, the highest failing grade)"
    return CheckResult(name, spec.type, "passed" if passed else "failed", score, spec.weight, reason, turn, details)


async def _rubric(spec: AssertionSpec, context: CheckContext) -> CheckResult:
    name = spec.display_name()
    if context.judge is None:
        return no_judge(name, "rubric", spec.weight, None)
    if context.rubric is None:
        raise ValueError("the rubric check needs the case's rubric file")
    criteria = split_rubric(context.rubric.text)
    if not criteria:
        reason = f"the rubric file {context.rubric.path.name} has no criteria (it is empty)"
        return CheckResult(name, "rubric", "error", None, spec.weight, reason)
    variables = {"rubric": context.rubric.text, "criteria": criteria, "transcript": context.transcript}
    try:
        verdict, call = await context.judge.structured("rubric", variables, RubricFileVerdict)
    except Exception as exc:
        return judge_error(name, "rubric", spec.weight, None, exc)
    judged = _match_criteria(criteria, verdict.criteria)
    records = [_criterion_record(criterion, judged.get(criterion.id)) for criterion in criteria]
    details = {"judge": call.to_details(), "criteria": records, "judge_score": verdict.score}
    missing = [r for r in records if r["passed"] is None]
    if missing:
        listed = "; ".join(f"{r['id']}. {_short(r['text'])}" for r in missing[:3])
        reason = f"the judge gave no verdict for {len(missing)} of {len(records)} rubric criteria: {listed}"
        return CheckResult(name, "rubric", "error", None, spec.weight, reason, None, details)
    unmet = [r for r in records if not r["passed"]]
    met = len(records) - len(unmet)
    reason = f"{met} of {len(records)} rubric criteria met"
    if unmet:
        reason += "; not met: " + "; ".join(
            r["name"] + (f" ({r['explanation']})" if r["explanation"] else "") for r in unmet[:3]
        )
    status: CheckStatus = "passed" if not unmet else "failed"
    return CheckResult(name, "rubric", status, met / len(records), spec.weight, reason, None, details)


def _short(text: str, limit: int = 60) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _norm(text: str) -> str:
    return " ".join(text.replace("*", "").lower().split()).strip(" .:")


def _match_criteria(criteria: list[RubricCriterion], answers: list[CriterionVerdict]) -> dict[int, CriterionVerdict]:
    """Each criterion's verdict: by the id the judge gave, else by name (its text, or the start of it)."""
    ids = {c.id for c in criteria}
    found: dict[int, CriterionVerdict] = {}
    for answer in answers:
        if answer.id in ids and answer.id not in found:
            found[answer.id] = answer
    for answer in answers:
        if answer.id in ids or not answer.name.strip():
            continue
        wanted = _norm(answer.name)
        for criterion in criteria:
            text = _norm(criterion.text)
            if criterion.id not in found and (text == wanted or text.startswith(wanted)):
                found[criterion.id] = answer
                break
    return found


def _criterion_record(criterion: RubricCriterion, answer: CriterionVerdict | None) -> dict[str, Any]:
    """A criterion as recorded in the results: Proctor's text, the judge's verdict (`passed` null if none).

    `name` is Proctor's (the criterion's text, shortened), so reports line up the same criterion over trials.
    """
    return {
        "id": criterion.id,
        "name": _short(criterion.text, 80),
        "judge_name": None if answer is None else answer.name,
        "text": criterion.text,
        "section": criterion.section,
        "passed": None if answer is None else answer.passed,
        "explanation": "the judge gave no verdict for this criterion" if answer is None else answer.explanation,
    }


def _pointwise(kind: str, *, needs_context: bool) -> Any:
    async def check(spec: AssertionSpec, context: CheckContext) -> CheckResult:
        name, turn = spec.display_name(), context.turn
        if context.judge is None:
            return no_judge(name, spec.type, spec.weight, turn)
        if context.reply is None:
            raise ValueError(f"{kind} needs a turn's reply")
        if needs_context and not spec.value:  # a suite cannot say this (a load error); the service can
            return CheckResult(
                name,
                spec.type,
                "skipped",
                None,
                spec.weight,
                f"{kind} needs context to check the answer against: give it as the check's value",
                turn,
            )
        variables = {"query": _query(context), "answer": context.reply.text, "context": spec.value or ""}
        try:
            verdict, call = await context.judge.structured(kind, variables, PointwiseVerdict)
        except Exception as exc:
            return judge_error(name, spec.type, spec.weight, turn, exc)
        threshold = _threshold(spec, DEFAULT_THRESHOLD)
        return CheckResult(
            name,
            spec.type,
            "passed" if verdict.score >= threshold else "failed",
            verdict.score,
            spec.weight,
            f"judge: {verdict.reason} (score {verdict.score:.2f}, threshold {threshold:.2f})",
            turn,
            {"judge": call.to_details(), "threshold": threshold, "judge_reason": verdict.reason},
        )

    return check


POINTWISE_JUDGES: dict[str, tuple[str, bool]] = {
    "relevance": ("The answer addresses the user's query (judge, 0..1).", False),
    "faithfulness": ("Every claim in the answer is supported by the context given as the value (judge).", True),
    "coherence": ("The answer is internally consistent and clear (judge, 0..1).", False),
    "completeness": ("The answer covers every part of the request (judge, 0..1).", False),
    "instruction": ("The answer follows the user's instructions; optional value: the instructions (judge).", False),
}
"""The Go Eval Agent's pointwise judges: name -> (description, needs context)."""

_TEXT = TypeAdapter(Annotated[str, Field(min_length=1)])

registry.register(
    CheckType(
        "llm-rubric",
        "judges",
        "An LLM judge grades the reply against the criteria given as the value.",
        _llm_rubric,
        value=_TEXT,
        negatable=False,
        needs_model=True,
    )
)
registry.register(
    CheckType(
        "rubric",
        "judges",
        "An LLM judge grades the whole conversation against the case's rubric file (`rubric:`).",
        _rubric,
        negatable=False,
        needs_model=True,
        scope="conversation",
        internal=True,
    )
)
for _kind, (_description, _needs_context) in POINTWISE_JUDGES.items():
    registry.register(
        CheckType(
            _kind,
            "judges",
            _description,
            _pointwise(_kind, needs_context=_needs_context),
            value=_TEXT,
            # faithfulness without its context could only be skipped: in a suite that is a load error
            value_required=_needs_context,
            negatable=False,
            needs_model=True,
        )
    )
