"""The judge: renders a prompt template, asks the judge model, and records how it judged.

Every judged `CheckResult` carries, in `details["judge"]`, the judge model, the prompt template name and a
hash of the template text, plus the call's usage, cost and whether it came from the cache. A judge that
fails (unreachable, timed out, unparsable twice) gives an `error` result with the raw outputs kept:
never a made-up score.
"""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable, Iterator, Mapping
from dataclasses import dataclass, field, fields, is_dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Literal, TypeVar, get_args, get_origin, get_type_hints

from pydantic import BaseModel

from proctor.checks._registry import registry
from proctor.checks._result import CheckResult
from proctor.errors import BudgetExceeded, ModelOutputError
from proctor.suite import AssertionSpec

if TYPE_CHECKING:
    from collections.abc import Iterable

    import jinja2

    from proctor.models import GenerateConfig, Model, ModelResponse, Structured
    from proctor.suite import Case

__all__ = [
    "PROMPTS_DIR",
    "TRANSCRIPT_JUDGE",
    "Judge",
    "JudgeCall",
    "judge_error",
    "judged_checks",
    "no_judge",
    "unjudged_checks",
]

PROMPTS_DIR = Path(__file__).parent / "prompts"
"""The built-in prompt templates (`<check type>.j2`)."""

NO_JUDGE_HINT = (
    "no judge model configured: pass --judge provider/model (e.g. openai/gpt-4.1-mini or "
    "ollama/llama3.1), set PROCTOR_JUDGE_MODEL, or add 'judge:' to the suite"
)

TRANSCRIPT_JUDGE = "transcript: tasks"
"""The transcript judge's result name (`proctor.checks._transcript.NAME`, which imports this module)."""

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

        from proctor._jinja import LimitedSandbox, budget  # on first use too (it imports Jinja)

        self.model = model
        overrides: dict[str, str] = {}
        for name, value in (prompts or {}).items():
            path = (base_dir or Path.cwd()) / value
            overrides[f"{name}.j2"] = (
                path.read_text(encoding="utf-8") if "\n" not in value and path.is_file() else value
            )
        # auto_reload off: a template is read once per judge, as its hash is (`_hash`); jinja would otherwise
        # stat the built-in prompt files on every render (two calls per judged check, issue 22)
        # sandboxed and bounded (issue 16; `proctor._jinja`): prompt overrides come from suite files, which are data
        self._env: jinja2.Environment = LimitedSandbox(
            loader=jinja2.ChoiceLoader([jinja2.DictLoader(overrides), jinja2.FileSystemLoader(PROMPTS_DIR)]),
            undefined=jinja2.StrictUndefined,
            autoescape=False,
            keep_trailing_newline=True,
            auto_reload=False,
        )
        self._budget = budget  # a fresh step budget per prompt rendered
        self._hashes: dict[str, str] = {}
        self._templates: dict[str, tuple[jinja2.Template, dict[str, Any]]] = {}
        for file, text in overrides.items():  # compiled as strings: their loops count against the step budget
            compiled = self._env.from_string(text)
            self._templates[file.removesuffix(".j2")] = (compiled, dict(compiled.globals))
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
            with self._budget():
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


def unjudged_checks(
    cases: Iterable[Case], judge: str | None, *, selected: Callable[[AssertionSpec], bool] | None = None
) -> list[tuple[Case, str]]:
    """The LLM-judged checks no judge model would grade: the first one of each such case.

    A case is graded by `judge` (the `--judge` option; empty or blank is none, as an unset
    `PROCTOR_JUDGE_MODEL` is) or else its suite's `judge:`. Its judged checks are those `judged_checks`
    finds: wherever the case holds them.

    Args:
        cases: The cases about to run.
        judge: The judge model given for the whole run, if any.
        selected: Only these checks will run (`proctor rescore --checks`); default: every check.

    Returns:
        `(case, check name)` for every case with a judged check and no judge model.
    """
    if judge is not None and judge.strip():
        return []
    found: list[tuple[Case, str]] = []
    for case in cases:
        if case.judge is not None:
            continue
        judged = judged_checks(case)
        if selected is not None:
            judged = [spec for spec in judged if selected(spec)]
        if judged:
            found.append((case, judged[0].display_name()))
    return found


def judged_checks(case: Case) -> list[AssertionSpec]:
    """Every check of `case` that calls the judge model (and is `skipped` without one).

    Every assertion reachable from the case counts, wherever it sits (a turn's `assert`, the case's, a
    script step's `assert` or `check`, any place a later format adds): one walk over the case finds them,
    and an assertion is judged when its registered type says `needs_model` (the judges, `g-eval`, the
    judged agent scorers, `tasks`). The judge's other uses are not assertions; each is given as the
    assertion the runner grades it with:

    * the case's `rubric:` file: the `rubric` check;
    * a script's judge checkpoints (`- judge: ...`) and its simulated stretches' `until:`: `llm-rubric`;
    * a simulated user's `tasks` (a case with `simulate:` and no script): the transcript judge.

    The assertions come first, in the case's order, then those. A `journey` (`expect:`) is not judged: its
    fuzzy matches fall back to embeddings or token similarity without a judge, and nothing is skipped.
    """
    judged = [spec for spec in _assertions(case) if _needs_model(spec.type)]
    judged.extend(_stand_ins(case))
    return judged


def _needs_model(kind: str) -> bool:
    found = _NEEDS_MODEL.get(kind)
    if found is None:
        try:
            found = registry.resolve(kind)[0].needs_model
        except ValueError:  # a type no registry knows (a case loaded without validation): the run says so
            return False
        _NEEDS_MODEL[kind] = found
    return found


