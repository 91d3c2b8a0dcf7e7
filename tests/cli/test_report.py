"""`proctor runs`, `report`, `compare` and `rescore` through the CLI, on real runs of a Python agent."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from proctor.cli import app
from servers.model_server import Reply

runner = CliRunner()

QUESTIONS = 10
SUITE = "name: quiz\ntarget: python:helpers.report_agents:by_model\ntrials: 3\ntags: [quiz]\ncases:\n" + "".join(
    f"  - name: q{n}\n    tags: [{'early' if n <= 5 else 'late'}]\n    turns:\n"
    f"      - content: question {n}\n        assert:\n          - {{type: contains, value: 'answer is {n}'}}\n"
    for n in range(1, QUESTIONS + 1)
)


def invoke(*args: str) -> Any:
    return runner.invoke(app, list(args))


def run_model(suites: Path, model: str, noise: int) -> dict[str, Any]:
    """Run the quiz with `model`; `noise` picks which trials miss by chance (see `helpers.report_agents`)."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("REPORT_AGENT_NOISE", str(noise))
        result = invoke("run", str(suites), "--model", model, "--ci")
    assert result.exit_code in (0, 1), result.output
    return json.loads(result.stdout)


@pytest.fixture
def suites(tmp_path: Path) -> Path:
    directory = tmp_path / "evals"
    directory.mkdir()
    (directory / "quiz.yaml").write_text(SUITE)
    return directory


def test_runs_are_indexed_listed_and_reported(suites: Path) -> None:
    good = run_model(suites, "good", 1)
    bad = run_model(suites, "bad", 1)
    assert (suites / ".proctor" / "history.db").exists()

    listing = invoke("runs", "--history", str(suites), "--json")
    assert listing.exit_code == 0, listing.output
    runs = json.loads(listing.stdout)
    assert [r["run_id"] for r in runs] == [bad["run_id"], good["run_id"]]  # newest first
    by_model = {r["model"]: r for r in runs}
    assert by_model["bad"]["passed"] <= 2 and by_model["good"]["cases"] == QUESTIONS
    table = invoke("runs", "--history", str(suites / ".proctor" / "history.db"), "--model", "bad")
    assert table.exit_code == 0 and bad["run_id"] in table.stdout and good["run_id"] not in table.stdout

    report = invoke("report", "--history", str(suites))
    assert report.exit_code == 0, report.output
    markdown = (suites / "evals-report.md").read_text()
    assert "| Eval | good | bad |" in markdown
    assert "## Failed Trials: bad" in markdown and "### q1 -- Trial 1 (score: 0.00)" in markdown
    html = (suites / "evals-report.html").read_text()
    assert html.count('<details class="trial"') == 2 * QUESTIONS * 3

    only = invoke("report", good["results_file"], "--output-dir", str(suites / "one"), "--no-html")
    assert only.exit_code == 0, only.output
    assert "| Eval | good |" in (suites / "one" / "evals-report.md").read_text()
    assert not (suites / "one" / "evals-report.html").exists()


def test_compare_tells_a_real_regression_from_noise(suites: Path) -> None:
    baseline = run_model(suites, "good", 1)
    rerun = run_model(suites, "good", 2)  # the same agent, other noise
    worse = run_model(suites, "bad", 3)
    history = str(suites)

    noise = invoke("compare", baseline["run_id"], rerun["run_id"], "--history", history, "--fail-on-regression")
    assert noise.exit_code == 0, noise.output
    assert "verdict: no significant difference" in noise.stdout

    regression = invoke("compare", baseline["run_id"], worse["run_id"], "--history", history, "--fail-on-regression")
    assert regression.exit_code == 1, regression.output
    assert "verdict: regression" in regression.stdout and "regressed" in regression.stdout

    informative = invoke("compare", baseline["run_id"], worse["run_id"], "--history", history, "--json")
    assert informative.exit_code == 0  # without --fail-on-regression a regression is only reported
    data = json.loads(informative.stdout)
    assert data["verdict"] == "regression" and data["pass_fail"]["mcnemar_p"] < 0.001
    assert data["pass_fail"]["a_only_passed"] > 15 and data["score"]["high"] < 0

    by_file = invoke("compare", baseline["results_file"], worse["results_file"], "--fail-on-regression")
    assert by_file.exit_code == 1  # results files work without a history


def test_history_errors_are_clear(tmp_path: Path, suites: Path) -> None:
    missing = invoke("report", "--history", str(tmp_path / "nowhere"))
    assert missing.exit_code == 2 and "no run history" in missing.output
    run_model(suites, "good", 1)
    unknown = invoke("compare", "nope", "also-nope", "--history", str(suites))
    assert unknown.exit_code == 2 and "no run 'nope'" in unknown.output
    gone = json.loads(invoke("runs", "--history", str(suites), "--json").stdout)[0]
    Path(gone["path"]).unlink()
    report = invoke("report", "--history", str(suites))
    assert report.exit_code == 2 and "is gone" in report.output
    pruned = invoke("runs", "--history", str(suites), "--prune")
    assert pruned.exit_code == 0 and "forgot 1 run" in pruned.stdout
    rescan = invoke("runs", "--history", str(tmp_path / "fresh.db"), "--scan", str(tmp_path / "missing"))
    assert rescan.exit_code == 2


