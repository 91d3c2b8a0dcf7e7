"""Expressions evaluated where the limits are real: worker processes with CPU-time and memory limits.

The expression sandbox (`proctor.checks._expression`) rejects escapes by construction, but a single
operation can still run for minutes or take all memory (`round(1, -10**8)`, `sum([[1]*100]*10000, [])`):
Python checks no limit inside one C call. So the `expression` check sends each evaluation to a small,
reused pool of worker processes:

* each worker runs with `RLIMIT_AS` (its address space may grow by `MEMORY_LIMIT` bytes) and, per
  evaluation, `RLIMIT_CPU` (the kernel stops it with SIGXCPU after about `CPU_LIMIT` more seconds);
* the caller waits at most `WALL_LIMIT` seconds, then kills the worker; a worker that died or was
  killed is replaced by a fresh one on the next evaluation, and the caller gets an `ExpressionError`;
* the caller blocks a worker thread, never the event loop (`evaluate_off_loop`), and every evaluation
  has a worker of its own (up to `MAX_WORKERS` at once), so one runaway expression holds up no other.

Requests and replies are JSON, length-prefixed, over the worker's stdin and stdout; the worker gets no
environment beyond `PATH`, `PYTHONPATH` and the locale, so it holds no secret to leak.
"""

from __future__ import annotations

import atexit
import contextlib
import json
import os
import select
import signal
import struct
import subprocess
import sys
import threading
import time
from collections.abc import Mapping
from typing import IO, Any

import anyio.to_thread

__all__ = ["CPU_LIMIT", "HEADER", "MEMORY_LIMIT", "WALL_LIMIT", "ExpressionError", "SandboxPool", "evaluate_off_loop"]

CPU_LIMIT = 1
"""CPU seconds one evaluation may use (whole seconds: the kernel's granularity)."""
MEMORY_LIMIT = 512 * 1024 * 1024
"""Bytes a worker's address space may grow by, over what it holds once started."""
WALL_LIMIT = 5.0
"""Seconds the caller waits for one evaluation before it kills the worker (a busy machine's margin)."""
BOOT_LIMIT = 60.0
"""Seconds a new worker may take to start (imports on a busy machine)."""
MAX_WORKERS = 4
"""Most worker processes at once; more evaluations at a time wait for one to be free."""
HEADER = struct.Struct(">I")
"""The length prefix of every message between the pool and a worker (`_sandbox_worker`)."""
_ENV_KEYS = ("PATH", "PYTHONPATH", "LANG", "LC_ALL", "SYSTEMROOT")
_BOOT = "from proctor.checks._sandbox_worker import serve; serve({memory})"


class ExpressionError(ValueError):
    """An expression is invalid or failed: names the expression, the position (1-based column) and why."""

    def __init__(self, expression: str, column: int | None, reason: str) -> None:
        where = f" at column {column}" if column is not None else ""
        super().__init__(f"expression {expression!r}{where}: {reason}")
        self.expression = expression
        self.column = column
        self.reason = reason


class SandboxFailure(Exception):
    """The worker could not give an answer: it hit a limit, crashed, or never started."""


class _Worker:
    """One worker process and its pipes."""

    def __init__(self, memory_limit: int) -> None:
        env = {key: os.environ[key] for key in _ENV_KEYS if key in os.environ}
        self.process = subprocess.Popen(
            [sys.executable, "-c", _BOOT.format(memory=int(memory_limit))],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env=env,
            close_fds=True,
        )
        self.ready = False
        """Whether the worker said it has started (imports done, memory limit set)."""

    def ask(self, request: bytes, timeout: float) -> dict[str, Any]:
        """Send one request and read its reply.

        Raises:
            SandboxFailure: The worker died, hit a limit or did not answer within `timeout`.
        """
        stdin, stdout = self.process.stdin, self.process.stdout
        assert stdin is not None and stdout is not None
        if not self.ready:  # its start does not count against the evaluation's limit
            self._read(stdout, HEADER.size, time.monotonic() + BOOT_LIMIT)
            self.ready = True
        try:
            stdin.write(HEADER.pack(len(request)) + request)
            stdin.flush()
        except OSError:
            raise SandboxFailure(self._death()) from None
        deadline = time.monotonic() + timeout
        header = self._read(stdout, HEADER.size, deadline)
        (size,) = HEADER.unpack(header)
        reply = json.loads(self._read(stdout, size, deadline))
        assert isinstance(reply, dict)
        return reply

    def _read(self, stream: IO[bytes], size: int, deadline: float) -> bytes:
        chunks: list[bytes] = []
        wanted = size
        fd = stream.fileno()
        while wanted:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([fd], [], [], left)[0]:
                self.kill()
                raise SandboxFailure("took too long (the wall-clock limit); the evaluation was stopped")
            chunk = os.read(fd, wanted)
            if not chunk:
                raise SandboxFailure(self._death())
            chunks.append(chunk)
            wanted -= len(chunk)
        return b"".join(chunks)

    def _death(self) -> str:
        try:
            code = self.process.wait(timeout=2)
        except subprocess.TimeoutExpired:
            self.kill()
            code = self.process.returncode
        if code == -signal.SIGXCPU:
            return f"used more than {CPU_LIMIT} s of CPU time (the limit); the evaluation was stopped"
        if code == -signal.SIGKILL:
            return "was killed (out of memory?); the evaluation was stopped"
        return f"the evaluator process ended unexpectedly (exit code {code})"

    @property
    def alive(self) -> bool:
        """Whether the process still runs."""
        return self.process.poll() is None

    def kill(self) -> None:
        """Kill the process and reap it."""
        if self.process.poll() is None:
            self.process.kill()
        with contextlib.suppress(subprocess.TimeoutExpired):  # SIGKILL is not ignored: this is a formality
            self.process.wait(timeout=5)
        for stream in (self.process.stdin, self.process.stdout):
            if stream is not None:
                stream.close()


