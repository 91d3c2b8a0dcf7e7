"""The trust policy at load time: code a suite names, files it names, templates it brings."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import jinja2
import pytest

from proctor.checks import CheckType, Outcome, registry
from proctor.checks._judging import Judge
from proctor.checks._registry import CheckRegistry
from proctor.drivers.simulator import Simulator
from proctor.errors import ConfigError, SuiteError
from proctor.models import ModelSettings, get_model
from proctor.models._registry import ENTRY_POINT_GROUP
from proctor.suite import MAX_FILE_BYTES, SimulateSpec, Trust, load_suite_file, load_suites
from proctor.suite._policy import MODEL_PLUGINS
from proctor.targets._http import _Templates

ESCAPE = "{{ cycler.__init__.__globals__.os.popen('touch %s').read() }}"
UNTRUSTED = Trust()


def write(directory: Path, name: str, text: str) -> Path:
    path = directory / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def problems(path: Path, trust: Trust | None = UNTRUSTED, checks: Any = registry) -> list[str]:
    with pytest.raises(SuiteError) as info:
        load_suite_file(path, checks, trust=trust)
    return [f"{i.line}:{i.column}: {i.field}: {i.message}" for i in info.value.issues]


PYTHON_SUITE = """name: hooks
target: {type: python, callable: "helpers.agents:echo", seed: "os:system"}
seeds: [{text: "touch /tmp/owned"}]
turns: [{content: hi}]
"""


def test_code_a_suite_names_is_a_located_error_that_says_how_to_allow_it(tmp_path: Path) -> None:
    path = write(tmp_path, "hooks.yaml", PYTHON_SUITE)
    found = problems(path)
    assert found[0].startswith("2:34: target.callable: the suite names Python code to run (helpers.agents:echo)")
    assert found[1].startswith("2:63: target.seed: the suite names Python code to run (os:system)")
    assert all("pass --trust" in text and "'trusted: true'" in text for text in found)


def test_trust_comes_from_the_flag_the_project_config_or_the_command_line_target(tmp_path: Path) -> None:
    path = write(tmp_path, "evals/hooks.yaml", PYTHON_SUITE)
    assert load_suite_file(path, registry, trust=Trust(trusted=True)).cases[0].name == "hooks"
    assert load_suite_file(path, registry, trust=Trust(target_from_command_line=True)).cases
    assert load_suite_file(path, registry).cases  # a library caller with no policy: as before
    write(tmp_path, "proctor.yaml", "trusted: true\n")
    assert load_suites([tmp_path / "evals"], registry, trust=UNTRUSTED)[0].name == "hooks"
    write(tmp_path, "proctor.yaml", "trusted: false\n")
    with pytest.raises(SuiteError, match="pass --trust"):
        load_suites([tmp_path / "evals"], registry, trust=UNTRUSTED)


def test_a_broken_project_config_is_reported(tmp_path: Path) -> None:
    write(tmp_path, "proctor.yaml", "trusted: maybe\n")
    path = write(tmp_path, "s.yaml", "name: s\nturns: [{content: hi}]\n")
    with pytest.raises(SuiteError, match=r"proctor\.yaml:1:10: trusted: Input should be a valid boolean"):
        load_suites([path], registry, trust=UNTRUSTED)


def test_plugin_check_types_need_trust(tmp_path: Path) -> None:
    class WithPlugin(CheckRegistry):
        def plugin_of(self, name: str) -> str | None:
            return "acme_checks:CHECKS (entry point 'acme')" if name == "acme-tone" else None

    catalog = WithPlugin()
    for check in registry:
        catalog.register(check)
    catalog.register(CheckType("acme-tone", "custom", "Tone.", lambda spec, ctx: Outcome(True, "", "")))
    path = write(tmp_path, "plugin.yaml", "name: p\nturns: [{content: hi, assert: [{type: acme-tone}]}]\n")
    (found,) = problems(path, checks=catalog)
    assert "turns[0].assert[0].type: check type 'acme-tone' runs code from the plugin acme_checks:CHECKS" in found
    assert load_suite_file(path, catalog, trust=Trust(trusted=True)).cases


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        (
            "setups",
            "[{file: /etc/hostname}]",
            "setups[0]: setup script '/etc/hostname' resolves to /etc/hostname, outside the project root",
        ),
        ("setups", "[{file: ../../outside.cypher}]", "outside the project root"),
        ("rubric", "/dev/zero", "rubric: rubric '/dev/zero' resolves to /dev/zero, outside the project root"),
        ("state", "{teardown: [{file: /etc/passwd}]}", "state.teardown[0]: setup script '/etc/passwd' resolves"),
        ("judge", "{model: openai/x, prompts: {relevance: /etc/passwd}}", "judge.prompts.relevance: prompt template"),
    ],
)
def test_files_outside_the_project_root_are_refused(tmp_path: Path, field: str, value: str, message: str) -> None:
    path = write(tmp_path, "deep/er/suite.yaml", f"name: s\n{field}: {value}\nturns: [{{content: hi}}]\n")
    found = problems(path, Trust(root=tmp_path / "deep"))
    assert any(message in text for text in found), found
    assert all(text.split(":")[0] != "None" for text in found)  # located


def test_only_regular_files_of_bounded_size_are_read(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "pipe.md")  # opening it for reading would block forever
    (tmp_path / "zero.md").symlink_to("/dev/zero")
    (tmp_path / "big.md").write_bytes(b"x" * (MAX_FILE_BYTES + 1))
    for name, message in [
        ("pipe.md", "is not a regular file"),
        ("zero.md", "outside the project root"),  # the link is followed: /dev/zero
        ("big.md", "is larger than 8 MiB"),
    ]:
        path = write(tmp_path, f"{name}.yaml", f"name: s\nrubric: {name}\nturns: [{{content: hi}}]\n")
        (found,) = problems(path)
        assert found.startswith("2:9: rubric: ") and message in found, found


def test_inside_the_project_files_are_read(tmp_path: Path) -> None:
    write(tmp_path, "rubrics/polite.md", "Be polite.")
    write(tmp_path, "proctor.yaml", "trusted: false\n")
    path = write(tmp_path, "evals/s.yaml", "name: s\nrubric: ../rubrics/polite.md\nturns: [{content: hi}]\n")
    (suite,) = load_suites([tmp_path / "evals"], registry, trust=UNTRUSTED)  # root: proctor.yaml's directory
    assert suite.cases[0].rubric is not None and suite.cases[0].rubric.text == "Be polite."
    assert path.exists()


def test_http_templates_render_in_a_sandbox(tmp_path: Path) -> None:
    marker = tmp_path / "owned"
    render = _Templates().compile({"q": ESCAPE % marker}, "target.request.body")
    with pytest.raises(ConfigError, match=r"cannot render target\.request\.body\.q .*unsafe"):
        render({"message": "hi"})
    assert not marker.exists()
    assert _Templates().compile("{{ message | upper }}", "url")({"message": "hi"}) == "HI"  # filters still work


def test_judge_and_simulator_prompts_render_in_a_sandbox(tmp_path: Path) -> None:
    marker = tmp_path / "owned"
    model = get_model("openai/x", settings=ModelSettings(base_url="http://127.0.0.1:9/v1", api_key="k", cache=None))
    judge = Judge(model, prompts={"relevance": ESCAPE % marker})
    with pytest.raises(jinja2.exceptions.SecurityError):
        judge.messages("relevance", {})
    simulator = Simulator(model, prompt=ESCAPE % marker)
    with pytest.raises(jinja2.exceptions.SecurityError):
        simulator.system_prompt(SimulateSpec(), "withheld")
    assert not marker.exists()


def test_model_providers_from_plugins_need_trust(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    dist = tmp_path / "site" / "acme_models-0.1.dist-info"
    dist.mkdir(parents=True)
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: acme-models\nVersion: 0.1\n", encoding="utf-8")
    (dist / "entry_points.txt").write_text("[proctor.models]\nacme = acme_models:factory\n", encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path / "site"))  # an installed plugin, never imported here
    path = write(
        tmp_path, "s.yaml", "name: s\njudge: acme/big\nsimulator: openai/gpt-4.1-mini\nturns: [{content: hi}]\n"
    )
    (found,) = problems(path)
    assert found.startswith("2:8: judge.model: model 'acme/big' comes from the provider plugin acme_models:factory")
    assert load_suite_file(path, registry, trust=Trust(trusted=True)).cases
    assert MODEL_PLUGINS == ENTRY_POINT_GROUP  # the loader looks where the model registry loads from
