"""`proctor schema` is the documentation: every example suite and every YAML block of the README validates
against what it prints (and so does what `proctor init` writes)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from typer.testing import CliRunner

from proctor.cli import app
from proctor.cli._init import EXAMPLE_SUITE
from proctor.suite import ProjectConfig, discover_suite_files
from proctor.suite._yaml import DuplicateKeyError, fast_load
from proctor.traces import load_mapping

ROOT = Path(__file__).resolve().parents[2]
BLOCK = re.compile(r"^```ya?ml\n(.*?)^```", re.MULTILINE | re.DOTALL)
TOP_KEY = re.compile(r"^[A-Za-z_$][\w$-]*\s*:", re.MULTILINE)


@pytest.fixture(scope="module")
def validator() -> jsonschema.Draft202012Validator:
    result = CliRunner().invoke(app, ["schema"])
    assert result.exit_code == 0, result.output
    schema = json.loads(result.stdout)
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema)


def problems(validator: jsonschema.Draft202012Validator, document: Any) -> list[str]:
    out = []
    for error in validator.iter_errors(document):
        best = jsonschema.exceptions.best_match([error])
        out.append(f"{'/'.join(map(str, best.absolute_path))}: {best.message[:300]}")
    return out


def example_suites() -> list[Path]:
    """The YAML suites a directory search of `examples/` loads (watsonx's JSON datasets have their own format)."""
    return [path for path in discover_suite_files([ROOT / "examples"]) if path.suffix in (".yaml", ".yml")]


def readme_blocks() -> list[tuple[int, str]]:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    return [(text[: match.start()].count("\n") + 2, match.group(1)) for match in BLOCK.finditer(text)]


def documents(block: str) -> list[Any]:
    """A README block's documents: the block, or, when it shows alternatives of one key (`judge:` twice),
    each top-level entry on its own."""
    try:
        return [fast_load(block)]
    except DuplicateKeyError:
        starts = [match.start() for match in TOP_KEY.finditer(block)]
        return [fast_load(block[a:b]) for a, b in zip(starts, [*starts[1:], len(block)], strict=True)]


def test_the_examples_and_readme_blocks_are_found() -> None:
    assert len(example_suites()) >= 10
    assert len(readme_blocks()) >= 8


@pytest.mark.parametrize("path", example_suites(), ids=lambda p: str(p.relative_to(ROOT)))
def test_every_example_suite_validates(validator: jsonschema.Draft202012Validator, path: Path) -> None:
    assert problems(validator, fast_load(path.read_text(encoding="utf-8"))) == []


@pytest.mark.parametrize("line, block", readme_blocks(), ids=lambda v: f"README.md:{v}" if isinstance(v, int) else "")
def test_every_readme_yaml_block_validates(
    validator: jsonschema.Draft202012Validator, line: int, block: str, tmp_path: Path
) -> None:
    if block.startswith("# proctor.yaml"):  # a project config, not a suite
        ProjectConfig.model_validate(fast_load(block))
        return
    if block.startswith("# traces.yaml"):  # a `--from-traces` mapping, not a suite
        (tmp_path / "traces.yaml").write_text(block, encoding="utf-8")
        assert load_mapping(tmp_path / "traces.yaml").turn_names, f"README.md:{line}"
        return
    for document in documents(block):
        assert problems(validator, document) == [], f"README.md:{line}"


def test_the_init_example_suite_validates(validator: jsonschema.Draft202012Validator) -> None:
    assert problems(validator, fast_load(EXAMPLE_SUITE)) == []


@pytest.mark.parametrize(
    "assertion",
    [
        {"type": "tool-called", "value": "get_weather"},
        {"type": "tool-called", "value": {"name": "get_weather", "args": {"city": "Paris"}}},
        {"type": "tool-sequence", "value": ["a", "b"]},
        {"type": "tool-sequence", "value": {"tools": ["a", {"name": "b"}], "mode": "subset"}},
        {"type": "tool-args-match", "value": ["a"]},
        {"type": "contains-all", "value": "a, b"},
        {"type": "g-eval", "value": "Is it polite?"},
    ],
)
def test_the_documented_short_forms_validate(validator: jsonschema.Draft202012Validator, assertion: Any) -> None:
    suite = {"name": "x", "target": "http://127.0.0.1:8000/v1", "judge": "openai/gpt-4.1-mini"}
    assert problems(validator, {**suite, "turns": [{"content": "hi", "assert": [assertion]}]}) == []


def test_wrong_values_are_still_flagged(validator: jsonschema.Draft202012Validator) -> None:
    for assertion in ({"type": "tool-sequence", "value": 3}, {"type": "tool-called", "value": {"nme": "x"}}):
        assert problems(validator, {"name": "x", "turns": [{"content": "hi", "assert": [assertion]}]})
    assert problems(validator, {"name": "x", "target": 3, "turns": [{"content": "hi"}]})
    assert problems(validator, {"evaluator": "a persona", "turns": [{"content": "hi"}]})  # a job has no turns


def test_schema_to_an_unwritable_place_is_a_clean_error(tmp_path: Path) -> None:
    result = CliRunner().invoke(app, ["schema", "-o", str(tmp_path / "missing" / "x.json")])
    assert result.exit_code == 2 and "cannot write" in result.output and "Traceback" not in result.output
