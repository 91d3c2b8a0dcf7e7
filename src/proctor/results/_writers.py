"""Writers: the results JSON and JUnit XML."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

from proctor.results._json import dumps

__all__ = ["results_chunks", "results_text", "write_bytes", "write_json", "write_junit", "write_output"]


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


_CHUNKED_BUFFER = 1 << 20
"""The write buffer of a file written in chunks (a results file: ~1.4 KB a case, one chunk each)."""


def _naming(exc: OSError, path: Path, tmp: str | None = None) -> OSError:
    """`exc` naming `path`, the file being written, rather than the temporary file beside it.

    A failed write then says which file could not be written (`[Errno 28] No space left on device:
    'out.json'`), not `.out.json.x1y2.tmp`; the error's type (`FileNotFoundError`, ...) follows its errno.

    Args:
        exc: The error.
        path: The file being written.
        tmp: The temporary file, when made: an error naming another file (the one copied) keeps that name.
    """
    named = exc.filename if tmp is not None and exc.filename not in (None, tmp) else str(path)
    return OSError(exc.errno, exc.strerror or str(exc), named)


def _temporary(path: Path) -> tuple[int, str]:
    """A new temporary file beside `path` (its missing folders made), open: `(fd, name)`."""
    path.parent.mkdir(parents=True, exist_ok=True)  # an error names the folder that could not be made
    try:
        return tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    except OSError as exc:
        raise _naming(exc, path) from exc


def _atomic_write(path: Path, data: bytes | str | Iterable[bytes | memoryview]) -> None:
    """Write `data` (text as UTF-8; or chunks, in turn) to a temporary file beside `path`, then rename it.

    Raises:
        OSError: `path` could not be written (its `filename` is `path`, or the folder that could not be
            made); nothing is left behind, and a file already at `path` is as it was.
    """
    if isinstance(data, str):
        data = data.encode("utf-8")
    fd, tmp = _temporary(path)
    try:
        with os.fdopen(fd, "wb", buffering=-1 if isinstance(data, bytes) else _CHUNKED_BUFFER) as handle:
            os.chmod(tmp, 0o666 & ~_umask())  # mkstemp makes 0600 files; results are ordinary files
            if isinstance(data, bytes):
                handle.write(data)
            else:
                handle.writelines(data)
        os.replace(tmp, path)
    except OSError as exc:
        Path(tmp).unlink(missing_ok=True)
        raise _naming(exc, path, tmp) from exc
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def results_chunks(
    head: dict[str, Any], cases: Iterable[bytes | Sequence[bytes | memoryview]] | None
) -> Iterator[bytes | memoryview]:
    """Lay out a results JSON, in pieces: the run's fields indented by two spaces, then the cases, one line each.

    Args:
        head: The run's fields without its cases (non-empty).
        cases: Each case's compact JSON, in order, whole or in pieces (`CaseResult.json_pieces`); `None`
            when the document has no `cases`.
    """
    text = dumps(head, indent=True)
    if cases is None:
        yield text + b"\n"
        return
    yield text[:-2] + b',\n  "cases": ['
    separator = b"\n    "
    for case in cases:
        # one chunk a case, its pieces joined (~1.4 KB copied): a write call a piece cost ~4x more
        yield separator + case if isinstance(case, bytes) else b"".join((separator, *case))
        separator = b",\n    "
    yield b"]\n}\n" if separator == b"\n    " else b"\n  ]\n}\n"


def results_text(head: dict[str, Any], cases: Iterable[bytes | Sequence[bytes | memoryview]] | None) -> bytes:
    """`results_chunks` joined."""
    return b"".join(results_chunks(head, cases))


def write_json(path: Path, run: dict[str, Any]) -> None:
    """Write a results JSON atomically (a reader never sees half a file), laid out by `results_chunks`.

    The run's fields are indented; each case is one compact line (readable, and diff-able case by case).
    """
    head = {key: value for key, value in run.items() if key != "cases"}
    if not head:
        _atomic_write(path, dumps(run) + b"\n")
    elif "cases" in run:
        _atomic_write(path, results_chunks(head, (dumps(case) for case in run["cases"])))
    else:
        _atomic_write(path, results_chunks(head, None))


def write_bytes(path: Path, data: bytes | Iterable[bytes | memoryview]) -> None:
    """Write bytes, or chunks of bytes in turn, atomically (e.g. `RunResult.json_chunks()`)."""
    _atomic_write(path, data)


def write_junit(path: Path, run: dict[str, Any]) -> None:
    """Write JUnit XML: one test case per case x trial, errors apart from failures.

    A trial an incomplete case planned that never ran (the run stopped first) is a skipped test case saying
    so: never absent (a report would count fewer tests), never a pass.
    """
    from xml.etree import ElementTree as ET  # JUnit output only: not loaded by every run

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
            ran = {trial["trial"] for trial in case["trials"]}
            for number in range(1, (case.get("planned_trials") or 0) + 1):
                if number in ran:
                    continue
                counts["tests"] += 1
                counts["skipped"] += 1
                test = ET.SubElement(
                    suite_el,
                    "testcase",
                    classname=f"{suite_name}.{case['name']}",
                    name=f"{case['name']} [trial {number}]",
                    file=case["file"],
                    time="0.000",
                )
                ET.SubElement(test, "skipped", message=f"not run: {case.get('reason') or 'the run stopped first'}")
        for key, value in counts.items():
            suite_el.set(key, str(value))
            totals[key] += value
        suite_el.set("time", f"{seconds:.3f}")
    for key, value in totals.items():
        suites.set(key, str(value))
    ET.indent(suites)
    _atomic_write(path, ET.tostring(suites, encoding="unicode", xml_declaration=True) + "\n")


def write_output(
    path: Path, run: dict[str, Any] | Callable[[], dict[str, Any]], *, written: Path | None = None
) -> None:
    """Write `--output`: JUnit XML for `.xml`, the results JSON otherwise.

    Args:
        path: Where to write.
        run: The results JSON, or what makes it (`lambda: outcome.data`): called only when it is needed,
            which a JSON `--output` of a written run is not (the whole run's JSON: ~4 µs a case).
        written: The run's results file, when it was written already: a JSON `--output` is then a copy of
            its bytes (serialised once).

    Raises:
        OSError: `path` could not be written (see `_atomic_write`); `written` is left as it was.
    """
    if path.suffix.lower() == ".xml":
        write_junit(path, run() if callable(run) else run)
    elif written is not None:
        fd, tmp = _temporary(path)
        os.close(fd)
        try:
            shutil.copyfile(written, tmp)
            os.chmod(tmp, 0o666 & ~_umask())
            os.replace(tmp, path)
        except OSError as exc:
            Path(tmp).unlink(missing_ok=True)
            raise _naming(exc, path, tmp) from exc
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
    else:
        write_json(path, run() if callable(run) else run)
