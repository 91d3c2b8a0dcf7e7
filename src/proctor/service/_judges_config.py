"""The Go Eval Agent's `configs/judges.yaml`: which judges run, their prompts and model parameters.

```yaml
judges:
  default_model: {max_tokens: 256, temperature: 0.0, retry: true}
  evaluators:
    - name: relevance
      enabled: true
      requires_context: false
      prompt: |
        Score how relevant the answer is ... Query: {{.Query}} Answer: {{.Answer}}
        Respond ONLY in raw JSON: {"score": <float>, "reason": "<string>"}
      model: {max_tokens: 256, temperature: 0.0, retry: false}
```

Read as the Go service reads it (`internal/config/judges.go`, `internal/judge/llm_judge.go`): the enabled
evaluators, in file order, are the judges of stage 2 (stage `<name>-judge`); a judge's `model` falls back
field by field to `default_model` (`max_tokens` 256 when neither sets it); names are unique, prompts
non-empty, temperatures in 0..1. The prompt is a Go template over the event (`{{.Query}}`,
`{{.Answer}}`, `{{.Context}}`, `{{.RequestID}}`, `{{.CreatedAt}}`), sent as one user message; the reply
is JSON `{"score", "reason"}` (a Markdown code fence is stripped), the score in 0..1. `retry: false`
sends once; `true` retries as the judge model is configured to. A judge that `requires_context` is
skipped for an event without context.

Deviations, each deliberate: a reply that is not such JSON, or a score out of range, is a stage *error*
(out of the means), where the Go service records a score of 0; Go template actions other than the fields
above (`{{if}}`, pipelines) are refused when the file is read, with the judge and the action named.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from proctor.errors import ConfigError
from proctor.suite._yaml import fast_load

__all__ = ["ConfiguredJudge", "JudgeReplyError", "load_judges_config"]

TEMPLATE_FIELDS = ("RequestID", "Query", "Context", "Answer", "CreatedAt")
"""The fields of the Go service's `EvaluationContext` a prompt may use."""
DEFAULT_MAX_TOKENS = 256
_ACTION = re.compile(r"{{-?\s*(.*?)\s*-?}}", re.DOTALL)
_FIELD = re.compile(r"\.([A-Za-z_][A-Za-z0-9_]*)")


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")

    max_tokens: int = Field(default=0, ge=0)
    temperature: float = Field(default=0.0, ge=0.0, le=1.0)
    retry: bool = False


class _Evaluator(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str = Field(min_length=1)
    enabled: bool = False
    description: str = ""
    requires_context: bool = False
    prompt: str = Field(min_length=1)
    model: _Model | None = None


class _Judges(BaseModel):
    model_config = ConfigDict(extra="forbid")

    default_model: _Model = Field(default_factory=_Model)
    evaluators: list[_Evaluator] = Field(min_length=1)


class _File(BaseModel):
    model_config = ConfigDict(extra="forbid")

    judges: _Judges


class JudgeReplyError(ValueError):
    """The judge's reply is not `{"score", "reason"}` JSON with a score in 0..1."""


@dataclass(frozen=True, slots=True)
class ConfiguredJudge:
    """One enabled judge of a judges file, with its model parameters resolved."""

    name: str
    """The judge's name (its stage is `<name>-judge`)."""
    prompt: str
    """The Go template of its prompt."""
    requires_context: bool
    """Skip events without context."""
    max_tokens: int
    """The reply's token limit."""
    temperature: float
    """The sampling temperature."""
    retry: bool
    """Retry a failed call (as the judge model's settings say) or send once."""
    description: str = ""

    def render(self, query: str, answer: str, context: str = "", request_id: str = "") -> str:
        """The prompt for one event, its Go template fields filled in."""
        values = {
            "RequestID": request_id,
            "Query": query,
            "Context": context,
            "Answer": answer,
            "CreatedAt": datetime.now(UTC).isoformat(),
        }
        return _ACTION.sub(lambda match: values[_FIELD.fullmatch(match.group(1)).group(1)], self.prompt)  # type: ignore[union-attr]

    @staticmethod
    def parse(text: str) -> tuple[float, str]:
        """The `(score, reason)` of a reply, as the Go service reads it.

        Raises:
            JudgeReplyError: Not JSON with a number `score` in 0..1 (or both empty).
        """
        content = _strip_fence(text)
        try:
            data = json.loads(content)
        except ValueError as exc:
            raise JudgeReplyError(f"the judge's reply is not JSON: {content[:120]!r}") from exc
        if not isinstance(data, dict) or not isinstance(data.get("score", 0), int | float):
            raise JudgeReplyError(f"the judge's reply has no number 'score': {content[:120]!r}")
        score, reason = float(data.get("score", 0.0)), str(data.get("reason") or "")
        if score == 0.0 and not reason:
            raise JudgeReplyError("invalid judge reply: missing score and reason")
        if not 0.0 <= score <= 1.0:
            raise JudgeReplyError(f"invalid judge reply: score {score} out of range [0.0, 1.0]")
        return score, reason


def _strip_fence(content: str) -> str:
    content = content.strip()
    if content.startswith("```"):
        newline = content.find("\n")
        closing = content.rfind("```")
        if newline != -1 and closing > newline:
            return content[newline + 1 : closing].strip()
    return content


def load_judges_config(path: Path) -> tuple[ConfiguredJudge, ...]:
    """Read a judges file; return its enabled judges in file order.

    Raises:
        ConfigError: Unreadable, invalid (the message names the file and the field), or no judge enabled.
    """
    try:
        data = fast_load(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read the judges configuration: {exc.strerror or exc}") from exc
    except Exception as exc:  # a YAML error: one located message
        raise ConfigError(f"{path}: not valid YAML: {exc}") from exc
    try:
        parsed = _File.model_validate(data)
    except ValidationError as exc:
        error = exc.errors()[0]
        where = ".".join(str(p) for p in error["loc"])
        raise ConfigError(f"{path}: {where}: {error['msg']}") from None
    default = parsed.judges.default_model
    seen: set[str] = set()
    judges: list[ConfiguredJudge] = []
    for index, entry in enumerate(parsed.judges.evaluators):
        where = f"{path}: judges.evaluators.{index} ({entry.name})"
        if entry.name in seen:
            raise ConfigError(f"{where}: duplicate judge name {entry.name!r}")
        seen.add(entry.name)
        _check_template(entry.prompt, where)
        if not entry.enabled:
            continue
        model = entry.model
        judges.append(
            ConfiguredJudge(
                name=entry.name,
                prompt=entry.prompt,
                requires_context=entry.requires_context,
                max_tokens=(model.max_tokens if model and model.max_tokens else default.max_tokens)
                or DEFAULT_MAX_TOKENS,
                temperature=model.temperature if model and model.temperature else default.temperature,
                retry=model.retry if model is not None else default.retry,
                description=entry.description,
            )
        )
    if not judges:
        raise ConfigError(f"{path}: no enabled judges (set enabled: true on at least one evaluator)")
    return tuple(judges)


def _check_template(prompt: str, where: str) -> None:
    for match in _ACTION.finditer(prompt):
        field = _FIELD.fullmatch(match.group(1))
        if field is None or field.group(1) not in TEMPLATE_FIELDS:
            raise ConfigError(
                f"{where}: prompt: template action {match.group(0)!r} is not supported; use the fields "
                + ", ".join("{{." + name + "}}" for name in TEMPLATE_FIELDS)
            )
