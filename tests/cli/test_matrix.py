"""`proctor run` with several --model (or --target) values: one run per combination and one comparison."""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import pytest
from typer.testing import CliRunner

from proctor.cli import app

runner = CliRunner()

SUITE = """\
name: words
trials: 1
cases:
  - name: say
    dataset: {path: words.csv, name_from: n}
    turns:
      - content: "say {{ n }} {{ word }}"
        assert: [{type: contains, value: "{{ word }}"}]
"""


def test_a_200_row_csv_runs_against_two_models_in_one_command_with_one_comparison(tmp_path: Path) -> None:
    rows = "\n".join(f"{n},word{n}" for n in range(200))
    (tmp_path / "words.csv").write_text(f"n,word\n{rows}\n", encoding="utf-8")
    (tmp_path / "words.yaml").write_text(SUITE, encoding="utf-8")
    results = tmp_path / "results"
    args = ["run", str(tmp_path / "words.yaml"), "--target", "python:helpers.agents:by_model", "--quiet"]
    result = runner.invoke(app, [*args, "--model", "strong", "--model", "weak", "--results-dir", str(results)])
    assert result.exit_code == 1, result.output  # the weak model failed cases
    lines = result.output.splitlines()
    assert any(line.startswith("strong @ python:helpers.agents:by_model: 200 passed, 0 failed") for line in lines)
    assert any(line.startswith("weak @ python:helpers.agents:by_model: 100 passed, 100 failed") for line in lines)
    strong = next(line for line in lines if line.startswith("strong @") and "baseline" in line)
    weak = next(line for line in lines if line.startswith("weak @") and "McNemar" in line)
    assert " 100% " in strong and " 98%-100% " in strong
    assert " 50% " in weak and "0 better, 100 worse (McNemar p=1.58e-30)" in weak
    (matrix_file,) = results.glob("matrix_*.matrix.json")
    matrix = json.loads(matrix_file.read_text(encoding="utf-8"))
    assert [run["model"] for run in matrix["runs"]] == ["strong", "weak"]
    baseline, candidate = matrix["comparison"]
    assert (baseline["cases"], baseline["passed"], baseline["vs_baseline"]) == (200, 200, None)
    assert candidate["vs_baseline"]["worse"] == 100 and candidate["vs_baseline"]["better"] == 0
    for run in matrix["runs"]:  # each combination is an ordinary run with its own results file
        data = json.loads(Path(run["results"]).read_text(encoding="utf-8"))
        assert data["model"] == run["model"] and len(data["cases"]) == 200
    markdown = matrix_file.with_name(matrix["group"] + ".md").read_text(encoding="utf-8")
    html = matrix_file.with_name(matrix["group"] + ".html").read_text(encoding="utf-8")
    for report in (markdown, html):  # the runs side by side, then the paired test
        assert "Matrix: paired comparison against the first combination" in report
        assert "0 better, 100 worse (McNemar p=1.58e-30)" in report and "strong" in report and "weak" in report


def test_two_targets_make_two_runs_and_one_model_stays_a_plain_run(tmp_path: Path) -> None:
    (tmp_path / "words.csv").write_text("n,word\n2,two\n3,three\n", encoding="utf-8")
    (tmp_path / "words.yaml").write_text(SUITE, encoding="utf-8")
    results = tmp_path / "results"
    args = ["run", str(tmp_path / "words.yaml"), "--quiet", "--results-dir", str(results), "--model", "weak"]
    both = runner.invoke(
        app, [*args, "--target", "python:helpers.agents:echo", "--target", "python:helpers.agents:by_model"]
    )
    assert both.exit_code == 1, both.output
    assert "weak @ python:helpers.agents:echo" in both.output and "1 better" not in both.output
    assert "0 better, 1 worse (McNemar p=1)" in both.output
    plain = runner.invoke(app, [*args, "--target", "python:helpers.agents:echo"])
    assert plain.exit_code == 0 and "McNemar" not in plain.output and "matrix" not in plain.output


def test_output_and_resume_take_one_run(tmp_path: Path) -> None:
    (tmp_path / "words.csv").write_text("n,word\n2,two\n", encoding="utf-8")
    (tmp_path / "words.yaml").write_text(SUITE, encoding="utf-8")
    args = ["run", str(tmp_path / "words.yaml"), "--target", "python:helpers.agents:echo", "-m", "a", "-m", "b"]
    result = runner.invoke(app, [*args, "--output", str(tmp_path / "out.json")])
    assert result.exit_code == 2 and "--output and --resume take one run" in result.output
    assert not (tmp_path / "out.json").exists()


