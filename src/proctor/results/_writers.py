"""Writers: the results JSON and JUnit XML."""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any
from xml.etree import ElementTree as ET

__all__ = ["write_json", "write_junit", "write_output"]


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def _atomic_write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    os.chmod(tmp, 0o666 & ~_umask())  # mkstemp makes 0600 files; results are ordinary files
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write_json(path: Path, run: dict[str, Any]) -> None:
    """Write the results JSON atomically (a reader never sees half a file).

    The run's fields are indented; each case is one line. `indent` for the whole document would force
    the pure-Python encoder, which costs ~50 µs per case on large runs; this layout keeps the C encoder
    and stays readable (and diff-able case by case).
    """
    head = {key: value for key, value in run.items() if key != "cases"}
    text = json.dumps(head if head else run, indent=2 if head else None, ensure_ascii=False)
    if "cases" in run and head:
        cases = ",\n".join("    " + json.dumps(case, ensure_ascii=False) for case in run["cases"])
        text = (
            text[:-2] + ',\n  "cases": [\n' + cases + "\n  ]\n}" if run["cases"] else text[:-2] + ',\n  "cases": []\n}'
        )
    _atomic_write(path, text + "\n")


def write_junit(path: Path, run: dict[str, Any]) -> None:
    """Write JUnit XML: one test case per case x trial, errors apart from failures."""
    suites = ET.Element("testsuites", name=f"proctor {run['run_id']}")
    by_suite: dict[str, list[dict[str, Any]]] = {}
    for case in run["cases"]:
        by_suite.setdefault(case["suite"], []).append(case)
    totals = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}
    for suite_name, cases in by_suite.items():
        counts = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}
        suite_el = ET.SubElement(suites, "testsuite", name=suite_name)
        seconds = 0.0
        for case in cases:
            for trial in case["trials"]:
                counts["tests"] += 1
                took = trial["duration_ms"] / 1000
                seconds += took
                test = ET.SubElement(
                    suite_el,
                    "testcase",
                    classname=f"{suite_name}.{case['name']}",
                    name=f"{case['name']} [trial {trial['trial']}]",
                    file=case["file"],
                    time=f"{took:.3f}",
                )
                problems = [c for c in trial["checks"] if c["status"] in ("failed", "error")]
                detail = "\n".join(f"[{c['status']}] {c['name']}: {c['reason']}" for c in problems)
                if trial["status"] == "error":
                    counts["errors"] += 1
                    message = trial["error"] or "a check could not run"
                    ET.SubElement(test, "error", message=message, type="error").text = detail or message
                elif trial["status"] == "failed":
                    counts["failures"] += 1
                    ET.SubElement(
                        test, "failure", message=f"score {trial['score']} below threshold", type="failure"
                    ).text = detail
                elif trial["status"] in ("skipped", "inconclusive"):  # neither the agent's failure nor a pass
                    counts["skipped"] += 1
                    reason = f"{trial['status']}: {trial.get('reason') or ''}".rstrip(": ")
                    ET.SubElement(test, "skipped", message=reason)
                for warning in trial["warnings"]:
                    ET.SubElement(test, "system-out").text = f"warning: {warning}"
        for key, value in counts.items():
            suite_el.set(key, str(value))
            totals[key] += value
        suite_el.set("time", f"{seconds:.3f}")
    for key, value in totals.items():
        suites.set(key, str(value))
    ET.indent(suites)
    _atomic_write(path, ET.tostring(suites, encoding="unicode", xml_declaration=True) + "\n")


def write_output(path: Path, run: dict[str, Any], *, written: Path | None = None) -> None:
    """Write `--output`: JUnit XML for `.xml`, the results JSON otherwise.

    Args:
        path: Where to write.
        run: The results JSON.
        written: The run's results file, when it was written already: a JSON `--output` is then a copy of
            its bytes (serialised once).
    """
    if path.suffix.lower() == ".xml":
        write_junit(path, run)
    elif written is not None:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
        os.close(fd)
        try:
            shutil.copyfile(written, tmp)
            os.chmod(tmp, 0o666 & ~_umask())
            os.replace(tmp, path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
    else:
        write_json(path, run)
