"""The two YAML readers agree: yaml-rs (`rs_load`) reads a text as libyaml (`pyyaml_load`) does, or defers.

Differential tests: every YAML file of the project (examples, fixtures, the seeds' copied files), a list
of the spellings where the readers part, and generated corpora (grammar soup, dumped values, mutated
suites). The property is always the same: `rs_load` returns `DEFER`, or `pyyaml_load` reads the text
without error to an equal value of the same types (key order, `-0.0` and NaN included).
"""

from __future__ import annotations

import math
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st

from proctor.suite._yaml import DEFER, DuplicateKeyError, fast_load, pyyaml_load, rs_load

ROOT = Path(__file__).resolve().parents[2]
PROJECT_YAML = sorted(
    path
    for folder in ("examples", "tests")
    for pattern in ("*.yaml", "*.yml")
    for path in (ROOT / folder).rglob(pattern)
    if ".venv" not in path.parts
)


def same(a: Any, b: Any) -> bool:
    """Equal values of the same types all the way down (dict key order, `-0.0` and NaN included)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        pairs_a, pairs_b = list(a.items()), list(b.items())  # by position: a NaN key is no key to look up
        return len(a) == len(b) and all(
            same(x[0], y[0]) and same(x[1], y[1]) for x, y in zip(pairs_a, pairs_b, strict=True)
        )
    if isinstance(a, list):
        return len(a) == len(b) and all(map(same, a, b))
    if isinstance(a, float):
        if math.isnan(a):
            return math.isnan(b)
        return a == b and math.copysign(1, a) == math.copysign(1, b)
    return bool(a == b)


def agree(text: str) -> bool:
    """The property: yaml-rs defers, or reads what libyaml reads."""
    fast = rs_load(text)
    if fast is DEFER:
        return True
    try:
        reference = pyyaml_load(text)
    except (yaml.YAMLError, DuplicateKeyError, ValueError, TypeError, RecursionError) as exc:
        raise AssertionError(f"yaml-rs read {text!r} to {fast!r}; libyaml refuses it: {exc}") from None
    assert same(fast, reference), f"{text!r}: yaml-rs {fast!r}, libyaml {reference!r}"
    return True


def test_the_project_has_yaml_files_to_compare() -> None:
    assert len(PROJECT_YAML) >= 40


@pytest.mark.parametrize("path", PROJECT_YAML, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_project_yaml_file_reads_alike(path: Path) -> None:
    text = path.read_bytes().decode("utf-8", "replace")
    assert agree(text)


FAST = ["examples/suites/time-off.yaml", "examples/suites/directory.yaml", "examples/embabel/hr-reminders.yml"]


@pytest.mark.parametrize("name", FAST)
def test_plain_suites_take_the_fast_reader(name: str) -> None:
    text = (ROOT / name).read_text(encoding="utf-8")
    assert rs_load(text) is not DEFER


def test_a_generated_suite_of_many_cases_takes_the_fast_reader() -> None:
    cases = "".join(
        f'  - name: c-{i}\n    turns:\n      - content: "Echo case-{i} please"\n'
        f'        assert:\n          - {{type: contains, value: "case-{i}"}}\n'
        for i in range(200)
    )
    text = f"# generated\nname: w\ntrials: 1\ntarget: python:echo_agent:respond\ncases:\n{cases}"
    fast = rs_load(text)
    assert fast is not DEFER and same(fast, pyyaml_load(text)) and len(fast["cases"]) == 200


# Where the readers part (each found by trying them side by side, or in the YAML test suite's categories).
PARTING = [
    "a: 1_000",
    "a: _1",
    "a: 1_",
    "a: ._5",
    "a: 1e_5",
    "a: 0b101",
    "a: 0B1",
    "a: 0X1F",
    "a: 0O17",
    "a: -0x1",
    "a: +0o7",
    "a: 0xFF_FF",
    "a: .NaN",
    "a: .nAn",
    "a: .INf",
    "a: " + "9" * 1001,
    "a: 0x" + "f" * 999,
    "a: !custom x",
    "a: !!binary aGVsbG8=",
    "a: !!null x",
    "a: !!omap [a: 1]",
    "a: !!set {x, y}",
    "a: !<tag:yaml.org,2002:str> 5",
    "- ! 12",
    "a: &x {b: 1}\nc:\n  <<: *x\n  d: 2",
    "c:\n  <<: [{a: 1}, {a: 2, b: 3}]",
    "a: &x 1\nb: *x",
    '{"a":*x}',
    "a: 1\na: 2",
    "{a: 1, a: 1}",
    "1: a\n1.0: b",
    "true: a\n1: b",
    "? [1,2]\n: x",
    "[a, b]: 1",
    "{a: [b, c], [d, e]: f}",
    "{ first: Sammy, last: Sosa }:\n  hr: 65",
    "? a\n: b",
    "- ? : x",
    "[:x]",
    "[?x]",
    "{x: :x}",
    ":\n",
    "a: x\n: y",
    '{"foo"\n: "bar"}',
    '- { "key"::value }',
    '- [ "JSON like":adjacent ]',
    '---\n- { "multi\n  line": value}',
    "- { multi\n  line: value}",
    "k: {\n k\n :\n v\n }",
    "{\nunquoted : 'separate',\nomitted value:,\n}",
    "---\na: 1\n---\nb: 2",
    "a: 1\n---",
    "---\n---\n",
    "...\n",
    "# c\n...\n",
    "--- >\nline1\nline2\n",
    "%YAML 1.2\n---\na: 1",
    "%FOO bar\n--- foo",
    "\ufeffa: 1",
    "a: \x85",
    "a: x\u2028b: y",
    "a: \x07",
    "\ta: 1",
    "a:\n\t- x",
    "foo: |-\n \tbar\n",
    "-\t-1\n",
    "foo: |\n  x\n   ",
    "- |+\n   ",
    "- " * 120 + "x",
    " " * 120 + "a: 1",
    "a: " + "[" * 300 + "]" * 300,
    "k" * 1030 + ": 1",
    "a: [1,\n2]",
    "a: [1, # ]\n  2]",
]


@pytest.mark.parametrize("text", PARTING)
def test_where_the_readers_part_yaml_rs_defers_or_agrees(text: str) -> None:
    assert agree(text)


@pytest.mark.parametrize(
    "text",
    ["a: 1_000", "a: 0b1", "a: !custom x", "a: &x 1\nb: *x", "---\na: 1\n---\nb: 2", "[a]: 1", "\ta: 1", "a: .NaN"],
)
def test_fast_load_gives_what_libyaml_gives_for_texts_yaml_rs_reads_otherwise(text: str) -> None:
    try:
        expected: Any = pyyaml_load(text)
    except Exception as exc:  # the reference reader's error, raised by fast_load too
        with pytest.raises(type(exc)):
            fast_load(text)
        return
    assert same(fast_load(text), expected)


def test_a_document_nested_past_any_stack_is_refused_not_a_crash() -> None:
    # yaml-rs recurses without limit (100,000 `- ` levels overflow its stack); a child process proves
    # the text is never given to it.
    code = (
        "from proctor.suite._yaml import fast_load\n"
        "try:\n    fast_load('- ' * 200000 + 'x')\nexcept Exception:\n    pass\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr[-500:]


SCALARS = [
    "0",
    "-0",
    "+1",
    "007",
    "1.5",
    "-.5",
    "+.5",
    "5.",
    "1e3",
    "1E+3",
    "1.e5",
    ".5e-3",
    "1e400",
    "-0.0",
    ".inf",
    "-.Inf",
    "+.INF",
    ".nan",
    ".NaN",
    ".NAN",
    "+.nan",
    "true",
    "True",
    "FALSE",
    "tRue",
    "yes",
    "on",
    "null",
    "Null",
    "~",
    "",
    "0o17",
    "0x1F",
    "0o8",
    "0x",
    "1:30",
    "2001-12-14",
    "12:30:00",
    "1,000",
    "v1.2",
    "a b",
    "x#y",
    "-x",
    ":x",
    "?x",
    "~x",
    "'q'",
    '"d"',
    "'it''s'",
    '"a\\tb"',
    '"\\u263a"',
    '"\\/"',
    "é",
    "日本",
    "1" * 30,
    "-" + "9" * 25,
    "9" * 19,
]
TOKENS = [
    *SCALARS,
    "a",
    "b",
    "key",
    "cases",
    "- ",
    ": ",
    ":",
    "? ",
    "\n",
    "\n  ",
    "\n    ",
    "  ",
    " ",
    "[",
    "]",
    "{",
    "}",
    ", ",
    ",",
    "#",
    " # c",
    "|",
    "|-",
    "|+",
    ">",
    ">-",
    "&a ",
    "*a",
    "!!str ",
    "!t ",
    "<<: ",
    "---",
    "...",
    "\t",
    '"',
    "'",
    "\r\n",
    "_",
    "0b1",
    "1_0",
    "%",
    "@",
    "`",
    "\\",
    "\u00a0",
]


@given(st.lists(st.sampled_from(TOKENS), max_size=40).map("".join))
def test_generated_token_soup_reads_alike(text: str) -> None:
    assert agree(text)


KEYS = st.sampled_from(["a", "b", "name", "turns", "content", "assert", "type", "value", "x y", "1", "true", "é"])
LEAVES = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from(SCALARS),
    st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=12),
)
VALUES = st.recursive(
    LEAVES, lambda inner: st.lists(inner, max_size=4) | st.dictionaries(KEYS, inner, max_size=4), max_leaves=20
)


@given(VALUES, st.sampled_from([None, True, False]), st.sampled_from([8, 40, 1000]), st.booleans())
def test_dumped_values_read_alike(value: Any, flow: bool | None, width: int, explicit_start: bool) -> None:
    text = yaml.safe_dump(
        value, default_flow_style=flow, width=width, allow_unicode=True, explicit_start=explicit_start
    )
    assert agree(text)


SUITE = """\
name: w
trials: 1
target: python:echo_agent:respond
cases:
  - name: c-1
    turns:
      - content: "Echo case-1 please"
        assert:
          - {type: contains, value: "case-1"}
          - type: regex
            value: 'c.*1'
  - name: c-2
    tags: [a, b]
    turns:
      - content: |
          two lines
          of text
"""


@given(st.integers(min_value=0, max_value=len(SUITE)), st.lists(st.sampled_from(TOKENS), min_size=1, max_size=4))
def test_mutated_suites_read_alike(position: int, inserted: list[str]) -> None:
    assert agree(SUITE[:position] + "".join(inserted) + SUITE[position:])
