"""The evaluation pipeline of the online service: prechecks, early exit, judges, confidence, verdict.

It runs the registered checks (`length-checker`, `overlap-checker`, `format-checker`, then the pointwise
judges) through the one check phase (`proctor.checks.check_transcript`) and scores them with
`proctor.scoring`, exactly as a batch run does; this module only maps an event to a transcript and
check results to stages. Rules:

1. Stage 1: the three prechecks (microseconds of CPU each, so they run one after the other). Their
   registered scoring functions (`proctor.checks._prechecks.PRECHECKS`) are called directly: the check
   phase's per-conversation contexts cost five times the three string functions, and stage 1 is all an
   early-exit request does (tests/service/test_pipeline.py proves the same stages as the check phase).
2. Early exit: when their mean is strictly below `early_exit_threshold`, the verdict is `fail`, the
   confidence is that mean, and no judge is called.
3. Stage 2: the configured judges run concurrently, each within `judge_timeout` seconds.
4. confidence = `precheck_weight` x stage-1 mean + `judge_weight` x stage-2 mean; verdict `pass` above
   0.8, `review` above 0.5, else `fail`.

A check that failed or could not run goes to `errors` and out of the means. When no judge produced a
score (none configured, all timed out, all answered garbage), the verdict is `error` with a `null`
confidence: a verdict on heuristics alone would pretend a judgement nobody made.
"""

from __future__ import annotations

import dataclasses
import math
import os
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio

from proctor._redact import redact
from proctor.checks import Checklist, CheckResult, CheckStatus, PhaseContext, check_transcript
from proctor.checks._judges import POINTWISE_JUDGES
from proctor.checks._judging import Judge
from proctor.checks._prechecks import PRECHECKS, PrecheckScore
from proctor.errors import ConfigError, ModelError
from proctor.models import GenerateConfig, ModelCache, ModelSettings, get_model
from proctor.scoring import blend_confidence, early_exit, mean_score, verdict_band
from proctor.service._judges_config import ConfiguredJudge, JudgeReplyError, load_judges_config
from proctor.service._models import EvaluationRequest, EvaluationResult, Stage, StageError, Verdict
from proctor.suite import AssertionSpec
from proctor.transcript import Message

if TYPE_CHECKING:
    from proctor.models import Model

PrecheckFunction = Callable[[str, str], PrecheckScore]
"""A precheck's scoring function of the query and the answer."""

__all__ = ["DEFAULT_JUDGES", "JUDGES", "Pipeline", "PipelineConfig", "ServiceSettings", "StageOne", "build_pipeline"]

JUDGES = tuple(POINTWISE_JUDGES)
"""Every judge the pipeline can run: relevance, faithfulness, coherence, completeness, instruction."""
DEFAULT_JUDGES = JUDGES
"""The judges run unless configured otherwise: all five, as the Go Eval Agent runs them with its own
`configs/judges.yaml` (every evaluator enabled: "8 stages (3 prechecks + 5 judges)")."""
CONFIGURED_PASS = 0.7
"""A configured judge's check status (`passed` at or above): the service's verdict uses its score only."""
NO_JUDGE = (
    "no judge model configured: start with --judge provider/model (or set PROCTOR_JUDGE_MODEL, "
    "or CLAUDE_MODEL_ID for a Bedrock Claude model)"
)


