"""Property-based tests: whatever bytes a suite file holds, loading gives a suite or located errors.

The budget is the `proctor` Hypothesis profile (tests/conftest.py): 200 examples per property.
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

import yaml
from hypothesis import given
from hypothesis import strategies as st

from proctor.checks import registry
from proctor.errors import SuiteError
from proctor.suite import Suite, load_suite_file

FIELDS = ["name", "turns", "cases", "content", "assert", "type", "value", "trials", "timeout", "tags", "target"]
YAMLISH = st.sampled_from(
    [
        *FIELDS,
        ": ",
        "\n",
        "  ",
        "- ",
        "[",
        "]",
        "{",
        "}",
        ",",
        "&a ",
        "*a",
        "<<: ",
        "!!int ",
        "!!python/none ",
        "!x ",
        '"',
        "'",
        "#",
        "|",
        ">",
        "0b1",
        "0x",
        "1" * 50,
        "\x00",
        "\x07",
        "\t",
        "é",
        "\ufeff",
        "---",
        "...",
    ]
)


def _load(data: bytes) -> Suite | SuiteError:
    with tempfile.TemporaryDirectory() as directory:
        path = Path(directory) / "fuzzed.yaml"
        path.write_bytes(data)
        try:
            return load_suite_file(path, registry)
        except SuiteError as exc:
            for issue in exc.issues:
                assert issue.file == str(path)
                assert issue.line is None or issue.line >= 1
                assert issue.message
            return exc


@given(st.lists(YAMLISH, max_size=60).map("".join))
def test_yaml_like_text_loads_or_is_located(text: str) -> None:
    _load(text.encode("utf-8"))


@given(st.binary(max_size=400))
def test_any_bytes_load_or_are_located(data: bytes) -> None:
    _load(data)


SCALARS = st.one_of(
    st.none(), st.booleans(), st.integers(), st.floats(allow_nan=True), st.text(max_size=30), st.sampled_from(FIELDS)
)
VALUES = st.recursive(
    SCALARS,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4),
        st.dictionaries(st.one_of(st.sampled_from(FIELDS), st.text(max_size=8)), inner, max_size=5),
    ),
    max_leaves=30,
)


@given(st.dictionaries(st.sampled_from(FIELDS), VALUES, max_size=6))
def test_suite_shaped_documents_load_or_are_located(document: dict[str, Any]) -> None:
    text = yaml.safe_dump(document, allow_unicode=True)
    outcome = _load(text.encode("utf-8"))
    if isinstance(outcome, Suite):
        assert outcome.cases  # a suite that loads has something to run


@given(st.integers(min_value=1, max_value=12), st.integers(min_value=2, max_value=12))
def test_nested_aliases_never_hang(levels: int, fan_out: int) -> None:
    lines = ["a0: &a0 [x]"]
    for level in range(1, levels + 1):
        lines.append(f"a{level}: &a{level} [{', '.join([f'*a{level - 1}'] * fan_out)}]")
    lines.append(f"turns: *a{levels}")
    outcome = _load("\n".join(lines).encode())
    assert isinstance(outcome, SuiteError)
