"""The project: `proctor.yaml` found upwards, validated with located errors, and its one run store."""

from __future__ import annotations

from pathlib import Path

import pytest

from proctor.errors import SuiteError
from proctor.suite import default_store_path, find_project_root, load_project


@pytest.fixture(autouse=True)
def _no_home(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("PROCTOR_HOME", raising=False)


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def test_the_project_is_found_upwards_like_git(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    deep = tmp_path / "repo" / "evals" / "nested"
    deep.mkdir(parents=True)
    assert find_project_root(deep) == (deep, None)  # no marker anywhere: the directory itself
    (tmp_path / "repo" / ".git").mkdir()
    assert find_project_root(deep) == (tmp_path / "repo", None)
    config = write(tmp_path / "repo" / "evals" / "proctor.yaml", "")
    assert find_project_root(deep) == (tmp_path / "repo" / "evals", config)  # the nearest marker wins
    assert find_project_root(deep / "suite.yaml") == (tmp_path / "repo" / "evals", config)  # a file: its directory
    monkeypatch.chdir(deep)
    assert default_store_path() == tmp_path / "repo" / "evals" / ".proctor" / "history.db"


def test_the_store_follows_history_and_proctor_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write(tmp_path / "proctor.yaml", "history: ../shared/runs.db\n")
    assert default_store_path(tmp_path / "evals") == tmp_path.parent / "shared" / "runs.db"
    write(tmp_path / "proctor.yaml", "history: ../shared\n")  # a directory: the store's history.db in it
    assert default_store_path(tmp_path) == tmp_path.parent / "shared" / "history.db"
    monkeypatch.setenv("PROCTOR_HOME", str(tmp_path / "home"))
    assert default_store_path(tmp_path) == tmp_path / "home" / "history.db"


def test_the_config_holds_defaults_and_suite_globs(tmp_path: Path) -> None:
    write(
        tmp_path / "proctor.yaml",
        "suites: ['evals/**/*.yaml', 'more/x.yml']\ntarget: http://127.0.0.1:9/v1\nmodel: m\n"
        "judge: openai/gpt-4.1-mini\nconcurrency: 3\nresults: out\ntrusted: true\n",
    )
    for name in ("evals/a.yaml", "evals/deep/b.yaml", "more/x.yml", "evals/notes.txt"):
        write(tmp_path / name, "")
    project = load_project(tmp_path / "evals")
    assert project.root == tmp_path and project.trusted
    assert (project.config.target, project.config.model, project.config.judge) == (
        "http://127.0.0.1:9/v1",
        "m",
        "openai/gpt-4.1-mini",
    )
    assert project.config.concurrency == 3 and project.results_dir == tmp_path / "out"
    assert project.suite_paths() == [tmp_path / "evals/a.yaml", tmp_path / "evals/deep/b.yaml", tmp_path / "more/x.yml"]


@pytest.mark.parametrize(
    "text, where, field, words",
    [
        ("trusted: true\nconcurency: 4\n", (2, 1), "concurency", "unknown setting 'concurency'"),
        ("model: m\nconcurrency: 0\n", (2, 14), "concurrency", "greater than or equal to 1"),
        ("judge: gpt4\n", (1, 8), "judge", "should match pattern"),
        ("suites: evals/*.yaml\n", (1, 9), "suites", "valid list"),
        ("model: 'unclosed\ntrusted: true\n", (1, 8), "", "not closed before the end of the file"),
        ("- a\n", (1, 1), "", "expected a mapping of settings"),
        # trust is granted only by a YAML boolean: a quoted "yes" or a 1 is an error, not a yes
        ('trusted: "yes"\n', (1, 10), "trusted", "valid boolean"),
        ("trusted: 1\n", (1, 10), "trusted", "valid boolean"),
        ('trusted: "true"\n', (1, 10), "trusted", "valid boolean"),
    ],
)
def test_a_bad_config_is_located(tmp_path: Path, text: str, where: tuple[int, int], field: str, words: str) -> None:
    write(tmp_path / "proctor.yaml", text)
    with pytest.raises(SuiteError) as info:
        load_project(tmp_path)
    (issue,) = info.value.issues
    assert issue.file == str(tmp_path / "proctor.yaml")
    assert (issue.line, issue.column) == where and issue.field == field
    assert words in issue.message