@dataclass(frozen=True, slots=True)
class PipelineConfig:
    """How events are scored. Invalid values raise `ConfigError` naming the setting."""

    early_exit_threshold: float = 0.2
    """Stop after the prechecks (verdict `fail`) when their mean is below this (`EARLY_EXIT_THRESHOLD`)."""
    precheck_weight: float = 0.3
    """The prechecks' share of the confidence (`PRECHECK_WEIGHT`)."""
    judge_weight: float = 0.7
    """The judges' share of the confidence (`LLM_JUDGE_WEIGHT`)."""
    judges: tuple[str, ...] = DEFAULT_JUDGES
    """The judges of stage 2, by name (`JUDGES`)."""
    judge_timeout: float = 30.0
    """Seconds one judge may take, retries included; past it the judge is an error, not a score."""
    judges_config: Path | None = None
    """The Go Eval Agent's `judges.yaml` (`JUDGES_CONFIG_PATH`): its enabled evaluators, with their
    prompts and model parameters, are the judges (unless `judges` names some of them)."""
    configured: tuple[ConfiguredJudge, ...] = field(default=(), compare=False)
    """The judges read from `judges_config` (filled in when the config is built)."""

    def __post_init__(self) -> None:
        if self.judges_config is not None:
            configured = load_judges_config(Path(self.judges_config))
            object.__setattr__(self, "configured", configured)
            if self.judges == DEFAULT_JUDGES:
                object.__setattr__(self, "judges", tuple(judge.name for judge in configured))
        self._validate()

    @property
    def known_judges(self) -> tuple[str, ...]:
        """The judges this configuration can run: the built-in five and the configured ones."""
        return tuple(dict.fromkeys((*JUDGES, *(judge.name for judge in self.configured))))

    def _validate(self) -> None:
        if not 0 <= self.early_exit_threshold <= 1:
            raise ConfigError(f"early exit threshold must be in 0..1, got {self.early_exit_threshold}")
        for label, weight in (("precheck", self.precheck_weight), ("judge", self.judge_weight)):
            if not (math.isfinite(weight) and weight >= 0):
                raise ConfigError(f"{label} weight must be a number >= 0, got {weight}")
        if abs(self.precheck_weight + self.judge_weight - 1) > 1e-6:
            raise ConfigError(
                f"precheck weight ({self.precheck_weight}) and judge weight ({self.judge_weight}) must add up to 1"
            )
        known = self.known_judges
        if not self.judges:
            raise ConfigError(f"at least one judge is needed; judges: {', '.join(known)}")
        unknown = [name for name in self.judges if name not in known]
        if unknown:
            raise ConfigError(f"unknown judge {unknown[0]!r}; judges: {', '.join(known)}")
        if len(set(self.judges)) != len(self.judges):
            raise ConfigError(f"a judge is named twice in {', '.join(self.judges)}")
        if not self.judge_timeout > 0:
            raise ConfigError(f"judge timeout must be > 0 seconds, got {self.judge_timeout}")


@dataclass(frozen=True, slots=True)
class ServiceSettings:
    """Everything `proctor serve`, `consume`, `score` and `calibrate` need to build a pipeline."""

    pipeline: PipelineConfig = field(default_factory=PipelineConfig)
    """The scoring rules."""
    judge_model: str | None = None
    """The judge, `provider/model`; `None`: no judge, so events that pass stage 1 get verdict `error`."""
    judge_base_url: str | None = None
    """The judge's endpoint, overriding the provider's default and environment."""
    judge_api_key: str | None = field(default=None, repr=False)
    """The judge's API key, overriding the provider's environment variable."""
    judge_concurrency: int = 16
    """Judge requests in flight at once, over all events."""
    cache_dir: Path | None = None
    """Cache deterministic judge calls here; `None` (the default for a service): no cache."""

    def to_json(self) -> dict[str, Any]:
        """The settings as JSON (to hand them to worker processes)."""
        pipeline = self.pipeline
        return {
            "pipeline": {
                "early_exit_threshold": pipeline.early_exit_threshold,
                "precheck_weight": pipeline.precheck_weight,
                "judge_weight": pipeline.judge_weight,
                "judges": list(pipeline.judges),
                "judge_timeout": pipeline.judge_timeout,
                "judges_config": None if pipeline.judges_config is None else str(pipeline.judges_config),
            },
            "judge_model": self.judge_model,
            "judge_base_url": self.judge_base_url,
            "judge_api_key": self.judge_api_key,
            "judge_concurrency": self.judge_concurrency,
            "cache_dir": None if self.cache_dir is None else str(self.cache_dir),
        }

    @classmethod
    def from_environment(cls, environ: Mapping[str, str] | None = None, **overrides: Any) -> ServiceSettings:
        """Settings from `PROCTOR_*` variables, then the Go Eval Agent's, then the defaults.

        For commands that build a pipeline without the service's own options (e.g. `proctor score`):
        `PROCTOR_JUDGE_MODEL` (else `CLAUDE_MODEL_ID` as `bedrock/<id>`), `PROCTOR_JUDGE_BASE_URL`,
        `PROCTOR_JUDGE_API_KEY`, `PROCTOR_JUDGES`, `PROCTOR_JUDGES_CONFIG` (`JUDGES_CONFIG_PATH`),
        `PROCTOR_JUDGE_TIMEOUT`, `PROCTOR_JUDGE_CONCURRENCY`,
        `PROCTOR_EARLY_EXIT_THRESHOLD` (`EARLY_EXIT_THRESHOLD`), `PROCTOR_PRECHECK_WEIGHT`
        (`PRECHECK_WEIGHT`), `PROCTOR_JUDGE_WEIGHT` (`LLM_JUDGE_WEIGHT`).

        Args:
            environ: The variables (default `os.environ`).
            **overrides: Field values that win over the environment when not `None` (`judge_model`,
                `judge_concurrency`, `cache_dir`, ...).

        Raises:
            ConfigError: A variable is not a valid number, or the values are invalid together.
        """
        env = os.environ if environ is None else environ

        def first(*names: str) -> str | None:
            return next((env[name] for name in names if env.get(name)), None)

        def number(default: float, *names: str) -> float:
            raw = first(*names)
            if raw is None:
                return default
            try:
                return float(raw)
            except ValueError:
                raise ConfigError(f"{next(n for n in names if env.get(n))}={raw!r} is not a number") from None

        judges = first("PROCTOR_JUDGES")
        judges_config = first("PROCTOR_JUDGES_CONFIG", "JUDGES_CONFIG_PATH")
        pipeline = PipelineConfig(
            early_exit_threshold=number(0.2, "PROCTOR_EARLY_EXIT_THRESHOLD", "EARLY_EXIT_THRESHOLD"),
            precheck_weight=number(0.3, "PROCTOR_PRECHECK_WEIGHT", "PRECHECK_WEIGHT"),
            judge_weight=number(0.7, "PROCTOR_JUDGE_WEIGHT", "LLM_JUDGE_WEIGHT"),
            judges=tuple(j.strip() for j in judges.split(",") if j.strip()) if judges else DEFAULT_JUDGES,
            judge_timeout=number(30.0, "PROCTOR_JUDGE_TIMEOUT"),
            judges_config=Path(judges_config) if judges_config else None,
        )
        claude = first("CLAUDE_MODEL_ID")
        values: dict[str, Any] = {
            "pipeline": pipeline,
            "judge_model": first("PROCTOR_JUDGE_MODEL") or (f"bedrock/{claude}" if claude else None),
            "judge_base_url": first("PROCTOR_JUDGE_BASE_URL"),
            "judge_api_key": first("PROCTOR_JUDGE_API_KEY"),
            "judge_concurrency": int(number(16, "PROCTOR_JUDGE_CONCURRENCY")),
        }
        values.update({key: value for key, value in overrides.items() if value is not None})
        return cls(**values)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> ServiceSettings:
        """Rebuild settings from `to_json`'s form."""
        pipeline = dict(data["pipeline"])
        pipeline["judges"] = tuple(pipeline["judges"])
        if pipeline.get("judges_config") is not None:
            pipeline["judges_config"] = Path(pipeline["judges_config"])
        cache_dir = data.get("cache_dir")
        return cls(
            PipelineConfig(**pipeline),
            data.get("judge_model"),
            data.get("judge_base_url"),
            data.get("judge_api_key"),
            int(data.get("judge_concurrency", 16)),
            None if cache_dir is None else Path(cache_dir),
        )