def test_a_matrix_under_ci_prints_one_json_document(tmp_path: Path) -> None:
    (tmp_path / "words.csv").write_text("n,word\n2,two\n3,three\n", encoding="utf-8")
    (tmp_path / "words.yaml").write_text(SUITE, encoding="utf-8")
    args = ["run", str(tmp_path / "words.yaml"), "--ci", "--results-dir", str(tmp_path / "results")]
    result = runner.invoke(
        app, [*args, "--target", "python:helpers.agents:by_model", "--model", "strong", "--model", "weak"]
    )
    document = json.loads(result.stdout)  # one document, nothing else on stdout
    assert result.exit_code == document["exit_code"] == 1
    assert [s["model"] for s in document["summaries"]] == ["strong", "weak"]
    assert [s["exit_code"] for s in document["summaries"]] == [0, 1]
    assert document["comparison"][1]["vs_baseline"]["worse"] == 1


def test_the_project_config_names_the_matrix(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "words.csv").write_text("n,word\n2,two\n3,three\n", encoding="utf-8")
    (tmp_path / "words.yaml").write_text(SUITE, encoding="utf-8")
    (tmp_path / "proctor.yaml").write_text(
        "trusted: true\ntarget: python:helpers.agents:echo\n"
        "matrix:\n  models: [strong, weak]\n  targets: [python:helpers.agents:by_model]\n",
        encoding="utf-8",
    )
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("PROCTOR_HOME", str(tmp_path / ".proctor"))
    result = runner.invoke(app, ["run", "words.yaml", "--ci"])
    document = json.loads(result.stdout)
    assert [s["model"] for s in document["summaries"]] == ["strong", "weak"]  # the matrix wins over `target:`
    assert {s["target"] for s in document["summaries"]} == {"python helpers.agents:by_model"}
    one = runner.invoke(app, ["run", "words.yaml", "--ci", "--model", "strong"])  # the command line wins
    assert json.loads(one.stdout)["model"] == "strong" and one.exit_code == 0


def test_a_matrix_is_one_group_in_the_store_runs_and_the_viewer(tmp_path: Path) -> None:
    from proctor.results import HistoryStore
    from proctor.view import ViewOptions, create_app
    from servers._serve import serve_app

    (tmp_path / "words.csv").write_text("n,word\n2,two\n3,three\n", encoding="utf-8")
    (tmp_path / "words.yaml").write_text(SUITE, encoding="utf-8")
    history = tmp_path / "store.db"
    args = ["run", str(tmp_path / "words.yaml"), "--quiet", "--history", str(history)]
    runner.invoke(app, [*args, "--target", "python:helpers.agents:by_model", "-m", "strong", "-m", "weak"])
    runner.invoke(app, [*args, "--target", "python:helpers.agents:by_model", "-m", "strong"])  # not a matrix
    with HistoryStore(history) as store:
        runs = list(reversed(store.runs()))  # in the order they ran
    grouped = [r for r in runs if r.run_group]
    assert len(runs) == 3 and [r.model for r in grouped] == ["strong", "weak"]
    assert grouped[0].run_group == grouped[1].run_group and grouped[0].run_group.startswith("matrix_")
    listed = json.loads(runner.invoke(app, ["runs", "--history", str(history), "--json"]).stdout)
    assert sorted(r["run_group"] or "" for r in listed) == ["", grouped[0].run_group, grouped[0].run_group]
    with serve_app(create_app(history, options=ViewOptions(poll_seconds=0.05))) as base:
        page = httpx.get(f"{base}/runs/{grouped[1].run_id}", timeout=10).text
        alone = httpx.get(f"{base}/runs/{next(r for r in runs if not r.run_group).run_id}", timeout=10).text
    assert f"one run of the matrix <code>{grouped[0].run_group}</code>" in page, page[page.find('id="group"') :][:900]
    assert f'href="/compare?a={grouped[0].run_id}&amp;b={grouped[1].run_id}"' in page, page[page.find('id="group"') :][
        :900
    ]
    assert 'id="group"' not in alone


