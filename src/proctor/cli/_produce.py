"""`proctor produce`: send events to a Redis Stream (test data for `proctor consume`).

Events come from a JSON Lines file (`-` for stdin), validated first unless `--no-validate`, or are the
Go Eval Agent's README examples (`--sample N`). The same as, per event:

    redis-cli XADD eval-events '*' payload '{"event_id": "evt-001", ...}'
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path

import typer

from proctor.cli._common import fail, guard
from proctor.cli._consume import REDIS_URL, STREAM
from proctor.cli._help import epilog

# Proctor's own modules are imported inside command bodies: `proctor --help` imports every command module
# and must stay fast (tests/test_public_api.py), so each command loads only what it runs.
__all__ = ["EPILOG", "produce_command", "sample_event"]

EPILOG = epilog(
    [
        ("Send the events of a JSON Lines file (validated first):", "proctor produce events.jsonl"),
        ("Send 1,000 copies of the README's example event:", "proctor produce --sample 1000"),
        (
            "Events from stdin to another Redis and stream:",
            "cat ev.jsonl | proctor produce - --redis-url redis://q:6379/1 --stream s",
        ),
    ],
    [
        (0, "sent; one JSON line on stdout says how many"),
        (2, "invalid events, a file unreadable, Redis unreachable, or bad usage"),
    ],
)

_GOOD = {
    "user_query": "What is the capital of France?",
    "context": "France is a country in Western Europe. Its capital city is Paris, which is also the largest city "
    "in the country.",
    "answer": "The capital of France is Paris.",
}
_EARLY_EXIT = {
    "user_query": "Explain the theory of relativity in detail",
    "context": "Einstein developed the theory of relativity.",
    "answer": "ok",
}


def sample_event(number: int, *, early_exit: bool = False) -> dict[str, object]:
    """The Go Eval Agent's example event number `number` (its bad-answer example with `early_exit`)."""
    return {
        "event_id": f"evt-{number:06d}",
        "event_type": "agent_response",
        "agent": {"name": "my-agent", "type": "rag", "version": "1.0.0"},
        "interaction": dict(_EARLY_EXIT if early_exit else _GOOD),
    }


def _lines(path: Path) -> Iterator[tuple[int, str]]:
    handle = sys.stdin if str(path) == "-" else path.open(encoding="utf-8")
    with handle:
        for number, line in enumerate(handle, 1):
            if line.strip():
                yield number, line.strip()


def produce_command(
    events: Path | None = typer.Argument(None, help="JSON Lines of events ('-': stdin)."),
    sample: int | None = typer.Option(
        None, "--sample", envvar="PROCTOR_SAMPLE", min=1, metavar="N", help="Send N copies of the README example."
    ),
    early_exit: bool = typer.Option(
        False, "--early-exit", envvar="PROCTOR_SAMPLE_EARLY_EXIT", help="With --sample: the bad-answer example."
    ),
    validate: bool = typer.Option(
        True, "--validate/--no-validate", envvar="PROCTOR_VALIDATE", help="Refuse a file with invalid events."
    ),
    maxlen: int | None = typer.Option(
        None, "--maxlen", envvar="PROCTOR_STREAM_MAXLEN", min=1, metavar="N", help="Trim the stream to about N entries."
    ),
    redis_url: str | None = REDIS_URL,
    stream: str = STREAM,
) -> None:
    """Send events to a Redis Stream (field 'payload'), for `proctor consume`; prints one JSON line."""
    if (events is None) == (sample is None):
        fail("give a JSON Lines file of events or --sample N (one of the two)")
    payloads: list[str] = []
    if sample is not None:
        payloads = [json.dumps(sample_event(n, early_exit=early_exit)) for n in range(1, sample + 1)]
    else:
        assert events is not None
        from pydantic import ValidationError

        from proctor.service import EvaluationRequest

        problems: list[str] = []
        try:
            for number, line in _lines(events):
                if validate:
                    try:
                        EvaluationRequest.model_validate_json(line)
                    except ValidationError as exc:
                        problems.append(f"line {number}: {exc.errors(include_url=False)[0]['msg']}")
                payloads.append(line)
        except OSError as exc:
            fail(f"cannot read {events}: {exc.strerror or exc}")
        if problems:
            fail(
                f"{len(problems)} invalid event(s) (--no-validate sends them anyway):\n  " + "\n  ".join(problems[:10])
            )
    ids = guard(lambda: _send(redis_url, stream, payloads, maxlen))
    typer.echo(json.dumps({"stream": stream, "sent": len(ids), "first": ids[0] if ids else None}))


def _send(url: str | None, stream: str, payloads: list[str], maxlen: int | None) -> list[str]:
    import anyio

    from proctor.errors import ConfigError
    from proctor.service._redis import connect, produce, redis_url

    address = redis_url(url)

    async def main() -> list[str]:
        from redis.exceptions import ConnectionError as RedisConnectionError

        client = connect(address)
        try:
            return await produce(client, stream, payloads, maxlen=maxlen)
        except (RedisConnectionError, OSError) as exc:
            raise ConfigError(f"cannot reach Redis at {address}: {exc}") from None
        finally:
            await client.aclose()

    return anyio.run(main)