@dataclass(slots=True)
class StageOne:
    """Stage 1's outcome when it did not end the evaluation."""

    transcript: list[Message]
    stages: list[Stage]
    errors: list[StageError]
    mean: float | None


def _precheck_scores() -> tuple[tuple[str, PrecheckFunction], ...]:
    return tuple((name, score) for name, (_, score) in PRECHECKS.items())


class Pipeline:
    """Scores events. One per process; safe to share between concurrent evaluations.

    Args:
        config: The scoring rules.
        judge: The judge model with its prompts; `None` when no judge model is configured.
    """

    def __init__(
        self, config: PipelineConfig | None = None, judge: Judge | None = None, judge_once: Model | None = None
    ) -> None:
        self.config = config or PipelineConfig()
        self.judge = judge
        self.judge_once = judge_once
        """The judge model without retries, for configured judges with `retry: false`."""
        self._prechecks = _precheck_scores()
        self._configured = {judge.name: judge for judge in self.config.configured}

    @property
    def judge_model(self) -> str | None:
        """The judge model's name, or `None`."""
        return None if self.judge is None else self.judge.name

    @staticmethod
    def transcript(request: EvaluationRequest) -> list[Message]:
        """An event as a conversation: its query, then its answer."""
        interaction = request.interaction
        return [Message("user", interaction.user_query), Message("assistant", interaction.answer)]

    def stage_one(self, request: EvaluationRequest) -> EvaluationResult | StageOne:
        """Run the prechecks: the final result on an early exit, else what stage 2 continues from."""
        interaction = request.interaction
        query, answer = interaction.user_query, interaction.answer
        stages: list[Stage] = []
        errors: list[StageError] = []
        for name, score in self._prechecks:
            started = time.perf_counter_ns()
            try:
                value, reason = score(query, answer)
            except Exception as exc:  # as the check phase reports a check that raised: an error, not a score
                reason = redact(f"check could not run: {type(exc).__name__}: {exc}")
                errors.append(StageError(name=name, status="error", reason=reason, duration_ns=_since(started)))
                continue
            if value is None:
                errors.append(StageError(name=name, status="skipped", reason=reason, duration_ns=_since(started)))
            else:
                stages.append(Stage(name=name, score=value, reason=reason, duration_ns=_since(started)))
        mean = sum(stage.score for stage in stages) / len(stages) if stages else None  # scoring.mean_score's
        if early_exit(mean, self.config.early_exit_threshold):
            assert mean is not None
            return EvaluationResult(
                id=request.event_id, stages=stages, confidence=_round(mean), verdict="fail", errors=errors
            )
        return StageOne(self.transcript(request), stages, errors, mean)

    async def evaluate(self, request: EvaluationRequest) -> EvaluationResult:
        """Evaluate one event (never raises for a judge failure: it lands in `errors`)."""
        first = self.stage_one(request)
        if isinstance(first, EvaluationResult):
            return first
        return await self.stage_two(request, first)

    async def stage_two(self, request: EvaluationRequest, first: StageOne) -> EvaluationResult:
        """Run the judges after `stage_one` and score the event."""
        results = await self._run_judges(request, first.transcript, self.config.judges)
        judged, failed = _stages(results)
        stages, errors = [*first.stages, *judged], [*first.errors, *failed]
        judge_mean = mean_score(results)
        if judge_mean is None:
            return EvaluationResult(id=request.event_id, stages=stages, confidence=None, verdict="error", errors=errors)
        config = self.config
        confidence = blend_confidence(
            first.mean, judge_mean, precheck_weight=config.precheck_weight, judge_weight=config.judge_weight
        )
        return EvaluationResult(
            id=request.event_id,
            stages=stages,
            confidence=_round(confidence),
            verdict=verdict_band(confidence),
            errors=errors,
        )

    async def evaluate_judge(self, request: EvaluationRequest, name: str, threshold: float = 0.7) -> EvaluationResult:
        """Run one judge alone: confidence is its score, verdict `pass` above `threshold`, else `fail`.

        Args:
            request: The event.
            name: A judge name (`relevance` or `relevance-judge`).
            threshold: The score to beat, 0..1 (strictly above passes, as the Go Eval Agent does).

        Raises:
            KeyError: Unknown judge name.
        """
        judge = self.resolve_judge(name)
        (result,) = await self._run_judges(request, self.transcript(request), (judge,))
        stages, errors = _stages([result])
        if not stages:
            return EvaluationResult(id=request.event_id, stages=[], confidence=None, verdict="error", errors=errors)
        (stage,) = stages
        verdict: Verdict = "pass" if stage.score > threshold else "fail"
        return EvaluationResult(id=request.event_id, stages=stages, confidence=_round(stage.score), verdict=verdict)

    def resolve_judge(self, name: str) -> str:
        """The judge called `name` (with or without the `-judge` suffix).

        Raises:
            KeyError: Unknown name; the message lists the judges.
        """
        base = name.removesuffix("-judge")
        if base not in self.config.known_judges:
            raise KeyError(f"unknown judge {name!r}; judges: {', '.join(self.config.known_judges)}")
        return base

    async def _run_judges(
        self, request: EvaluationRequest, transcript: list[Message], names: Sequence[str]
    ) -> list[CheckResult]:
        """The named judges' results, in order (a judge that cannot run is `skipped` or `error`, never a score).

        Built-in judges go through the check phase; judges of a judges file (`--judges-config`) have
        their own prompt and reply format and are called directly, within the same time limit.
        """
        if self.judge is None:  # nothing can judge: every judge is skipped, with the option that fixes it
            return [CheckResult(f"{name}-judge", name, "skipped", None, reason=NO_JUDGE) for name in names]
        builtin = [name for name in names if name not in self._configured]
        specs = tuple(self._judge_spec(request, name) for name in builtin)
        phase = PhaseContext(self.judge, judge_timeout=self.config.judge_timeout)
        configured: dict[str, CheckResult] = {}

        async def one(name: str) -> None:
            configured[name] = await self._configured_judge(request, self._configured[name])

        async with anyio.create_task_group() as group:
            for name in names:
                if name not in builtin:
                    group.start_soon(one, name)
            phase_results = await check_transcript(Checklist(request.event_id, (specs,)), transcript, phase)
        for name, spec, result in zip(builtin, specs, phase_results, strict=True):
            self._explain(name, spec, result)
        by_name = dict(zip(builtin, phase_results, strict=True)) | configured
        return [by_name[name] for name in names]

    def _explain(self, name: str, spec: AssertionSpec, result: CheckResult) -> None:
        """Reasons in the service's words: no context, a timeout."""
        if result.status == "skipped" and spec.value is None and POINTWISE_JUDGES[name][1]:
            result.reason = f"{name} needs the interaction's context to check the answer against; this event has none"
        elif result.status == "error" and result.reason.startswith("check could not run: no result within"):
            result.reason = f"judge timed out after {self.config.judge_timeout:g} s"

    def _judge_spec(self, request: EvaluationRequest, name: str) -> AssertionSpec:
        if POINTWISE_JUDGES[name][1] and request.interaction.context.strip():  # needs the context
            return AssertionSpec(type=name, name=f"{name}-judge", value=request.interaction.context)
        return AssertionSpec(type=name, name=f"{name}-judge")

    async def _configured_judge(self, request: EvaluationRequest, judge: ConfiguredJudge) -> CheckResult:
        """Run a judge of the judges file: its prompt, its model parameters, its reply format."""
        assert self.judge is not None
        stage = f"{judge.name}-judge"
        interaction = request.interaction
        if judge.requires_context and not interaction.context.strip():
            reason = f"{judge.name} requires the interaction's context (requires_context); this event has none"
            return CheckResult(stage, judge.name, "skipped", None, reason=reason)
        prompt = judge.render(interaction.user_query, interaction.answer, interaction.context, request.event_id)
        model = self.judge.model if judge.retry or self.judge_once is None else self.judge_once
        config = GenerateConfig(temperature=judge.temperature, max_tokens=judge.max_tokens)
        started = time.perf_counter_ns()
        timeout = self.config.judge_timeout
        try:
            with anyio.fail_after(timeout):
                response = await model.generate([{"role": "user", "content": prompt}], config, role="judge")
            score, reason = judge.parse(response.text)
        except TimeoutError:
            result = CheckResult(stage, judge.name, "error", None, reason=f"judge timed out after {timeout:g} s")
        except (ModelError, JudgeReplyError) as exc:
            result = CheckResult(stage, judge.name, "error", None, reason=str(exc))
        else:
            status: CheckStatus = "passed" if score >= CONFIGURED_PASS else "failed"
            result = CheckResult(stage, judge.name, status, score, reason=reason, details={"judge_reason": reason})
        result.duration_ns = time.perf_counter_ns() - started
        return result

    async def aclose(self) -> None:
        """Close the judge model's connections."""
        if self.judge is not None:
            await self.judge.model.aclose()
        if self.judge_once is not None:
            await self.judge_once.aclose()


