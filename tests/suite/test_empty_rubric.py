"""A `rubric:` file with nothing in it is a located load error, not a check that errors after the agent ran."""

from __future__ import annotations

from pathlib import Path

import pytest

from proctor.checks import registry
from proctor.errors import SuiteError
from proctor.suite import Trust, load_suite_file, load_suites


def write(root: Path, name: str, text: str) -> Path:
    path = root / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def issues(path: Path, trust: Trust | None = None) -> list[str]:
    with pytest.raises(SuiteError) as info:
        load_suite_file(path, registry, trust=trust or Trust(trusted=True))
    return [str(issue) for issue in info.value.issues]


@pytest.mark.parametrize("text", ["", "  \n\t\n", "\n\n\n"])
def test_an_empty_or_blank_rubric_file_is_a_located_load_error(tmp_path: Path, text: str) -> None:
    write(tmp_path, "r.md", text)
    path = write(tmp_path, "s.yaml", "name: s\nrubric: r.md\nturns: [{content: hi}]\n")
    (found,) = issues(path)
    expected = "the rubric file r.md is empty: it has no criteria (expected one or more, e.g. '- Polite')"
    assert found == f"{path}:2:9: rubric: {expected}"


def test_a_case_s_own_empty_rubric_is_located_at_the_case(tmp_path: Path) -> None:
    write(tmp_path, "good.md", "- Polite\n")
    write(tmp_path, "blank.md", " \n")
    path = write(
        tmp_path,
        "s.yaml",
        "name: s\nrubric: good.md\ncases:\n"
        "  - name: fine\n    turns: [{content: hi}]\n"
        "  - name: blank\n    rubric: blank.md\n    turns: [{content: hi}]\n",
    )
    (found,) = issues(path)
    assert found.startswith(f"{path}:7:13: cases[1].rubric: the rubric file blank.md is empty: it has no criteria")


def test_every_suite_s_empty_rubric_is_reported_at_once(tmp_path: Path) -> None:
    write(tmp_path, "evals/r.md", "")
    for name in ("a", "b"):
        write(tmp_path, f"evals/{name}.yaml", f"name: {name}\nrubric: r.md\nturns: [{{content: hi}}]\n")
    with pytest.raises(SuiteError) as info:
        load_suites([tmp_path / "evals"], registry, trust=Trust(trusted=True))
    found = sorted(str(issue) for issue in info.value.issues)
    assert [text.split(": ", 1)[0].rsplit("/", 1)[-1] for text in found] == ["a.yaml:2:9", "b.yaml:2:9"]
    assert all("the rubric file r.md is empty" in text for text in found)


def test_a_rubric_with_text_still_loads(tmp_path: Path) -> None:
    write(tmp_path, "r.md", "\n  Be polite.  \n")  # prose, one criterion: blank lines around it are fine
    path = write(tmp_path, "s.yaml", "name: s\nrubric: r.md\nturns: [{content: hi}]\n")
    suite = load_suite_file(path, registry, trust=Trust(trusted=True))
    assert suite.cases[0].rubric is not None and "Be polite." in suite.cases[0].rubric.text
