"""The Go Eval Agent's `configs/judges.yaml`, unchanged: which judges run, their prompts and parameters.

Files under `seeds/go_eval_agent/` are the Go project's (Apache-2.0). The judge is the scripted judge
server on loopback; it tells the Go prompts apart by their wording.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from proctor.checks import registry
from proctor.cli import app
from proctor.errors import ConfigError, SuiteError
from proctor.service import EvaluationRequest, PipelineConfig, ServiceSettings, build_pipeline
from proctor.service._judges_config import ConfiguredJudge, JudgeReplyError, load_judges_config
from proctor.suite import load_suites
from servers.model_server import Reply
from service.judge_server import verdict

SEEDS = Path(__file__).parent / "seeds" / "go_eval_agent"
JUDGES_YAML = SEEDS / "judges.yaml"
GO_STAGES = ["length-checker", "overlap-checker", "format-checker"] + [
    f"{name}-judge" for name in ("relevance", "faithfulness", "coherence", "completeness", "instruction")
]
runner = CliRunner()


def pipeline(script: Any, config: Path = JUDGES_YAML, **fields: Any) -> Any:
    settings = ServiceSettings(PipelineConfig(judges_config=config, **fields), "openai/judge", script.base_url, "k")
    return build_pipeline(settings)


def payload(name: str) -> EvaluationRequest:
    return EvaluationRequest.model_validate_json((SEEDS / name).read_text())


def test_the_go_file_reads_as_the_go_service_reads_it() -> None:
    judges = load_judges_config(JUDGES_YAML)
    assert [j.name for j in judges] == ["relevance", "faithfulness", "coherence", "completeness", "instruction"]
    relevance, faithfulness, *_, instruction = judges
    assert (relevance.max_tokens, relevance.temperature, relevance.retry) == (256, 0.0, False)
    assert (faithfulness.requires_context, faithfulness.retry) == (True, True)
    assert instruction.max_tokens == 300
    prompt = relevance.render("What is 2+2?", "4")
    assert "Query: What is 2+2?\nAnswer: 4\n" in prompt and "{{" not in prompt


@pytest.mark.anyio
async def test_the_go_payload_gets_the_go_stages_with_the_files_prompts(judge_server: Any) -> None:
    script = judge_server.script(default=verdict(0.9, "Good."))
    result = await pipeline(script).evaluate(payload("pass.json"))
    assert [stage.name for stage in result.stages] == GO_STAGES and result.errors == []
    assert result.verdict == "pass"
    (relevance,) = script.requests["relevance"]
    assert relevance["messages"] == [
        {
            "role": "user",
            "content": load_judges_config(JUDGES_YAML)[0].render(
                "What is the capital of France?",
                "The capital of France is Paris. It is the largest city in France and a major European hub for "
                "culture, art, and business.",
            ),
        }
    ]
    assert (relevance["max_tokens"], relevance["temperature"]) == (256, 0.0)
    assert script.requests["instruction"][0]["max_tokens"] == 300
    assert "France is a country in Western Europe" in script.requests["faithfulness"][0]["messages"][0]["content"]


@pytest.mark.anyio
async def test_disabled_judges_do_not_run_and_an_edited_prompt_is_used(judge_server: Any, tmp_path: Path) -> None:
    text = JUDGES_YAML.read_text()
    text = text.replace(
        "    - name: coherence\n      enabled: true", "    - name: coherence\n      enabled: false"
    ).replace("    - name: instruction\n      enabled: true", "    - name: instruction\n      enabled: false")
    text = text.replace("Score how relevant the answer is", "Score how relevant (edited) the answer is")
    config = tmp_path / "judges.yaml"
    config.write_text(text)
    script = judge_server.script(default=verdict(0.8))
    result = await pipeline(script, config).evaluate(payload("pass.json"))
    assert [s.name for s in result.stages][3:] == ["relevance-judge", "faithfulness-judge", "completeness-judge"]
    assert "(edited)" in script.requests["relevance"][0]["messages"][0]["content"]
    assert set(script.requests) == {"relevance", "faithfulness", "completeness"}


@pytest.mark.anyio
async def test_retry_false_sends_once_and_retry_true_retries(judge_server: Any) -> None:
    failing = Reply("overloaded", status=503)
    script = judge_server.script(relevance=[failing, verdict(0.9)], coherence=[failing, verdict(0.7)])
    result = await pipeline(script, judges=("relevance", "coherence")).evaluate(payload("pass.json"))
    (error,) = result.errors
    assert error.name == "relevance-judge" and error.status == "error" and "503" in error.reason
    assert len(script.requests["relevance"]) == 1  # retry: false in the Go file
    assert [s.name for s in result.stages][3:] == ["coherence-judge"] and result.stages[3].score == 0.7
    assert len(script.requests["coherence"]) == 2


@pytest.mark.anyio
async def test_a_reply_that_is_not_the_go_json_is_an_error_not_a_zero(judge_server: Any) -> None:
    script = judge_server.script(
        relevance=Reply('```json\n{"score": 0.6, "reason": "fenced"}\n```'),
        completeness=Reply('{"score": 1.5, "reason": "too high"}'),
        instruction=Reply("great answer"),
    )
    result = await pipeline(script).evaluate(payload("pass.json"))
    relevance = next(s for s in result.stages if s.name == "relevance-judge")
    assert (relevance.score, relevance.reason) == (0.6, "fenced")
    errors = {e.name: e.reason for e in result.errors}
    assert errors["completeness-judge"] == "invalid judge reply: score 1.5 out of range [0.0, 1.0]"
    assert errors["instruction-judge"].startswith("the judge's reply is not JSON")


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (("- name: coherence", "- name: relevance"), "judges.evaluators.2 (relevance): duplicate judge name"),
        (("{{.Answer}}", "{{if .Answer}}x{{end}}"), "template action '{{if .Answer}}' is not supported"),
        (("temperature: 0.0\n        retry: false", "temperature: 1.5\n        retry: false"), "temperature"),
    ],
)
def test_a_bad_file_is_a_located_error(tmp_path: Path, edit: tuple[str, str], message: str) -> None:
    config = tmp_path / "judges.yaml"
    config.write_text(JUDGES_YAML.read_text().replace(*edit, 1))
    with pytest.raises(ConfigError, match=str(config)) as error:
        load_judges_config(config)
    assert message in str(error.value)


def test_reply_parsing_matches_the_go_rules() -> None:
    assert ConfiguredJudge.parse('  {"score": 1, "reason": "ok"} ') == (1.0, "ok")
    with pytest.raises(JudgeReplyError, match="missing score and reason"):
        ConfiguredJudge.parse('{"score": 0}')


def test_serve_and_consume_take_the_file_and_list_skips_it(tmp_path: Path) -> None:
    for command in ("serve", "consume"):
        shown = runner.invoke(app, [command, "--help"], env={"COLUMNS": "200"})
        assert "--judges-config" in shown.output
    bad = tmp_path / "judges.yaml"
    bad.write_text("judges:\n  evaluators: []\n")
    result = runner.invoke(app, ["serve", "--judges-config", str(bad), "--port", "0"])
    assert result.exit_code == 2 and f"{bad}: judges.evaluators" in result.output
    # a folder holding it and a suite: the judges file is configuration, not a suite
    (tmp_path / "configs").mkdir()
    (tmp_path / "configs" / "judges.yaml").write_text(JUDGES_YAML.read_text())
    (tmp_path / "suite.yaml").write_text(
        "target: {type: openai, base_url: http://127.0.0.1:1/v1}\ncases:\n  - {name: a, turns: [{content: hi}]}\n"
    )
    assert [s.path.name for s in load_suites([tmp_path], registry)] == ["suite.yaml"]
    with pytest.raises(SuiteError, match="Go Eval Agent judges configuration"):
        load_suites([tmp_path / "configs" / "judges.yaml"], registry)
    events = json.loads((SEEDS / "fail-early.json").read_text())
    assert events["event_id"]


def test_the_go_variable_names_the_file_and_workers_get_it_back() -> None:
    settings = ServiceSettings.from_environment({"JUDGES_CONFIG_PATH": str(JUDGES_YAML)}, judge_model="openai/j")
    pipeline_config = settings.pipeline
    assert pipeline_config.judges == ("relevance", "faithfulness", "coherence", "completeness", "instruction")
    assert [j.name for j in pipeline_config.configured] == list(pipeline_config.judges)
    again = ServiceSettings.from_json(json.loads(json.dumps(settings.to_json())))
    assert again.pipeline.configured == pipeline_config.configured and again.pipeline.judges_config == JUDGES_YAML
    chosen = PipelineConfig(judges=("relevance",), judges_config=JUDGES_YAML)
    assert chosen.judges == ("relevance",)
    with pytest.raises(ConfigError, match="unknown judge 'tone'"):
        PipelineConfig(judges=("tone",), judges_config=JUDGES_YAML)


@pytest.mark.anyio
async def test_a_judge_of_its_own_without_a_judge_model_is_skipped_not_a_crash(tmp_path: Path) -> None:
    """A judges file may name a judge Proctor does not have built in; with no judge model it is skipped."""
    text = JUDGES_YAML.read_text().replace("    - name: coherence\n", "    - name: tone\n", 1)
    config = tmp_path / "judges.yaml"
    config.write_text(text)
    result = await build_pipeline(ServiceSettings(PipelineConfig(judges_config=config))).evaluate(payload("pass.json"))
    assert result.verdict == "error" and "tone-judge" in [e.name for e in result.errors]
    assert {e.status for e in result.errors} == {"skipped"}
