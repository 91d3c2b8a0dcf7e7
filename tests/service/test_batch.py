"""Offline scoring of event files (`score_events`, for `proctor score`) and calibration."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from proctor.errors import ConfigError
from proctor.results._stats import tau_b_exact as _tau_b
from proctor.service import ServiceSettings, calibrate, kendall_tau_b, looks_like_events, score_events
from service.events import SEED_EARLY_EXIT, SEED_EVALUATE, event
from service.judge_server import JudgeScript, verdict


def settings(script: JudgeScript) -> ServiceSettings:
    return ServiceSettings(judge_model="openai/judge-test", judge_base_url=script.base_url, judge_api_key="k")


def write(path: Path, *lines: Any) -> Path:
    path.write_text("".join((line if isinstance(line, str) else json.dumps(line)) + "\n" for line in lines))
    return path


def test_score_events_writes_results_in_file_order(tmp_path: Path, judge_server: Any) -> None:
    script = judge_server.script(default=verdict(0.9))
    events = write(tmp_path / "events.jsonl", event(event_id="a"), json.loads(SEED_EARLY_EXIT), "", event(event_id="c"))
    assert looks_like_events(events)
    summary = score_events(events, workers=2, output=tmp_path / "out.jsonl", settings=settings(script))
    assert [r.id for r in summary.results] == ["a", "evt-002", "c"]
    assert summary.verdicts == {"pass": 2, "fail": 1} and summary.events == 3
    lines = (tmp_path / "out.jsonl").read_text().splitlines()
    assert [json.loads(line)["id"] for line in lines] == ["a", "evt-002", "c"]
    assert summary.to_dict()["output"] == str(tmp_path / "out.jsonl")
    assert summary.exit_code == 1  # one fail


def test_exit_codes(tmp_path: Path, judge_server: Any) -> None:
    good = write(tmp_path / "good.jsonl", event(event_id="a"))
    assert score_events(good, settings=settings(judge_server.script(default=verdict(0.9)))).exit_code == 0
    assert score_events(good).exit_code == 3  # no judge: nothing could be judged
    early = write(tmp_path / "early.jsonl", json.loads(SEED_EARLY_EXIT))
    assert score_events(early).exit_code == 1  # a fail, decided without a judge
    assert score_events(early, dry_run=True).exit_code == 0


def test_invalid_lines_fail_before_any_judge_call(tmp_path: Path, judge_server: Any) -> None:
    script = judge_server.script()
    events = write(tmp_path / "e.jsonl", event(event_id="a"), "{oops", [1], {"event_id": "b"})
    with pytest.raises(ConfigError, match="3 invalid line") as caught:
        score_events(events, settings=settings(script))
    message = str(caught.value)
    assert "line 2: not JSON" in message and "line 3: expected a JSON object" in message
    assert "line 4: not a valid event: interaction: Field required" in message
    assert script.calls == 0
    summary = score_events(events, continue_on_error=True, settings=settings(script))
    assert [r.id for r in summary.results] == ["a"] and [e.line for e in summary.invalid] == [2, 3, 4]


def test_dry_run_counts_early_exits_without_a_model(tmp_path: Path) -> None:
    events = write(tmp_path / "e.jsonl", json.loads(SEED_EVALUATE), json.loads(SEED_EARLY_EXIT))
    summary = score_events(events, dry_run=True, output=tmp_path / "never.jsonl")
    assert summary.verdicts == {"needs-judges": 1, "fail": 1} and summary.judge_calls_needed == 1
    assert summary.results == [] and not (tmp_path / "never.jsonl").exists()


def test_file_kind_detection(tmp_path: Path) -> None:
    assert not looks_like_events(write(tmp_path / "suite.jsonl", {"name": "x", "turns": []}))
    assert not looks_like_events(write(tmp_path / "bad.jsonl", "not json"))
    with pytest.raises(ConfigError, match="cannot read"):
        score_events(tmp_path / "missing.jsonl")


@pytest.mark.parametrize(
    ("xs", "ys", "tau"),
    [
        ([0, 1, 2, 3], [0, 1, 2, 3], 1.0),
        ([0, 1, 2, 3], [3, 2, 1, 0], -1.0),
        # one tie on each side: tau-b = (C - D) / sqrt((n0 - n1)(n0 - n2)) = (4 - 0) / sqrt(5 * 5)
        ([0, 0, 1, 2], [0, 1, 1, 2], 0.8),
        ([0, 1, 2, 0, 1, 2], [0, 1, 2, 2, 1, 0], 0.0),
    ],
)
def test_kendall_tau_b_without_scipy(xs: list[int], ys: list[int], tau: float) -> None:
    assert _tau_b(xs, ys) == pytest.approx(tau)


def brute_force_tau_b(xs: list[int], ys: list[int]) -> float:
    concordant = discordant = ties_x = ties_y = 0
    for i in range(len(xs)):
        for j in range(i + 1, len(xs)):
            dx, dy = xs[i] - xs[j], ys[i] - ys[j]
            ties_x += dx == 0
            ties_y += dy == 0
            concordant += dx * dy > 0
            discordant += dx * dy < 0
    pairs = len(xs) * (len(xs) - 1) // 2
    return (concordant - discordant) / ((pairs - ties_x) * (pairs - ties_y)) ** 0.5


def test_kendall_tau_b_matches_a_pairwise_count_on_random_verdicts() -> None:
    import random

    rng = random.Random(7)
    for _ in range(50):
        n = rng.randint(3, 60)
        xs = [rng.randint(0, 2) for _ in range(n)]
        ys = [min(2, max(0, x + rng.choice((-1, 0, 0, 1)))) for x in xs]
        if len(set(xs)) > 1 and len(set(ys)) > 1:
            assert _tau_b(xs, ys) == pytest.approx(brute_force_tau_b(xs, ys))


def test_kendall_tau_b_matches_scipy() -> None:
    stats = pytest.importorskip("scipy.stats")
    xs, ys = [0, 0, 1, 2, 2, 1, 0, 2, 1, 1], [0, 1, 1, 2, 1, 0, 0, 2, 2, 1]
    assert _tau_b(xs, ys) == pytest.approx(stats.kendalltau(xs, ys)[0])


def test_kendall_tau_is_undefined_for_a_constant_side() -> None:
    assert kendall_tau_b([1, 1, 1], [0, 1, 2]) is None
    assert kendall_tau_b([1], [1]) is None


def labelled(score_event: str, label: str, event_id: str) -> dict[str, Any]:
    data = event(score_event, event_id)
    data["label"] = label
    return data


def test_calibration_agreement_confusion_and_tau(tmp_path: Path, judge_server: Any) -> None:
    # verdicts: early exits fail; judged events pass (0.95 from every judge)
    script = judge_server.script(default=verdict(0.95))
    lines = [
        labelled(SEED_EVALUATE, "pass", "p1"),
        labelled(SEED_EVALUATE, "pass", "p2"),
        labelled(SEED_EVALUATE, "review", "r1"),
        labelled(SEED_EARLY_EXIT, "fail", "f1"),
        labelled(SEED_EARLY_EXIT, "FAIL", "f2"),
        {**labelled(SEED_EARLY_EXIT, "pass", "x"), "label": "maybe"},
    ]
    report = calibrate(write(tmp_path / "labels.jsonl", *lines), settings=settings(script), threshold=0.5)
    assert report.compared == 5 and report.errors == 0
    assert report.agreement == pytest.approx(4 / 5)
    assert report.confusion["pass"]["pass"] == 2 and report.confusion["review"]["pass"] == 1
    assert report.confusion["fail"]["fail"] == 2
    assert report.tau == pytest.approx(_tau_b([2, 2, 1, 0, 0], [2, 2, 2, 0, 0]))
    assert report.passed and [e.line for e in report.invalid] == [6]
    assert "label 'maybe'" in report.invalid[0].message
    # kappa: p_o = 4/5; p_e = (2 x 3 [pass] + 1 x 0 [review] + 2 x 2 [fail]) / 25 = 0.4; (0.8 - 0.4) / 0.6
    assert report.kappa == pytest.approx(2 / 3) and report.to_dict()["cohen_kappa"] == report.kappa
    strict = calibrate(write(tmp_path / "labels.jsonl", *lines), settings=settings(script), min_kappa=0.7)
    assert strict.kappa == pytest.approx(2 / 3) and strict.tau == report.tau and not strict.passed


def test_calibration_needs_a_judge(tmp_path: Path) -> None:
    labels = write(tmp_path / "labels.jsonl", labelled(SEED_EVALUATE, "pass", "a"))
    with pytest.raises(ConfigError, match="configure a judge"):
        calibrate(labels, settings=ServiceSettings())