JUDGED = """\
name: judged
trials: 2
target: python:helpers.agents:echo
rubric: tone.md
turns:
  - content: "Paris is the capital of France."
    assert:
      - {type: contains, value: Paris}
      - {type: llm-rubric, value: "States the capital"}
"""


def verdict(passed: bool) -> Reply:
    return Reply(
        json.dumps(
            {
                "reason": "Names Paris." if passed else "Does not answer.",
                "pass": passed,
                "score": 0.9 if passed else 0.1,
                "criteria": [{"name": "Polite", "passed": passed, "explanation": "tone"}],
            }
        )
    )


def test_rescore_rejudges_stored_transcripts_without_the_agent(
    tmp_path: Path, model_server: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    suites = tmp_path / "judged"
    suites.mkdir()
    (suites / "judged.yaml").write_text(JUDGED)
    (suites / "tone.md").write_text("# Tone\n- Polite\n")
    first = invoke("run", str(suites), "--ci", "--allow-skipped")  # no judge on purpose: --ci alone refuses
    assert first.exit_code == 0, first.output
    original = json.loads(first.stdout)
    assert original["summary"]["checks"]["skipped"] == 4  # no judge: llm-rubric and rubric skipped
    # The agent is gone: a rescore that contacted it would fail.
    (suites / "judged.yaml").write_text(JUDGED.replace("python:helpers.agents:echo", "http://127.0.0.1:9/v1"))
    script = model_server.script(default=verdict(False))
    monkeypatch.setenv("OPENAI_BASE_URL", script.base_url)
    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    common = ["--history", str(suites), "--judge", "openai/gpt-4.1-mini", "--cache-dir", str(tmp_path / "cache")]

    only_inline = invoke("rescore", original["run_id"], "--checks", "llm-rubric", "--ci", *common)
    assert only_inline.exit_code == 1, only_inline.output
    partial = json.loads(only_inline.stdout)
    assert partial["rescored_from"] == original["run_id"] and partial["run_id"] != original["run_id"]
    assert partial["summary"]["checks"] == {"passed": 2, "failed": 2, "error": 0, "skipped": 2}
    assert len(script.bodies) == 2  # one judge call per trial, for llm-rubric only

    script.default = verdict(True)
    full = invoke("rescore", original["results_file"], "--no-cache", "--ci", *common)
    assert full.exit_code == 0, full.output
    summary = json.loads(full.stdout)
    assert summary["summary"]["checks"] == {"passed": 6, "failed": 0, "error": 0, "skipped": 0}
    data = json.loads(Path(summary["results_file"]).read_text())
    assert data["rescored_from"] == original["run_id"]
    old = json.loads(Path(original["results_file"]).read_text())
    for new_case, old_case in zip(data["cases"], old["cases"], strict=True):
        for new_trial, old_trial in zip(new_case["trials"], old_case["trials"], strict=True):
            assert new_trial["turns"] == old_trial["turns"]  # the stored conversation, not a new one
            assert new_trial["costs"]["judge"]["calls"] == 2
    rubric = next(c for c in data["cases"][0]["trials"][0]["checks"] if c["type"] == "rubric")
    assert rubric["status"] == "passed" and rubric["details"]["judge"]["model"] == "openai/gpt-4.1-mini"

    listing = json.loads(invoke("runs", "--history", str(suites), "--json").stdout)
    assert {r["rescored_from"] for r in listing} == {None, original["run_id"]}
    assert len(listing) == 3

    bad_check = invoke("rescore", original["run_id"], "--checks", "no-such-check", *common)
    assert bad_check.exit_code == 2 and "--checks" in bad_check.output


ALMOST = """\
name: almost
trials: 2
target: python:helpers.agents:echo
turns:
  - content: "CONTENT"
    assert:
      - {type: contains, value: Alice, weight: 10}
      - {type: contains-all, value: [Alice, Dave]}
"""


def test_compare_reports_a_check_regression_inside_a_case_that_still_passes(tmp_path: Path) -> None:
    def run(content: str, name: str) -> str:
        (tmp_path / "almost.yaml").write_text(ALMOST.replace("CONTENT", content))
        result = invoke("run", str(tmp_path), "--ci", "--results-dir", str(tmp_path / name), "--model", name)
        assert result.exit_code == 0, result.output
        return str(json.loads(result.stdout)["results_file"])

    before, after = run("Alice and Dave", "a"), run("Alice and Bob", "b")
    table = invoke("compare", before, after)
    assert table.exit_code == 0, table.output
    # Before issue 14 the case was "unchanged" and hidden: it passed in both runs.
    assert "check regressed almost: turn 1 contains-all" in table.output
    assert "failed in 0 of 2 trials in A, 2 of 2 in B" in table.output
    data = json.loads(invoke("compare", before, after, "--json").stdout)
    (regression,) = data["check_regressions"]
    assert regression["case"] == "almost" and regression["a"] == [0, 2] and regression["b"] == [2, 2]
    assert data["cases"][0]["change"] == "unchanged" and data["cases"][0]["checks"][0]["change"] == "regressed"
    by_id = invoke("compare", json.loads(Path(before).read_text())["run_id"], after, "--history", str(tmp_path))
    assert "check regressed almost" in by_id.output  # from the history index too (checks read from the file)


def test_report_k_recomputes_pass_at_k_and_pass_hat_k(tmp_path: Path) -> None:
    data = Path(__file__).parent.parent / "results" / "data" / "gpt-4-1-mini_20261101T090000Z.json"
    # trials: vacation-dates P P F, out-next-week P P P, lookup-email P P P, json-reply P E F (n = 2)
    result = invoke("report", str(data), "--k", "2", "--output-dir", str(tmp_path), "--no-html")
    assert result.exit_code == 0, result.output
    markdown = (tmp_path / "evals-report.md").read_text()
    # pass@2: 1 for every case; pass^2: (C(2,2)/C(3,2) + 1 + 1 + C(1,2)/C(2,2)) / 4 = (1/3 + 2) / 4 = 0.58
    assert "| $0.0029 | 1.00 (k=2) | 0.58 (k=2) |" in markdown
    assert "| vacation-dates | FAIL 0.76 (67% [21-94%]) |" in markdown  # Wilson 2/3: 0.208-0.939
    default = invoke("report", str(data), "--output-dir", str(tmp_path / "n"), "--no-html")
    assert default.exit_code == 0, default.output
    # k = n: pass@n 1 everywhere; pass^n: (0 + 1 + 1 + 0) / 4
    assert "| $0.0029 | 1.00 | 0.50 |" in (tmp_path / "n" / "evals-report.md").read_text()
    assert invoke("report", str(data), "--k", "0").exit_code == 2


def run_cases(suites: Path, model: str, *cases: str) -> dict[str, Any]:
    """A `--case` run: only some of the quiz's questions."""
    args = [arg for case in cases for arg in ("--case", case)]
    result = invoke("run", str(suites), "--model", model, "--ci", *args)
    assert result.exit_code in (0, 1), result.output
    return json.loads(result.stdout)


def test_report_compares_like_with_like(suites: Path) -> None:
    full_good = run_model(suites, "good", 1)
    full_bad = run_model(suites, "bad", 1)
    partial_good = run_cases(suites, "good", "q1", "q2")  # newer, but 2 of the 10 cases
    report = invoke("report", "--history", str(suites), "--no-html")
    assert report.exit_code == 0, report.output
    assert f"its newest run {partial_good['run_id']} covers 2 cases of 10" in report.stdout
    assert full_good["run_id"] in report.stdout and full_bad["run_id"] in report.stdout
    assert "covered different cases" not in report.stdout  # the full runs share every case

    fresh = run_cases(suites, "fresh", "q3")  # a model with one run of one case: nothing wider to take
    report = invoke("report", "--history", str(suites), "--no-html")
    assert report.exit_code == 0, report.output
    assert "the report compares the 1 case all of them ran" in report.stdout
    assert f"{fresh['run_id']}: 1 case" in report.stdout and "report of 3 runs" in report.stdout
    markdown = (suites / "evals-report.md").read_text()
    assert "| q3 |" in markdown and "| q4 |" not in markdown  # the table holds only the shared case

    named = invoke("report", partial_good["run_id"], fresh["run_id"], "--history", str(suites))
    assert named.exit_code == 2 and "the runs share no case" in named.output


def test_compare_says_when_the_runs_covered_different_cases(suites: Path) -> None:
    full = run_model(suites, "good", 1)
    partial = run_cases(suites, "good", "q1", "q2", "q3")
    result = invoke("compare", full["run_id"], partial["run_id"], "--history", str(suites))
    assert result.exit_code == 0, result.output
    assert "the runs covered different cases (A 10 cases, B 3)" in result.stdout
    assert "compare the 3 cases both ran; 7 only in A (removed), 0 only in B (added)" in result.stdout
    data = json.loads(invoke("compare", full["run_id"], partial["run_id"], "--history", str(suites), "--json").stdout)
    assert data["coverage"] == {"a": 10, "b": 3, "shared": 3, "same": False}
    assert data["pass_fail"]["pairs"] <= 3 * 3  # only the shared cases' trials are paired


def test_runs_shows_whole_run_ids(suites: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    first = run_model(suites, "a-model-with-a-rather-long-name-for-a-column", 1)
    monkeypatch.setenv("COLUMNS", "100")
    table = invoke("runs", "--history", str(suites))
    assert table.exit_code == 0, table.output
    assert first["run_id"] in table.stdout and "…" not in table.stdout.split(first["run_id"])[0][-3:]
    assert "rescored from" not in table.stdout  # no run was rescored: no column for it