class SandboxPool:
    """A reused pool of limited worker processes; thread-safe.

    Args:
        max_workers: Most processes at once.
        memory_limit: Bytes each worker's address space may grow by once started.
    """

    def __init__(self, max_workers: int = MAX_WORKERS, memory_limit: int = MEMORY_LIMIT) -> None:
        self.max_workers = max_workers
        self.memory_limit = memory_limit
        self._idle: list[_Worker] = []
        self._count = 0
        self._condition = threading.Condition()
        self._closed = False
        self.replaced = 0
        """Workers killed or dead and replaced (for tests and figures)."""

    def evaluate(
        self,
        expression: str,
        object_context: Any,
        evaluation: Mapping[str, Any],
        missing: str,
        names: Mapping[str, Any] | None = None,
    ) -> Any:
        """Evaluate in a worker; block until the answer (or the limit); `names`: more names it may use.

        Returns:
            What the expression evaluated to: a bool, or a `NotBool` description of another value.

        Raises:
            ExpressionError: The expression failed, or the worker hit a limit.
        """
        request = json.dumps(
            {
                "expression": expression,
                "context": object_context,
                "evaluation": evaluation,
                "missing": missing,
                "names": dict(names or {}),
            },
            default=str,
        ).encode()
        worker = self._take()
        healthy = False
        try:
            reply = worker.ask(request, WALL_LIMIT)
            healthy = True
        except SandboxFailure as exc:
            raise ExpressionError(expression, None, str(exc)) from None
        finally:
            self._give_back(worker, healthy and worker.alive)
        if "error" in reply:
            raise ExpressionError(expression, reply.get("column"), str(reply["error"]))
        if reply.get("kind") == "bool":
            return bool(reply["value"])
        return NotBool(str(reply.get("type")), str(reply.get("repr")))

    def _take(self) -> _Worker:
        with self._condition:
            while not self._idle and self._count >= self.max_workers:
                self._condition.wait()
            while self._idle and not self._idle[-1].alive:  # died while idle (killed from outside)
                self._idle.pop().kill()
                self._count -= 1
                self.replaced += 1
            taken = self._idle.pop() if self._idle else None
            if taken is None:
                self._count += 1
            spare = not self._idle and self._count < self.max_workers
            if spare:
                self._count += 1
        if spare:  # keep one started worker ready: the next evaluation need not wait for a start
            threading.Thread(target=self._start_spare, daemon=True).start()
        if taken is not None:
            return taken
        try:
            return _Worker(self.memory_limit)
        except OSError:
            self._give_back(None, False)
            raise

    def _start_spare(self) -> None:
        try:
            worker = _Worker(self.memory_limit)
        except OSError:
            self._give_back(None, False)
            return
        self._give_back(worker, True)

    def _give_back(self, worker: _Worker | None, healthy: bool) -> None:
        with self._condition:
            keep = worker is not None and healthy and not self._closed
        if worker is not None and not keep:
            worker.kill()
        with self._condition:
            if worker is not None and keep:
                self._idle.append(worker)
            else:
                self._count -= 1
                self.replaced += worker is not None and not self._closed
            self._condition.notify()

    def close(self) -> None:
        """Stop the idle workers (busy ones stop when their evaluation ends and they are not reused)."""
        with self._condition:
            self._closed = True  # workers still starting or busy are stopped when they come back
            idle, self._idle = self._idle, []
            self._count -= len(idle)
        for worker in idle:
            worker.kill()


class NotBool:
    """A value an expression gave that is not a boolean (described, not sent back whole)."""

    def __init__(self, type_name: str, text: str) -> None:
        self.type_name = type_name
        self.text = text


_pool: SandboxPool | None = None
_pool_lock = threading.Lock()


def _shared_pool() -> SandboxPool:
    global _pool
    with _pool_lock:
        if _pool is None:
            _pool = SandboxPool()
            atexit.register(_pool.close)
        return _pool


async def evaluate_off_loop(
    expression: str,
    object_context: Any,
    evaluation: Mapping[str, Any],
    missing: str,
    names: Mapping[str, Any] | None = None,
) -> Any:
    """Evaluate in the shared pool from a worker thread: the event loop never waits on it (`names`: as `evaluate`).

    Raises:
        ExpressionError: The expression failed, or the worker hit a limit.
    """
    pool = _shared_pool()
    return await anyio.to_thread.run_sync(
        pool.evaluate, expression, object_context, evaluation, missing, names, abandon_on_cancel=True
    )
