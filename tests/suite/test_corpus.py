"""Hostile and broken suite files from `corpus/`: each is a located error, never a crash, a hang or a command.

Every file here once crashed or hung the loader (a traceback, `RecursionError`, a `KeyError` on a merge
key, ruamel's `ReaderError`, an endless alias expansion). Loaded together with a good file, every one is
reported and the good file still loads.
"""

from __future__ import annotations

import shutil
import time
from pathlib import Path

import pytest

from proctor.checks import registry
from proctor.errors import SuiteError
from proctor.suite import Trust, load_suite_file, load_suites

CORPUS = Path(__file__).parent / "corpus"
UNTRUSTED = Trust()
"""What `proctor run` applies without --trust: the corpus directory is the project root."""

EXPECTED = {
    "alias_bomb.yaml": (6, "aliases expand this file to more than 1,000,000 values"),
    "bad_binary_int.yaml": (2, "cannot read '0b1012' as an integer"),
    "control_character.yaml": (1, "control character #x0007 is not allowed"),
    "deep_block.yaml": (101, "nested more than 100 levels deep"),
    "deep_flow.yaml": (1, "nested more than 100 levels deep"),
    "huge_integer.yaml": (2, "an integer of 100,000 characters (at most 1,000)"),
    "local_tag.yaml": (2, "tag !include is not allowed; a suite file is data"),
    "merge_into_case.yaml": (2, "cases[0].colour: unknown field 'colour'"),
    "merge_of_unknown_field.yaml": (1, "defaults: unknown field 'defaults'"),
    "nul_byte.yaml": (1, "control character #x0000 is not allowed"),
    "python_name_tag.yaml": (1, "tag !!python/name:os.system is not allowed"),
    "python_tag.yaml": (1, "tag !!python/object/apply:os.system is not allowed"),
    "recursive_alias.yaml": (1, "alias *t refers to no finished anchor"),
    "rubric_dev_zero.yaml": (2, "rubric: rubric '/dev/zero' resolves to /dev/zero, outside the project root"),
    "seed_hook_os_system.yaml": (2, "target.seed: the suite names Python code to run (os:system)"),
    "setups_etc_hostname.yaml": (2, "setups[0]: setup script '/etc/hostname' resolves to /etc/hostname, outside"),
    "undecodable_bytes.yaml": (1, "not UTF-8: byte 0xe9 cannot be decoded"),
}


def test_the_corpus_is_listed_in_full() -> None:
    assert sorted(p.name for p in CORPUS.iterdir()) == sorted(EXPECTED)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_each_hostile_file_is_a_located_error(name: str) -> None:
    line, fragment = EXPECTED[name]
    started = time.perf_counter()
    with pytest.raises(SuiteError) as info:
        load_suite_file(CORPUS / name, registry, trust=UNTRUSTED)
    assert time.perf_counter() - started < 2.0
    rendered = [
        f"{issue.line}: {issue.field + ': ' if issue.field else ''}{issue.message}" for issue in info.value.issues
    ]
    assert any(text.startswith(f"{line}: ") and fragment in text for text in rendered), rendered
    assert all(issue.file == str(CORPUS / name) and issue.column for issue in info.value.issues)


def test_one_bad_file_never_stops_the_others(tmp_path: Path) -> None:
    shutil.copytree(CORPUS, tmp_path / "suites")
    (tmp_path / "suites" / "good.yaml").write_text("name: good\nturns: [{content: hi}]\n", encoding="utf-8")
    with pytest.raises(SuiteError) as info:
        load_suites([tmp_path / "suites"], registry, trust=UNTRUSTED)
    reported = {Path(issue.file).name for issue in info.value.issues}
    # every bad file, and nothing about the good one; deep_block.yaml has no suite key at its top (only `k:`),
    # so a directory search passes it over unread (named on its own it is still refused, located)
    assert reported == set(EXPECTED) - {"deep_block.yaml"}
    assert load_suite_file(tmp_path / "suites" / "good.yaml", registry).cases[0].name == "good"


def test_merge_keys_are_ordinary_yaml(tmp_path: Path) -> None:
    path = tmp_path / "merged.yaml"
    path.write_text(
        "cases:\n"
        "  - &base {name: a, trials: 2, tags: [smoke], turns: [{content: hi}]}\n"
        "  - <<: *base\n"
        "    name: b\n"
        "  - {<<: *base, name: c, trials: !!int 0b11}\n",
        encoding="utf-8",
    )
    suite = load_suite_file(path, registry)
    assert [(c.name, c.trials, c.tags) for c in suite.cases] == [
        ("a", 2, ("smoke",)),
        ("b", 2, ("smoke",)),
        ("c", 3, ("smoke",)),
    ]


def test_a_suite_file_that_is_not_a_regular_file_is_refused(tmp_path: Path) -> None:
    with pytest.raises(SuiteError, match="not a regular file"):
        load_suite_file(Path("/dev/zero"), registry)
