from __future__ import annotations

import re
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from ruamel.yaml import YAML

from proctor.errors import SuiteError
from proctor.suite import load_suite_file
from proctor.suite._loader import _plain
from proctor.suite._yaml import DuplicateKeyError, fast_load, top_level_keys

DOC = """\
a: yes
b: on
c: 010
d: 0x1F
e: 1.5
f: true
g: null
h: 1:30
i: ~
j: [1, "two", False, -3]
k: {nested: {deep: no}}
l: 0o17
m: .5
"""


def test_fast_reader_uses_yaml_1_2_scalars_like_the_located_reader() -> None:
    fast = fast_load(DOC)
    slow = _plain(YAML(typ="rt").load(DOC), (), {}, {})
    assert fast == slow
    assert fast["a"] == "yes" and fast["c"] == 10 and fast["d"] == 31 and fast["h"] == "1:30"
    assert fast["l"] == 15 and fast["m"] == 0.5


def test_fast_reader_rejects_duplicate_keys() -> None:
    with pytest.raises(DuplicateKeyError, match="duplicate key 'a'"):
        fast_load("x: {a: 1, a: 2}\n")


def test_yes_stays_a_string_in_a_suite(tmp_path: Path) -> None:
    from proctor.checks import registry
    from proctor.suite import load_suite_file

    path = tmp_path / "s.yaml"
    path.write_text("name: s\nturns:\n  - content: yes\n    assert: [{type: contains, value: on}]\n")
    (case,) = load_suite_file(path, registry).cases
    assert case.turns[0].content == "yes" and case.turns[0].assert_[0].value == "on"


@pytest.mark.parametrize(
    "text, where, words",
    [
        ('name: x\ndescription: "never closed\nturns:\n  - content: hi\n', (2, 14), "a quoted scalar starts here"),
        ("name: x\ndescription: 'never closed\nturns:\n  - content: hi\n", (2, 14), "a quoted scalar starts here"),
        ("name: x\ntags: [a, b\nturns:\n  - content: hi\n", (2, 7), "a flow sequence starts here"),
        ("name: x\ntarget: {type: openai\nturns:\n  - content: hi\n", (2, 9), "a flow mapping starts here"),
        ("name: x\n  bad: indent\nturns: []\n", (2, 6), "mapping values are not allowed here"),
    ],
)
def test_syntax_errors_are_located_where_the_mistake_starts(
    tmp_path: Path, text: str, where: tuple[int, int], words: str
) -> None:
    path = tmp_path / "s.yaml"
    path.write_text(text)
    with pytest.raises(SuiteError) as info:
        load_suite_file(path)
    (issue,) = info.value.issues
    assert (issue.line, issue.column) == where, issue
    assert words in issue.message


_KEY_SOUP = st.lists(
    st.sampled_from(
        ["name", "cases", "'q'", '"d"', " ", "  ", "\t", "#", "-", ":", ": ", ":\t", "\n", "\r\n", "{", "x y"]
    ),
    max_size=40,
).map("".join)


@given(_KEY_SOUP)
def test_top_level_keys_match_a_key_at_every_line_start(text: str) -> None:
    """`top_level_keys` finds keys after line breaks; what it finds is what `^` in multi-line mode found."""
    reference = re.compile(r"^(?![\s#-])([^:#\n]+?)\s*:(?:[ \t]|$)", re.MULTILINE)
    body = text.lstrip()
    expected = (
        None
        if body.startswith(("{", "[", "---", "%"))
        else {match.group(1).strip().strip("'\"") for match in reference.finditer(text)}
    )
    assert top_level_keys(text) == expected
