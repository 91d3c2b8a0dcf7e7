"""The judge: renders a prompt template, asks the judge model, and records how it judged.

Every judged `CheckResult` carries, in `details["judge"]`, the judge model, the prompt template name and a
hash of the template text, plus the call's usage, cost and whether it came from the cache. A judge that
fails (unreachable, timed out, unparsable twice) gives an `error` result with the raw outputs kept:
never a made-up score.
"""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from pydantic import BaseModel

from proctor.checks._registry import registry
from proctor.checks._result import CheckResult
from proctor.errors import BudgetExceeded, ModelOutputError

if TYPE_CHECKING:
    from collections.abc import Iterable

    import jinja2

    from proctor.models import GenerateConfig, Model, ModelResponse, Structured
    from proctor.suite import Case

__all__ = ["PROMPTS_DIR", "Judge", "JudgeCall", "judge_error", "no_judge", "unjudged_checks"]

PROMPTS_DIR = Path(__file__).parent / "prompts"
"""The built-in prompt templates (`<check type>.j2`)."""

NO_JUDGE_HINT = (
    "no judge model configured: pass --judge provider/model (e.g. openai/gpt-4.1-mini or "
    "ollama/llama3.1), set PROCTOR_JUDGE_MODEL, or add 'judge:' to the suite"
)

T = TypeVar("T", bound=BaseModel)


@dataclass(slots=True)
class JudgeCall:
    """What one judge call cost and how it was made, for `CheckResult.details`."""

    model: str
    template: str
    template_sha: str
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float | None = None
    cached: bool = False
    calls: int = 1
    attempts: int = 1
    raw_outputs: list[str] = field(default_factory=list)

    def add(self, response: ModelResponse) -> None:
        """Account one more response to this call (for multi-request judges such as G-Eval)."""
        self.prompt_tokens += response.usage.prompt_tokens
        self.completion_tokens += response.usage.completion_tokens
        if response.cost_usd is not None:
            self.cost_usd = (self.cost_usd or 0.0) + response.cost_usd
        self.cached = self.cached and response.cached

    def to_details(self) -> dict[str, Any]:
        """The `details["judge"]` entry."""
        return {
            "model": self.model,
            "template": self.template,
            "template_sha": self.template_sha,
            "usage": {"prompt": self.prompt_tokens, "completion": self.completion_tokens},
            "cost_usd": self.cost_usd,
            "cached": self.cached,
            "calls": self.calls,
            "attempts": self.attempts,
        }


