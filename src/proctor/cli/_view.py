"""`proctor view`: browse the run history in a local web app (and `proctor run --view` at the end of a run).

Exit codes: 0 stopped with Ctrl-C; 2 bad input (the address cannot be bound, `--host` off loopback
without a way to make a token, the `serve` extra missing).
"""

from __future__ import annotations

import re
from pathlib import Path

import typer

from proctor.cli._common import fail, guard
from proctor.cli._help import epilog
from proctor.cli._history import HISTORY
from proctor.cli._history import store_path as history_store_path

# Proctor's own modules are imported inside command bodies: `proctor --help` imports every command module
# and must stay fast (tests/test_public_api.py), so each command loads only what it runs.
__all__ = ["EPILOG", "store_path", "view_after_run", "view_command"]

EPILOG = epilog(
    [
        ("Every run of this project, at http://127.0.0.1:8750/:", "proctor view"),
        ("One run's page, on any free port:", "proctor view RUN_ID --port 0"),
        ("Share it on the network (prints the token every request needs):", "proctor view --host 0.0.0.0"),
    ],
    [(0, "stopped with Ctrl-C"), (2, "bad input: address in use, bad token, the 'serve' extra missing")],
)

_TOKEN = re.compile(r"^[A-Za-z0-9_\-.~]{16,}$")


def store_path(history: Path | None) -> Path:
    """The history `proctor view` reads: `--history` as given, else the default store.

    The default is the working directory's project store, as for `runs`, `report` and `compare`.
    """
    return history_store_path(history)


def _serve(
    history: Path,
    *,
    host: str,
    port: int,
    token: str | None,
    results_dirs: list[Path],
    path: str,
    open_browser: bool,
    any_port_if_taken: bool = False,
) -> None:
    try:
        from proctor.view import serve
        from proctor.view._gate import is_loopback
        from proctor.view._serve import new_token
    except ImportError as exc:
        fail(f"the viewer needs the 'serve' extra ({exc.name} is missing): pip install 'proctor-eval[serve]'")
    if token is not None and not _TOKEN.match(token):
        fail("--token: use at least 16 letters, digits or -_.~ (it travels in a URL and a cookie)")
    if token is None and not is_loopback(host):
        token = new_token()
    guard(
        lambda: serve(
            history,
            host=host,
            port=port,
            token=token,
            results_dirs=results_dirs,
            path=path,
            open_browser=open_browser,
            any_port_if_taken=any_port_if_taken,
            announce=typer.echo,
        )
    )


def view_command(
    run: str | None = typer.Argument(None, help="Open this run's page (a run id or unique prefix)."),
    history: Path | None = HISTORY,
    results_dir: list[Path] = typer.Option(
        [],
        "--results-dir",
        envvar="PROCTOR_RESULTS_DIR",
        help="Also look here for runs in progress (repeat; the stored runs' directories are always looked in).",
    ),
    host: str = typer.Option(
        "127.0.0.1",
        "--host",
        envvar="PROCTOR_VIEW_HOST",
        help="Address to bind. Anything but loopback shares the viewer: a token is then required "
        "(generated and printed unless --token is given).",
    ),
    port: int = typer.Option(
        8750, "--port", envvar="PROCTOR_VIEW_PORT", min=0, max=65535, help="Port (0: any free port)."
    ),
    token: str | None = typer.Option(
        None,
        "--token",
        envvar="PROCTOR_VIEW_TOKEN",
        help="Token every request must carry (?token=, a cookie, or a bearer header); at least 16 characters.",
    ),
    no_browser: bool = typer.Option(
        False, "--no-browser", envvar="PROCTOR_NO_BROWSER", help="Print the address only (never open a browser)."
    ),
) -> None:
    """Browse the run history in a local web app: runs over time, what failed and why, transcripts, compare."""
    from urllib.parse import quote

    path = "/" if run is None else f"/runs/{quote(run, safe='')}"
    _serve(
        store_path(history),
        host=host,
        port=port,
        token=token,
        results_dirs=results_dir,
        path=path,
        open_browser=not no_browser,
    )


def view_after_run(history: Path | None, results_file: Path, run_id: str, *, port: int = 8750) -> None:
    """`proctor run --view`: serve the viewer on the run's page once the run is written.

    Args:
        history: The run's `--history` (resolved), else `None`.
        results_file: The run's results JSON (the default history is beside its directory, as the run
            indexed it there).
        run_id: The run to open.
        port: The port to try first (any free one when it is taken).
    """
    from urllib.parse import quote

    from proctor.results import default_history_path

    store = history or default_history_path(results_file.parent)
    path = f"/runs/{quote(run_id, safe='')}"
    _serve(
        store,
        host="127.0.0.1",
        port=port,
        token=None,
        results_dirs=[],
        path=path,
        open_browser=True,
        any_port_if_taken=True,
    )
