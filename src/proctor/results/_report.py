"""Writing reports: `evals-report.md` and the HTML report, from runs chosen in the history or named."""

from __future__ import annotations

import os
from pathlib import Path

from proctor.results._html import render_html
from proctor.results._markdown import render_markdown
from proctor.results._summary import Report
from proctor.results._writers import _atomic_write

__all__ = ["write_report"]


def write_report(report: Report, *, markdown: Path | None = None, html: Path | None = None) -> list[Path]:
    """Write the markdown and/or HTML report atomically; returns the paths written."""
    written = []
    if markdown is not None:
        _atomic_write(markdown, render_markdown(report))
        written.append(markdown)
    if html is not None:
        _atomic_write(html, render_html(report))
        written.append(html)
    for path in written:
        os.chmod(path, 0o644)  # reports are for sharing (the temporary file they replace was private)
    return written
