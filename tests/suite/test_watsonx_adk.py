"""IBM's ADK `examples/evaluations` folder, as IBM publishes it: datasets load, configuration files are
configuration (never suites), quick-eval datasets, `runtime_context`, `file_upload` and `--simulate`.

The files under `seeds/watsonx_adk/` are IBM's (MIT; see the README and LICENSE there).
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from proctor.checks import registry
from proctor.cli import app
from proctor.errors import SuiteError
from proctor.suite import load_suites
from proctor.suite.formats.watsonx import adk_config_kind

TREE = Path(__file__).parent / "seeds" / "watsonx_adk"
runner = CliRunner()


def by_file(tree: Path, **options: object) -> dict[str, object]:
    suites = load_suites([tree], registry, **options)  # type: ignore[arg-type]
    return {str(s.path.relative_to(tree)): s.cases[0] for s in suites}


def test_proctor_list_on_ibms_folder_lists_the_datasets_and_skips_the_configurations() -> None:
    result = runner.invoke(app, ["list", str(TREE)])
    assert result.exit_code == 0, result.output
    assert "6 cases" in result.output
    cases = by_file(TREE)
    assert sorted(cases) == [
        "evaluate/data_complex.json",
        "evaluate/data_simple.json",
        "evaluate_with_context_variable/data_simple.json",
        "evaluate_with_file_upload/data_file_upload.json",
        "quick-eval/data_complex_no_annotations.json",
        "quick-eval/data_simple_no_annotations.json",
    ]


@pytest.mark.parametrize(
    ("name", "kind"),
    [
        ("analysis/config.yml", "config"),
        ("cpd/configs/config_cpd_ifm.yaml", "config"),
        ("cpd/configs/config_cpd_no_ifm.yaml", "config"),
        ("environment_manager/env_manager.yaml", "env_manager"),
    ],
)
def test_adk_configuration_files_are_recognised(name: str, kind: str) -> None:
    assert adk_config_kind(TREE / name) == kind


def test_a_proctor_suite_is_not_an_adk_configuration(tmp_path: Path) -> None:
    suite = tmp_path / "suite.yaml"
    suite.write_text("target: {type: openai, url: http://127.0.0.1:1/v1}\ncases:\n  - name: a\n    turns: [hi]\n")
    assert adk_config_kind(suite) is None


def test_a_configuration_given_by_name_stands_for_its_test_paths(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "examples").mkdir()
    shutil.copytree(TREE, tmp_path / "examples" / "evaluations")
    monkeypatch.chdir(tmp_path)  # the ADK resolves test_paths against the working directory
    suites = load_suites([Path("examples/evaluations/cpd/configs/config_cpd_ifm.yaml")], registry)
    assert [s.path.as_posix() for s in suites] == ["examples/evaluations/evaluate/data_simple.json"]
    manager = load_suites([Path("examples/evaluations/environment_manager/env_manager.yaml")], registry)
    assert sorted(s.path.name for s in manager) == ["data_complex.json", "data_simple.json"]


def test_a_configuration_whose_test_paths_are_missing_is_a_located_error() -> None:
    with pytest.raises(SuiteError) as error:
        load_suites([TREE / "analysis" / "config.yml"], registry)
    assert "benchmarks/wxo_domains/rel_1.8_mock/workday/data/data3.json: no such file or directory" in str(error.value)


def test_quick_eval_datasets_load_without_a_journey() -> None:
    case = by_file(TREE)["quick-eval/data_simple_no_annotations.json"]
    assert case.assert_ == ()  # type: ignore[attr-defined]
    assert "quick-eval" in case.tags and case.metadata["quick_eval"] is True  # type: ignore[attr-defined]
    assert case.turns[0].content == "I want to know my timeoff schedule for a certain period."  # type: ignore[attr-defined]


def test_runtime_context_and_file_upload_are_kept_for_the_targets() -> None:
    cases = by_file(TREE)
    context = cases["evaluate_with_context_variable/data_simple.json"]
    assert context.metadata["runtime_context"] == {"sap_username": "nwaters"}  # type: ignore[attr-defined]
    upload = cases["evaluate_with_file_upload/data_file_upload.json"].metadata["file_upload"]  # type: ignore[attr-defined]
    assert Path(upload["file_path"]) == (TREE / "evaluate_with_file_upload" / "sample-id.jpg").resolve()
    assert (upload["file_id"], upload["content_type"]) == ("001", "image/jpeg")


def test_a_missing_upload_file_is_a_located_error(tmp_path: Path) -> None:
    shutil.copy(TREE / "evaluate_with_file_upload" / "data_file_upload.json", tmp_path)
    with pytest.raises(SuiteError) as error:
        load_suites([tmp_path], registry)
    message = str(error.value)
    assert "data_file_upload.json:51:" in message and "file_upload.file_path" in message
    assert "the file to upload is not found" in message


def test_simulate_switch_plays_the_story(tmp_path: Path) -> None:
    case = by_file(TREE, simulate=True)["evaluate/data_simple.json"]
    assert case.simulate is not None and case.turns == ()  # type: ignore[attr-defined]
    assert case.simulate.starting_sentence == "I want to know my timeoff schedule for a certain period."  # type: ignore[attr-defined]
    result = runner.invoke(app, ["list", "--simulate", str(TREE / "evaluate")])
    assert result.exit_code == 0 and "simulated" in result.output


def test_config_beside_the_datasets_sets_trials_simulator_and_turn_limit(tmp_path: Path) -> None:
    shutil.copy(TREE / "evaluate" / "data_simple.json", tmp_path)
    (tmp_path / "config.yaml").write_text(
        "test_paths: [.]\nn_runs: 2\nmax_user_turns: 4\nsimilarity_threshold: 0.9\n"
        "llm_user_config: {model_id: openai/gpt-4.1-mini}\nsimulate: true\n"
    )
    [suite] = load_suites([tmp_path], registry)
    case = suite.cases[0]
    assert (case.trials, case.simulator) == (2, "openai/gpt-4.1-mini")
    assert case.simulate is not None and case.simulate.max_turns == 8
    assert case.assert_[0].value.similarity_threshold == 0.9
    (tmp_path / "config.yaml").write_text("test_paths: [.]\nllm_user_config: {model_id: groq/openai/gpt-oss-120b}\n")
    [suite] = load_suites([tmp_path], registry)
    case = suite.cases[0]
    assert case.simulator is None and case.metadata["llm_user_model"] == "groq/openai/gpt-oss-120b"


def test_a_bad_n_runs_is_a_located_error(tmp_path: Path) -> None:
    shutil.copy(TREE / "evaluate" / "data_simple.json", tmp_path)
    (tmp_path / "config.yaml").write_text("n_runs: zero\n")
    with pytest.raises(SuiteError, match="n_runs: 'n_runs' must be a whole number >= 1; found 'zero'"):
        load_suites([tmp_path], registry)
