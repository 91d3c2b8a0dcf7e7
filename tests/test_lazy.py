"""`proctor._lazy`: modules imported ahead of their first use in a background thread."""

from __future__ import annotations

import subprocess
import sys
import textwrap


def _run(code: str) -> subprocess.CompletedProcess[str]:
    """Run `code` in a fresh interpreter (nothing imported yet), failing on a non-zero exit."""
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, check=True)


def test_building_an_http_client_imports_aiohttp_in_the_background() -> None:
    done = _run(
        """
        import sys, threading
        from proctor._http import HttpClient
        assert "aiohttp" not in sys.modules
        HttpClient(max_connections=1)
        HttpClient(max_connections=1)  # the second client starts no second import
        started = [t for t in threading.enumerate() if t.name == "import aiohttp"]
        assert len(started) <= 1, started
        for thread in started:
            thread.join(30)
        assert "aiohttp" in sys.modules
        print(len(started))
        """
    )
    assert done.stdout.strip() in {"0", "1"}  # 0: the import was over before the threads were listed


def test_a_module_that_fails_to_import_is_reported_by_the_import_that_needs_it() -> None:
    done = _run(
        """
        import threading
        from proctor._lazy import import_in_background
        import_in_background("proctor_no_such_module")
        for thread in threading.enumerate():
            if thread.name == "import proctor_no_such_module":
                thread.join(30)
        try:
            import proctor_no_such_module
        except ModuleNotFoundError as exc:
            print(exc.name)
        """
    )
    assert done.stdout.strip() == "proctor_no_such_module"
    assert done.stderr == ""  # the background thread printed nothing


def test_a_module_already_imported_starts_no_thread() -> None:
    done = _run(
        """
        import json, threading
        from proctor._lazy import import_in_background
        before = threading.active_count()
        import_in_background("json")
        print(threading.active_count() - before)
        """
    )
    assert done.stdout.strip() == "0"
