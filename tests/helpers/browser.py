"""Debian's chromium driven by Playwright, for the tests that open Proctor's pages in a real browser.

Playwright never downloads a browser here: it launches `/usr/bin/chromium` (`make system-deps`). Without
it (or without the `playwright` package) the browser tests skip, except under CI, where they fail.
Screenshots go to `tests/artifacts/` (git-ignored).
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

ARTIFACTS = Path(__file__).parents[1] / "artifacts"
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


def unavailable() -> str | None:
    """Why the browser cannot run here, or `None`."""
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        return "the playwright package is not installed (pip install -e '.[dev]')"
    if not Path(CHROMIUM).exists():
        return "Debian's chromium is not installed (make system-deps)"
    return None


@contextmanager
def chromium_context(profile: Path) -> Iterator[Any]:
    """A headless chromium with a fresh user-data-dir; skips (fails under CI) when there is none."""
    missing = unavailable()
    if missing is not None:
        if os.environ.get("CI"):
            pytest.fail(f"the browser test cannot run in CI: {missing}")
        pytest.skip(missing)
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        context = playwright.chromium.launch_persistent_context(
            str(profile),
            executable_path=CHROMIUM,
            headless=True,
            args=CHROMIUM_ARGS,
            viewport={"width": 1400, "height": 1000},
        )
        try:
            yield context
        finally:
            context.close()


class PageWatch:
    """Console errors, uncaught exceptions and every request a page makes."""

    def __init__(self, page: Any) -> None:
        self.errors: list[str] = []
        self.requests: list[str] = []
        page.on("console", lambda message: message.type == "error" and self.errors.append(message.text))
        page.on("pageerror", lambda error: self.errors.append(f"uncaught: {error}"))
        page.on("request", lambda request: self.requests.append(request.url))


def visible(page: Any, selector: str) -> list[Any]:
    """The elements matching `selector` that are visible."""
    return [element for element in page.query_selector_all(selector) if element.is_visible()]


def screenshot(target: Any, name: str, *, full_page: bool = False) -> Path:
    """Save a screenshot of a page or element under `tests/artifacts/`."""
    ARTIFACTS.mkdir(exist_ok=True)
    path = ARTIFACTS / name
    if full_page:
        target.screenshot(path=str(path), full_page=True)
    else:
        target.screenshot(path=str(path))
    return path