_NEEDS_MODEL: dict[str, bool] = {}
"""`needs_model` by check type, as resolved once (a registered type never changes)."""


def _assertions(case: Case) -> list[AssertionSpec]:
    """Every `AssertionSpec` reachable from `case`: through its fields, its models' and containers' items.

    In the order the case holds them (its fields' order, depth first). A field is walked unless its type
    says it cannot hold an assertion (`_may_hold`): a `str` or a `ScoringSpec` is skipped, a `list` of
    steps, an `Any` (`metadata`, an assertion's `value`) or a new model holding assertions is walked.
    """
    found: list[AssertionSpec] = []
    visit = _VISITS.get(type(case), _learn)
    if visit is not None:
        visit(case, found, set())
    return found


Visit = Callable[[Any, list[AssertionSpec], set[int]], None]
"""Adds the assertions a value holds to a list (`seen`: the plain containers walked, against cycles).

A value is walked by `_VISITS.get(type(value), _learn)`: its type's visitor, `None` for a type that
holds nothing (skipped without a call), or `_learn` for a type met for the first time."""


def _learn(node: Any, found: list[AssertionSpec], seen: set[int]) -> None:
    """Work out how to walk `node`'s type (`_visitor`), keep it, and walk `node`."""
    visit = _VISITS[type(node)] = _visitor(type(node))
    if visit is not None:
        visit(node, found, seen)


def _visitor(cls: type) -> Visit | None:
    """How to walk an instance of `cls` (`None`: nothing to walk)."""
    if issubclass(cls, BaseModel) or (is_dataclass(cls) and not issubclass(cls, type)):
        names = tuple(_holding_fields(cls, frozenset()))
        record = issubclass(cls, AssertionSpec)

        def visit_fields(node: Any, found: list[AssertionSpec], seen: set[int]) -> None:
            if record:
                found.append(node)
            for name in names:
                value = getattr(node, name)
                if value:  # None, an empty list: nothing there
                    visit = _VISITS.get(type(value), _learn)
                    if visit is not None:
                        visit(value, found, seen)

        return visit_fields if names or record else None
    if issubclass(cls, Mapping):
        return lambda node, found, seen: _visit_items(node, node.values(), found, seen)
    if issubclass(cls, (list, tuple, set, frozenset)):
        return lambda node, found, seen: _visit_items(node, node, found, seen)
    return None  # str, numbers, paths, URLs, enums: nothing to walk


def _visit_items(node: Any, items: Iterable[Any], found: list[AssertionSpec], seen: set[int]) -> None:
    if id(node) in seen:  # a container met again: a YAML alias, maybe a cycle
        return
    seen.add(id(node))
    for item in items:
        if item:
            visit = _VISITS.get(type(item), _learn)
            if visit is not None:
                visit(item, found, seen)


_VISITS: dict[type, Visit | None] = {}
"""`_visitor`'s answer for each type met."""


def _holding_fields(cls: type, busy: frozenset[type]) -> list[str]:
    """The fields of model or dataclass `cls` whose type says they may hold an assertion (`_may_hold`)."""
    if issubclass(cls, BaseModel):
        annotations = {name: info.annotation for name, info in cls.model_fields.items()}
    else:
        try:
            hints = get_type_hints(cls)
        except Exception:  # an annotation that does not resolve: every field may hold one
            hints = {}
        annotations = {item.name: hints.get(item.name, Any) for item in fields(cls)}  # type: ignore[arg-type]
    return [name for name, annotation in annotations.items() if _may_hold(annotation, busy | {cls})]


def _may_hold(annotation: Any, busy: frozenset[type]) -> bool:
    """Whether a value of type `annotation` can hold an `AssertionSpec`; an unknown type can."""
    if (
        annotation is Any
        or annotation is object
        or (not isinstance(annotation, type) and get_origin(annotation) is None)
    ):
        return True  # Any, a type variable, an unresolved name: anything may be there
    origin = get_origin(annotation)
    if origin is Literal:
        return False
    if origin is Annotated:
        return _may_hold(get_args(annotation)[0], busy)
    if origin is not None:  # list[X], dict[K, V], X | None, ...
        args = [arg for arg in get_args(annotation) if arg is not Ellipsis]
        return not args or any(_may_hold(arg, busy) for arg in args)
    if issubclass(annotation, AssertionSpec):
        return True
    if issubclass(annotation, BaseModel) or is_dataclass(annotation):
        return annotation in busy or bool(_holding_fields(annotation, busy))  # a recursive model: it may
    return issubclass(annotation, (Mapping, list, tuple, set, frozenset))  # a bare container: anything in it


def _stand_ins(case: Case) -> Iterator[AssertionSpec]:
    """The judge's uses that are not assertions, as the assertions they are graded with (`judged_checks`)."""
    if case.rubric is not None:
        from proctor.checks._phase import rubric_spec  # here: a judge alone never loads the check phase

        yield rubric_spec(case.rubric)
    for index, step in enumerate(case.script):
        criteria = [step.judge, step.simulate.until if step.simulate is not None else None]
        for criterion in (c for c in criteria if c is not None):
            # named as the runner names the checkpoint's result (`proctor.run.trial`)
            name = f"step {index + 1} judge checkpoint: {criterion}"
            yield AssertionSpec(type="llm-rubric", value=criterion, name=name)
    if case.simulate is not None and not case.script and case.simulate.tasks:
        yield AssertionSpec(type="tasks", name=TRANSCRIPT_JUDGE)  # the transcript judge scores the user's tasks