# The comparison against the baseline pairs cases by `proctor compare`'s rule: an errored case is left out
# and counted, not a case that got worse (QA: a target that always raises was "0 better, 8 worse", p=0.0078).


def test_a_target_that_always_raises_is_left_out_not_worse(tmp_path: Path) -> None:
    (tmp_path / "words.csv").write_text("n,word\n2,two\n3,three\n", encoding="utf-8")
    (tmp_path / "words.yaml").write_text(SUITE, encoding="utf-8")
    args = ["run", str(tmp_path / "words.yaml"), "--results-dir", str(tmp_path / "results")]
    targets = ["--target", "python:helpers.agents:echo", "--target", "python:helpers.agents:crash"]
    table = runner.invoke(app, [*args, "--quiet", *targets])
    assert table.exit_code == 3, table.output  # every trial of the second run errored in its target
    crashed = next(line for line in table.output.splitlines() if line.startswith("python:helpers.agents:crash "))
    assert crashed.endswith("no case paired (2 cases left out: B errored 2)"), crashed
    assert "worse" not in crashed
    document = json.loads(runner.invoke(app, [*args, "--ci", *targets]).stdout)
    assert document["exit_code"] == 3
    assert document["comparison"][1]["vs_baseline"] == {
        "worse": 0,
        "better": 0,
        "mcnemar_p": 1.0,
        "pairs": 0,
        "left_out": {"pairs": 2, "a": {}, "b": {"error": 2}},
    }


PARTLY = '''\
def agent(messages):
    """Raise on a multiple of 3, answer wrong on other odd numbers, echo the rest."""
    text = messages[-1]["content"]
    n = int(text.split()[1])
    if n % 3 == 0:
        raise RuntimeError("broken")
    return text if n % 2 == 0 else "no idea"
'''


def test_the_matrix_and_compare_pair_the_same_way(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "matrix_partly_agent.py").write_text(PARTLY, encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    rows = "\n".join(f"{n},word{n}" for n in range(12))  # errors: 0 3 6 9; fails: 1 5 7 11; passes: 2 4 8 10
    (tmp_path / "words.csv").write_text(f"n,word\n{rows}\n", encoding="utf-8")
    (tmp_path / "words.yaml").write_text(SUITE, encoding="utf-8")
    args = ["run", str(tmp_path / "words.yaml"), "--results-dir", str(tmp_path / "results"), "--ci"]
    targets = ["--target", "python:helpers.agents:echo", "--target", "python:matrix_partly_agent:agent"]
    document = json.loads(runner.invoke(app, [*args, *targets]).stdout)
    assert document["exit_code"] == 1
    versus = document["comparison"][1]["vs_baseline"]
    assert versus == {
        "worse": 4,  # was 8: the 4 errored cases counted as worse
        "better": 0,
        "mcnemar_p": 0.125,
        "pairs": 8,
        "left_out": {"pairs": 4, "a": {}, "b": {"error": 4}},
    }
    matrix = json.loads(Path(document["matrix"]).read_text(encoding="utf-8"))
    table = Path(document["matrix"]).with_name(matrix["group"] + ".md").read_text(encoding="utf-8")
    assert "0 better, 4 worse (McNemar p=0.125); 4 cases left out: B errored 4" in table
    a, b = (run["results"] for run in matrix["runs"])
    compared = json.loads(runner.invoke(app, ["compare", a, b, "--json"]).stdout)  # one trial a case: the same
    pass_fail = compared["pass_fail"]
    assert (pass_fail["a_only_passed"], pass_fail["b_only_passed"]) == (versus["worse"], versus["better"])
    assert (pass_fail["pairs"], pass_fail["left_out"]) == (versus["pairs"], versus["left_out"])
    assert pass_fail["mcnemar_p"] == versus["mcnemar_p"]
    assert compared["verdict"] == "regression"  # the 4 failed cases, by the score bootstrap
    assert len(compared["unpaired_cases"]) == 4  # ... and the 4 errored ones said too: no pair to compare
    gate = runner.invoke(app, ["compare", a, b, "--fail-on-regression"])
    assert gate.exit_code == 1, gate.output
    assert "4 trial pairs left out: B errored 4" in gate.stdout
    assert "note: 4 cases with an outcome in A had no trial pair to compare in B" in gate.stdout
