"""`proctor._jinja`: Jinja's sandbox with bounded work and memory (expressions: `checks._sandbox`)."""

from __future__ import annotations

import time

import jinja2
import pytest
from jinja2.exceptions import SecurityError
from jinja2.sandbox import SandboxedEnvironment

from proctor import _jinja
from proctor._jinja import LimitedSandbox, evaluate, render
from proctor.checks._judging import Judge
from proctor.models import ModelSettings, get_model

REFUSED = [
    ("{{ 10 ** 10000000 }}", "bits"),
    ("{{ 'a' * 4000000000 }}", "repeating"),
    ("{{ [0] * 100000000 }}", "repeating"),
    ("{% set ns = namespace(x=2) %}{% for i in range(40) %}{% set ns.x = ns.x * ns.x %}{% endfor %}", "product"),
    ("{% set ns = namespace(s='ab') %}{% for i in range(40) %}{% set ns.s = ns.s + ns.s %}{% endfor %}", "concat"),
    ("{{ 'a'.ljust(10 ** 9) }}", "width"),
    ("{{ 'a'.zfill(10 ** 9) }}", "width"),
    ("{{ 'a' | center(10 ** 9) }}", "width"),
    ("{{ 'a' | indent(10 ** 9) }}", "width"),
    ("{{ '%0999999999d' % 1 }}", "%-format"),
    ("{{ '%.999999999f' % 1 }}", "%-format"),
    ("{{ '%0999999999d' | format(1) }}", "%-format"),
    ("{{ '{:>999999999}'.format(1) }}", "format width"),
    ("{% for a in range(100000) %}{% for b in range(100000) %}{% endfor %}{% endfor %}", "steps"),
    ("{% for i in range(100000) %}{{ 'x' * 1000 }}{% endfor %}", "output"),
]


@pytest.mark.parametrize("source, words", REFUSED)
def test_what_would_exhaust_the_machine_is_refused_at_once(source: str, words: str) -> None:
    env = LimitedSandbox(undefined=jinja2.StrictUndefined)
    started = time.perf_counter()
    with pytest.raises(SecurityError, match=words):
        render(env.from_string(source), {})
    assert time.perf_counter() - started < 5


def test_a_recursive_macro_runs_out_of_steps() -> None:
    source = "{% macro f(n) %}{% if n %}{{ f(n - 1) }}{{ f(n - 1) }}{% endif %}{% endmacro %}{{ f(40) }}"
    with pytest.raises(SecurityError, match="steps"):
        render(LimitedSandbox().from_string(source), {})


LEGIT = [
    "{{ 'ok' }} {{ 2 ** 10 }} {{ 3 * 4 }} {{ [1, 2] * 3 }} {{ 'ab' + 'cd' }} {{ '%5d|%-3s|%.2f' % (3, 'x', 1.5) }}",
    "{{ 'a'.ljust(5) }}|{{ 'a' | center(5) }}|{{ 'x\ny' | indent(2) }}|{{ '%03d' | format(7) }}",
    "{{ '{:>4}'.format(1) }}|{{ '{:,}'.format(10 ** 12) }}",
    "{% for m in messages %}{{ loop.index }}:{{ m.role }}={{ m.content | upper }};{% endfor %}",
    "{% macro f(n) %}{% if n %}{{ n }}{{ f(n - 1) }}{% endif %}{% endmacro %}{{ f(10) }}",
    "{{ 2 ** -1 }} {{ (-3) ** 3 }} {{ 1.5 ** 2 }} {{ 7 % 3 }}",
]


@pytest.mark.parametrize("source", LEGIT)
def test_what_templates_really_do_renders_as_in_jinjas_sandbox(source: str) -> None:
    variables = {"messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]}
    expected = SandboxedEnvironment().from_string(source).render(variables)
    assert render(LimitedSandbox().from_string(source), variables) == expected


def test_each_render_has_its_own_budget(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_jinja, "MAX_STEPS", 150)
    template = LimitedSandbox().from_string("{% for i in range(100) %}{{ i }}{% endfor %}")
    for _ in range(3):  # 100 steps each: within a budget of 150 per render, not over the three
        assert render(template, {}).endswith("99")
    with pytest.raises(SecurityError, match="150 steps"):
        render(LimitedSandbox().from_string("{% for i in range(200) %}{% endfor %}"), {})


def test_an_expression_is_bounded_and_evaluated_with_its_variables() -> None:
    env = LimitedSandbox(undefined=jinja2.StrictUndefined)
    assert evaluate(env.compile_expression("x * 2", undefined_to_none=False), {"x": 21}) == 42
    with pytest.raises(SecurityError, match="bits"):
        evaluate(env.compile_expression("x ** 10000000", undefined_to_none=False), {"x": 10})


def test_the_sandbox_still_refuses_pythons_internals() -> None:
    with pytest.raises(SecurityError):
        render(LimitedSandbox().from_string("{{ x.__class__.__mro__ }}"), {"x": 1})


def test_a_judge_prompt_from_a_suite_is_bounded_too() -> None:
    model = get_model("openai/any", settings=ModelSettings(base_url="http://127.0.0.1:9/v1", api_key="k"))  # unused
    runaway = "{% for a in range(100000) %}{% for b in range(100000) %}{% endfor %}{% endfor %}{{ reply }}"
    judge = Judge(model, prompts={"llm-rubric": runaway, "relevance": "Grade: {{ reply }}"})
    with pytest.raises(SecurityError, match="steps"):
        judge.messages("llm-rubric", {"reply": "hi"})
    assert judge.messages("relevance", {"reply": "hi"})[1]["content"] == "Grade: hi"