class Judge:
    """A judge model with its prompt templates.

    Args:
        model: The model that judges (never the agent under test unless the user named it).
        prompts: Overrides by check type: a path to a Jinja file, or the template text itself.
        base_dir: Relative prompt paths are read from here (the suite file's directory).
    """

    def __init__(self, model: Model, prompts: Mapping[str, str] | None = None, base_dir: Path | None = None) -> None:
        import jinja2  # on first use: keeps `import proctor.checks` light
        import jinja2.sandbox  # issue 16: prompt overrides come from suite files, which are data

        self.model = model
        overrides: dict[str, str] = {}
        for name, value in (prompts or {}).items():
            path = (base_dir or Path.cwd()) / value
            overrides[f"{name}.j2"] = (
                path.read_text(encoding="utf-8") if "\n" not in value and path.is_file() else value
            )
        # auto_reload off: a template is read once per judge, as its hash is (`_hash`); jinja would otherwise
        # stat the built-in prompt files on every render (two calls per judged check, issue 22)
        self._env: jinja2.Environment = jinja2.sandbox.SandboxedEnvironment(
            loader=jinja2.ChoiceLoader([jinja2.DictLoader(overrides), jinja2.FileSystemLoader(PROMPTS_DIR)]),
            undefined=jinja2.StrictUndefined,
            autoescape=False,
            keep_trailing_newline=True,
            auto_reload=False,
        )
        self._hashes: dict[str, str] = {}
        self._templates: dict[str, tuple[jinja2.Template, dict[str, Any]]] = {}
        self._system = self._env.get_template("_system.j2").render().strip()

    @property
    def name(self) -> str:
        """The judge model's name."""
        return self.model.name

    def _hash(self, template: str) -> str:
        found = self._hashes.get(template)
        if found is None:
            # on first use: `proctor.models` is heavy, and `import proctor.checks` (schema, list) stays light
            from proctor.models import prompt_hash

            loader = self._env.loader
            assert loader is not None
            source, _, _ = loader.get_source(self._env, f"{template}.j2")
            found = self._hashes[template] = prompt_hash(source)
        return found

    def messages(self, template: str, variables: Mapping[str, Any]) -> list[dict[str, str]]:
        """Render `template` into the chat messages sent to the judge."""
        found = self._templates.get(template)
        if found is None:
            compiled = self._env.get_template(f"{template}.j2")
            found = self._templates[template] = (compiled, dict(compiled.globals))
        compiled, names = found
        # `Template.render`'s steps with the template's globals copied once: jinja would merge them into the
        # variables on every render by iterating their ChainMap (half of a judge prompt's render, issue 22);
        # the context is the one `new_context(..., shared=True)` builds, given the copy, whose keys are
        # cheaper to list than the ChainMap's
        context = compiled.environment.context_class(
            compiled.environment, {**names, **variables}, compiled.name, compiled.blocks, globals=names
        )
        try:
            prompt = self._env.concat(compiled.root_render_func(context))
        except Exception:
            self._env.handle_exception()  # raises it again, with the template's lines in the traceback
        return [{"role": "system", "content": self._system}, {"role": "user", "content": prompt}]

    def new_call(self, template: str) -> JudgeCall:
        """Start accounting for a judge call made with `template`."""
        return JudgeCall(self.name, template, self._hash(template), cached=True, calls=0)

    async def structured(self, template: str, variables: Mapping[str, Any], output: type[T]) -> tuple[T, JudgeCall]:
        """Ask for a structured verdict of type `output`.

        Raises:
            proctor.errors.ModelError: The call failed; `ModelOutputError` carries the raw outputs.
        """
        call = self.new_call(template)
        result = await _generate_structured()(self.model, self.messages(template, variables), output, role="judge")
        call.calls = 1
        call.attempts = result.attempts
        call.raw_outputs = list(result.raw_outputs)
        call.add(result.response)
        return result.value, call

    async def generate(
        self, template: str, variables: Mapping[str, Any], config: GenerateConfig, call: JudgeCall
    ) -> ModelResponse:
        """Ask for free text (e.g. a G-Eval score), accounting the response to `call`."""
        response = await self.model.generate(self.messages(template, variables), config, role="judge")
        call.calls += 1
        call.add(response)
        return response


@functools.cache
def _generate_structured() -> Callable[..., Awaitable[Structured[Any]]]:
    """The `proctor.models.generate_structured` function, imported once, on first use.

    `proctor.models` is heavy, and `import proctor.checks` for the schema or a listing stays light; an
    import statement in each judge call would cost a module lookup each time.
    """
    from proctor.models import generate_structured  # on first use: `proctor.models` is heavy (see above)

    return generate_structured


def no_judge(name: str, kind: str, weight: float, turn: int | None) -> CheckResult:
    """The `skipped` result of a judge check when no judge model is configured."""
    return CheckResult(name, kind, "skipped", None, weight, NO_JUDGE_HINT, turn)


def judge_error(
    name: str, kind: str, weight: float, turn: int | None, exc: Exception, call: JudgeCall | None = None
) -> CheckResult:
    """The `error` result of a judge check that could not run; raw outputs are kept in the details."""
    details: dict[str, Any] = {}
    if call is not None:
        details["judge"] = call.to_details()
    if isinstance(exc, ModelOutputError):
        details["raw_outputs"] = list(exc.raw_outputs)
        reason = f"judge output could not be used: {exc}"
    elif isinstance(exc, BudgetExceeded):
        reason = f"not judged: {exc}"
    else:
        reason = f"judge could not run: {type(exc).__name__}: {exc}"
    return CheckResult(name, kind, "error", None, weight, reason, turn, details)


def unjudged_checks(cases: Iterable[Case], judge: str | None) -> list[tuple[Case, str]]:
    """The LLM-judged checks no judge model would grade: the first one of each such case.

    A case is graded by `judge` (the `--judge` option) or else its suite's `judge:`; a check is LLM-judged
    when its registered type says `needs_model` (or it is the case's `rubric:` file).

    Args:
        cases: The cases about to run.
        judge: The judge model given for the whole run, if any.

    Returns:
        `(case, check name)` for every case with a judged check and no judge model.
    """
    found: list[tuple[Case, str]] = []
    for case in cases:
        if judge is not None or case.judge is not None:
            continue
        specs = [*(spec for turn in case.turns for spec in turn.assert_), *case.assert_]
        judged = next((spec.display_name() for spec in specs if registry.resolve(spec.type)[0].needs_model), None)
        if judged is None and case.rubric is not None:
            judged = f"rubric: {case.rubric.path.name}"
        if judged is not None:
            found.append((case, judged))
    return found