def _stages(results: Sequence[CheckResult]) -> tuple[list[Stage], list[StageError]]:
    """Check results as the service's response shape: scored ones are stages, the others errors."""
    stages: list[Stage] = []
    errors: list[StageError] = []
    for result in results:
        took = result.duration_ns or 0
        if result.score is None:
            status = "skipped" if result.status == "skipped" else "error"
            # a judge failure may quote the judge endpoint: no userinfo or key goes back to API clients
            errors.append(StageError(name=result.name, status=status, reason=redact(result.reason), duration_ns=took))
        else:
            reason = str(result.details.get("judge_reason", result.reason))
            stages.append(Stage(name=result.name, score=result.score, reason=reason, duration_ns=took))
    return stages, errors


def _since(started: int) -> int:
    return time.perf_counter_ns() - started


def _round(value: float) -> float:
    return round(value, 6)


def build_pipeline(settings: ServiceSettings) -> Pipeline:
    """Build the pipeline `settings` describe, with its judge model when one is named.

    Raises:
        ConfigError: Unknown provider or bad model settings.
        proctor.errors.ModelUnavailable: The provider's SDK is not installed.
    """
    if settings.judge_model is None:
        return Pipeline(settings.pipeline)

    if settings.judge_concurrency < 1:
        raise ConfigError(f"judge concurrency must be >= 1, got {settings.judge_concurrency}")
    model_settings = ModelSettings(
        base_url=settings.judge_base_url,
        api_key=settings.judge_api_key,
        concurrency=settings.judge_concurrency,
        cache=None if settings.cache_dir is None else ModelCache(settings.cache_dir),
    )
    judge = Judge(get_model(settings.judge_model, settings=model_settings))
    once = None
    if any(not j.retry and j.name in settings.pipeline.judges for j in settings.pipeline.configured):
        once = get_model(settings.judge_model, settings=dataclasses.replace(model_settings, max_retries=0))
    return Pipeline(settings.pipeline, judge, once)
