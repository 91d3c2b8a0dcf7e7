"""The sandbox's worker process: evaluate object-context expressions under CPU-time and memory limits.

Started by `proctor.checks._sandbox` as `python -c "from proctor.checks._sandbox_worker import serve; ..."`;
it speaks length-prefixed JSON on its stdin and stdout.
"""

from __future__ import annotations

import contextlib
import json
import os
import resource  # POSIX only, like the pool that starts this worker
import sys
from typing import Any

from proctor.checks._expression import ExpressionError, evaluate_expression
from proctor.checks._sandbox import CPU_LIMIT, HEADER, MEMORY_LIMIT

__all__ = ["serve"]


def _limit_memory(limit: int) -> None:
    with open("/proc/self/statm", encoding="ascii") as file:
        size = int(file.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
    resource.setrlimit(resource.RLIMIT_AS, (size + limit, size + limit))


def _limit_cpu() -> None:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    used = int(usage.ru_utime + usage.ru_stime) + 1
    _, hard = resource.getrlimit(resource.RLIMIT_CPU)
    soft = used + CPU_LIMIT
    resource.setrlimit(resource.RLIMIT_CPU, (soft if hard == resource.RLIM_INFINITY else min(soft, hard), hard))


def serve(memory_limit: int = MEMORY_LIMIT) -> None:
    """The worker's loop: read a request, evaluate it under the limits, write the reply; stop at EOF.

    Args:
        memory_limit: Bytes the address space may grow by, over what the started worker holds.
    """
    stdin, stdout = sys.stdin.buffer, sys.stdout.buffer
    with contextlib.suppress(OSError, ValueError):  # no /proc: the CPU limit and the caller's clock still hold
        _limit_memory(memory_limit)
    stdout.write(HEADER.pack(0))  # ready
    stdout.flush()
    while True:
        header = stdin.read(HEADER.size)
        if len(header) < HEADER.size:
            return
        request = json.loads(stdin.read(HEADER.unpack(header)[0]))
        _limit_cpu()
        reply: dict[str, Any]
        try:
            value = evaluate_expression(
                request["expression"],
                request["context"],
                request["evaluation"],
                missing=request["missing"],
                names=request.get("names"),
            )
            if isinstance(value, bool):
                reply = {"kind": "bool", "value": value}
            else:
                reply = {"kind": "other", "type": type(value).__name__, "repr": repr(value)[:80]}
        except ExpressionError as exc:
            reply = {"error": exc.reason, "column": exc.column}
        except MemoryError:
            reply = {"error": f"needed more than {memory_limit // 2**20} MiB of memory (the limit)", "column": None}
        data = json.dumps(reply).encode()
        stdout.write(HEADER.pack(len(data)) + data)
        stdout.flush()
