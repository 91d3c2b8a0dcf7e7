from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from proctor.results import write_json, write_output


@pytest.mark.parametrize(
    "data",
    [
        {"version": 1, "run_id": "r", "cases": [{"name": "a", "x": [1, 2]}, {"name": "é"}]},
        {"version": 1, "cases": []},
        {"cases": [{"a": 1}]},
        {"version": 1},
    ],
)
def test_results_json_round_trips_one_case_per_line(tmp_path: Path, data: dict[str, object]) -> None:
    path = tmp_path / "r.json"
    write_json(path, data)
    text = path.read_text(encoding="utf-8")
    assert json.loads(text) == data
    if data.get("cases") and "version" in data:
        assert text.count("\n    {") == len(data["cases"])  # type: ignore[arg-type]
    assert not list(tmp_path.glob(".*.tmp"))  # written atomically, no temp file left
    mask = os.umask(0)
    os.umask(mask)
    assert path.stat().st_mode & 0o777 == 0o666 & ~mask  # an ordinary file, not mkstemp's 0600


def test_write_output_picks_junit_for_xml(tmp_path: Path) -> None:
    run = {
        "run_id": "r",
        "cases": [
            {
                "name": "c",
                "suite": "s",
                "file": "s.yaml",
                "trials": [
                    {"trial": 1, "status": "error", "duration_ms": 5.0, "checks": [], "warnings": [], "error": "boom"}
                ],
            }
        ],
    }
    write_output(tmp_path / "out.xml", run)
    text = (tmp_path / "out.xml").read_text()
    assert '<error message="boom"' in text and 'errors="1"' in text and 'failures="0"' in text


def test_the_run_s_json_is_made_only_when_the_output_needs_it(tmp_path: Path) -> None:
    run = {"run_id": "r", "cases": []}
    made: list[None] = []

    def make() -> dict[str, object]:
        made.append(None)
        return run

    written = tmp_path / "r.json"
    write_json(written, run)
    write_output(tmp_path / "copy.json", make, written=written)  # a copy of the written file
    assert not made and (tmp_path / "copy.json").read_bytes() == written.read_bytes()
    write_output(tmp_path / "fresh.json", make)  # nothing written: serialised from the JSON
    assert len(made) == 1 and (tmp_path / "fresh.json").read_bytes() == written.read_bytes()
    write_output(tmp_path / "out.xml", make, written=written)
    assert len(made) == 2 and (tmp_path / "out.xml").exists()
