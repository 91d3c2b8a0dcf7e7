"""Located errors read by libyaml's composer (`located_load`): the same places ruamel.yaml's round trip gives.

The slow path of the loader (a file with problems) reads the text once more to say where each problem
is. `located_load` does it with libyaml's marks; these tests hold it to the round-trip reader it
replaced, on every project file, and check what it leaves to that reader.
"""

from __future__ import annotations

import gc
import warnings
from pathlib import Path

import pytest
from ruamel.yaml import YAML

from proctor.checks import registry
from proctor.errors import SuiteError
from proctor.suite import load_suite_file
from proctor.suite._loader import _plain
from proctor.suite._trust import Trust
from proctor.suite._yaml import MAX_DEPTH, located_load, prescan

ROOT = Path(__file__).resolve().parents[2]


def _utf8(path: Path) -> bool:
    try:
        path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        return False  # the loader reports it before any reader runs
    return True


PROJECT_YAML = sorted(
    path
    for folder in ("examples", "tests")
    for pattern in ("*.yaml", "*.yml")
    for path in (ROOT / folder).rglob(pattern)
    if _utf8(path)
)


def _round_trip(text: str) -> tuple[object, dict[object, object], dict[object, object]]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        document = YAML(typ="rt").load(text)
    positions: dict[object, object] = {}
    key_positions: dict[object, object] = {}
    return _plain(document, (), positions, key_positions), positions, key_positions  # type: ignore[arg-type]


@pytest.mark.parametrize("path", PROJECT_YAML, ids=lambda p: str(p.relative_to(ROOT)))
def test_values_and_places_are_those_of_the_round_trip_reader(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    if prescan(text):
        return  # the loader reports the scan's problems; no reader runs
    located = located_load(text)
    if located is None:
        assert "<<" in text  # merge keys are left to the round-trip reader
        return
    assert located == _round_trip(text)


@pytest.mark.parametrize(
    "text",
    [
        "a: &x {b: 1}\nc:\n  <<: *x\n",  # merge keys: ruamel locates merged keys at the merging mapping
        "[a, b]: 1\n",  # a key that is a collection: ruamel names it
        "a: 1\na: 2\n",  # a repeated key: ruamel words the error
        "a: [\n",  # a syntax error: ruamel words it
    ],
)
def test_what_the_round_trip_reader_words_better_is_left_to_it(text: str) -> None:
    assert located_load(text) is None


def test_a_document_nested_too_deep_is_left_to_the_scan() -> None:
    text = "a: " + "[" * (MAX_DEPTH + 1) + "]" * (MAX_DEPTH + 1) + "\n"
    assert located_load(text) is None
    assert located_load("a: " + "[" * (MAX_DEPTH - 1) + "]" * (MAX_DEPTH - 1) + "\n") is not None


def _many_cases(count: int) -> str:
    cases = "".join(
        f'  - name: c-{i}\n    turns:\n      - content: "Echo case-{i} please"\n'
        f'        assert:\n          - {{type: contains, value: "case-{i}"}}\n'
        for i in range(count)
    )
    return f"name: w\ntrials: 1\ntarget: python:echo_agent:respond\ncases:\n{cases}"


def test_a_large_untrusted_file_gets_its_one_error_located(tmp_path: Path) -> None:
    path = tmp_path / "big.yaml"
    path.write_text(_many_cases(2000), encoding="utf-8")
    with pytest.raises(SuiteError) as raised:
        load_suite_file(path, registry, trust=Trust(False, False, tmp_path))
    (issue,) = raised.value.issues
    assert (issue.line, issue.column, issue.field) == (3, 9, "target.callable")
    assert "the suite names Python code to run" in issue.message


def test_an_error_deep_in_a_large_file_is_located_at_its_line(tmp_path: Path) -> None:
    text = _many_cases(1500).replace('value: "case-1234"', 'value: "case-1234", wieght: 2')
    path = tmp_path / "big.yaml"
    path.write_text(text, encoding="utf-8")
    expected_line = next(n for n, line in enumerate(text.splitlines(), 1) if "wieght" in line)
    with pytest.raises(SuiteError) as raised:
        load_suite_file(path, registry, trust=Trust(True, False, tmp_path))
    (issue,) = raised.value.issues
    assert issue.line == expected_line and issue.field == "cases[1234].turns[0].assert[0].wieght"
    assert "did you mean 'weight'" in issue.message


def test_a_clean_file_nested_too_deep_with_an_error_gets_the_scan_s_error(tmp_path: Path) -> None:
    deep = "[" * (MAX_DEPTH + 5) + "]" * (MAX_DEPTH + 5)
    path = tmp_path / "deep.yaml"
    path.write_text(f"name: d\nturns:\n  - content: hi\nvars: {{x: {deep}}}\nbogus: 1\n", encoding="utf-8")
    with pytest.raises(SuiteError) as raised:
        load_suite_file(path, registry)
    assert [issue.message for issue in raised.value.issues] == [f"nested more than {MAX_DEPTH} levels deep"]


def test_garbage_collection_is_back_on_after_a_load_good_or_bad(tmp_path: Path) -> None:
    good = tmp_path / "good.yaml"
    good.write_text(_many_cases(3), encoding="utf-8")
    bad = tmp_path / "bad.yaml"
    bad.write_text("name: b\nturns: 1\n", encoding="utf-8")
    assert gc.isenabled()
    load_suite_file(good, registry)
    assert gc.isenabled()
    with pytest.raises(SuiteError):
        load_suite_file(bad, registry)
    assert gc.isenabled()
    gc.disable()
    try:
        load_suite_file(good, registry)
        assert not gc.isenabled()  # a caller's choice is kept
    finally:
        gc.enable()
