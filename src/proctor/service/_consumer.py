"""The Redis Stream consumer: events in from a consumer group, results out to a results stream.

Delivery is at least once and nothing is lost; the results stream gets exactly one entry per event
entry, whatever crashes:

* An entry is acknowledged only together with its stored result (or dead letter), atomically, by one
  Lua script per batch (`COMMIT_SCRIPT`). The script stores a result only while the entry is still
  pending for this consumer, so an entry that was claimed away or already acknowledged never gets a
  second result; a consumer killed before the script ran leaves the entry pending, to be redone.
* On start a consumer first finishes its own pending entries (it died holding them); then it reads
  new entries and, every `claim_interval`, claims entries idle for `claim_idle` seconds from dead
  consumers (XAUTOCLAIM). Entries it is working on are touched (XCLAIM JUSTID) so that slow judges do
  not make them look abandoned.
* An entry whose evaluation failed `max_deliveries` times, or malformed (no `payload`, not JSON, not an
  event), goes to the dead-letter stream with the reason, and is acknowledged. Failed attempts are
  counted in a hash of their own (`<stream>:<group>:attempts`), not taken from Redis's delivery count:
  XREADGROUP and XAUTOCLAIM raise that count on every re-read, so a consumer restarted in a crash loop
  would dead-letter healthy events it never got to finish. Only an entry re-delivered
  `CRASH_FACTOR * max_deliveries` times without a result (one that kills the consumer itself) is
  dead-lettered on its delivery count.
* Entries are read and committed in batches, up to `concurrency` events in flight. Early exits are
  decided on the reading task without a task switch; events that need judges get a task each.
* `stop()` (SIGTERM) stops reading, lets in-flight events finish and be committed, then returns.

Any number of consumers, on any number of machines, share one group: that is how it scales out.
"""

from __future__ import annotations

import json
import logging
import socket
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import anyio
from pydantic import ValidationError

from proctor._redact import redact, redact_url
from proctor.errors import ConfigError
from proctor.service._models import EvaluationRequest, EvaluationResult
from proctor.service._pipeline import Pipeline, StageOne
from proctor.service._redis import COMMIT_SCRIPT, connect

if TYPE_CHECKING:
    from anyio.abc import TaskGroup

__all__ = ["Consumer", "ConsumerConfig", "ConsumerStats"]

logger = logging.getLogger("proctor.service.consumer")

_COMMIT_CHUNK = 500
"""Most entries committed by one script call."""
CRASH_FACTOR = 10
"""An entry delivered `CRASH_FACTOR * max_deliveries` times with no failed attempt recorded is taken to
kill the consumer that evaluates it (a crash, not an exception), and is dead-lettered."""


@dataclass(frozen=True, slots=True)
class ConsumerConfig:
    """Where the consumer reads and writes, and its limits. Invalid values raise `ConfigError`."""

    redis_url: str = "redis://localhost:6379/0"
    """The Redis server."""
    stream: str = "eval-events"
    """The stream of events (field `payload`: the event JSON)."""
    group: str = "eval-group"
    """The consumer group shared by every consumer of the stream."""
    consumer: str = field(default_factory=socket.gethostname)
    """This consumer's name in the group (default: the host name). Give each process on a host its own."""
    results_stream: str = "eval-results"
    """Where results go: fields `event_id`, `entry_id`, `verdict`, `result` (JSON), `consumer`."""
    dead_letter_stream: str = "eval-dead-letter"
    """Where unprocessable entries go: `entry_id`, `stream`, `reason`, `payload`, `deliveries`, `consumer`."""
    batch_size: int = 100
    """Entries read per XREADGROUP."""
    concurrency: int = 64
    """Most events in flight (read and not yet committed)."""
    block_ms: int = 2000
    """How long one read waits for new entries, in milliseconds."""
    claim_idle: float = 60.0
    """Claim other consumers' entries pending this many seconds (they are presumed dead)."""
    claim_interval: float = 10.0
    """Seconds between claim rounds (and between touches of the entries in flight)."""
    max_deliveries: int = 5
    """Evaluation attempts per entry: one that failed this many times goes to the dead-letter stream."""
    results_maxlen: int | None = None
    """Trim the results stream to about this many entries; `None` keeps everything."""
    start_id: str = "0"
    """Where a newly created group starts: `0` (every entry already in the stream) or `$` (new ones)."""
    shutdown_timeout: float = 30.0
    """On stop, wait this long for in-flight events; the rest stay pending and are redone later."""
    exit_when_idle: bool = False
    """Return once a read finds nothing new and no entry of the group is pending (this consumer's or
    another's: idle ones are claimed first). For batch jobs, tests and benchmarks."""

    def __post_init__(self) -> None:
        positive = {
            "batch size": self.batch_size,
            "concurrency": self.concurrency,
            "block time": self.block_ms,
            "claim idle time": self.claim_idle,
            "claim interval": self.claim_interval,
            "max deliveries": self.max_deliveries,
            "shutdown timeout": self.shutdown_timeout,
        }
        for name, value in positive.items():
            if not value > 0:
                raise ConfigError(f"consumer {name} must be > 0, got {value}")
        if self.results_maxlen is not None and self.results_maxlen < 1:
            raise ConfigError(f"results maxlen must be >= 1, got {self.results_maxlen}")
        names = [self.stream, self.group, self.consumer, self.results_stream, self.dead_letter_stream]
        if not all(names):
            raise ConfigError("stream, group, consumer, results and dead-letter names must not be empty")
        if len({self.stream, self.results_stream, self.dead_letter_stream}) != 3:
            raise ConfigError("the event, results and dead-letter streams must be three different streams")


@dataclass(slots=True)
class ConsumerStats:
    """What a consumer did."""

    read: int = 0
    """Entries received (new, own pending and claimed)."""
    results: int = 0
    """Results stored (and their entries acknowledged)."""
    dead_lettered: int = 0
    """Entries sent to the dead-letter stream (and acknowledged)."""
    superseded: int = 0
    """Results not stored because the entry had been claimed by another consumer or acknowledged."""
    failed: int = 0
    """Evaluations that raised (the entry stays pending and is redone, or dead-lettered in the end)."""
    claimed: int = 0
    """Entries claimed from idle consumers."""
    recovered: int = 0
    """Own pending entries found on start."""
    seconds: float = 0.0
    """Wall time of `run`."""

    def to_dict(self) -> dict[str, Any]:
        """The counters as JSON."""
        return {name: getattr(self, name) for name in self.__slots__}


# pydantic-core's validator and serializer themselves (the models' wrappers cost more per event)
_validate_event = EvaluationRequest.__pydantic_validator__.validate_json
_result_json = EvaluationResult.__pydantic_serializer__.to_json
_Commit = tuple[bytes, bytes, bytes | str, bytes | str, bytes | str]
"""One script entry: id, kind (`r` result or `d` dead letter), then three values."""


def _text(value: bytes | str) -> str:
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else value


class Consumer:
    """A consumer of one stream in one group.

    Args:
        pipeline: Scores the events.
        config: Streams, names and limits.
        client: An asyncio Redis client to use instead of connecting to `config.redis_url`.
    """

    def __init__(self, pipeline: Pipeline, config: ConsumerConfig | None = None, *, client: Any = None) -> None:
        self.pipeline = pipeline
        self.config = config or ConsumerConfig()
        self.stats = ConsumerStats()
        self._client = client
        self._redis: Any = None
        self._script: Any = None
        self._busy = 0
        self._room_event = anyio.Event()
        self._room_event.set()
        self._in_flight: set[bytes] = set()
        self._idle = anyio.Event()
        self._idle.set()
        self._buffer: list[_Commit] = []
        self._buffered = anyio.Event()
        self._stopping = False
        self._read_scope: anyio.CancelScope | None = None
        self._group: TaskGroup | None = None

    @property
    def attempts_key(self) -> str:
        """The hash of failed evaluation attempts by entry id (cleared when an entry is committed)."""
        return f"{self.config.stream}:{self.config.group}:attempts"

    @property
    def stopping(self) -> bool:
        """Whether `stop()` was called."""
        return self._stopping

    def stop(self) -> None:
        """Stop reading; `run` returns once the events in flight are committed (or the timeout passes)."""
        self._stopping = True
        if self._read_scope is not None:
            self._read_scope.cancel()

    async def run(self) -> ConsumerStats:
        """Consume until `stop()` (or, with `exit_when_idle`, until the stream is drained).

        Returns:
            The counters.

        Raises:
            ConfigError: Redis cannot be reached at start.
        """
        started = time.perf_counter()
        self._redis = self._client if self._client is not None else connect(self.config.redis_url)
        try:
            await self._ensure_group()
            self._script = self._redis.register_script(COMMIT_SCRIPT)
            async with anyio.create_task_group() as group:
                self._group = group
                group.start_soon(self._committer)
                await self._recover()
                group.start_soon(self._claimer)
                await self._read_new()
                with anyio.move_on_after(self.config.shutdown_timeout):
                    await self._idle.wait()
                if self._in_flight:
                    logger.warning("stopping with %d events in flight: they stay pending", len(self._in_flight))
                group.cancel_scope.cancel()
        finally:
            self.stats.seconds = time.perf_counter() - started
            if self._client is None:
                with anyio.CancelScope(shield=True):
                    await self._redis.aclose()
        return self.stats

    async def _ensure_group(self) -> None:
        from redis.exceptions import ConnectionError as RedisConnectionError
        from redis.exceptions import ResponseError

        config = self.config
        try:
            await self._redis.xgroup_create(config.stream, config.group, id=config.start_id, mkstream=True)
        except ResponseError as exc:
            if "BUSYGROUP" not in str(exc):
                raise
        except (RedisConnectionError, OSError) as exc:
            raise ConfigError(f"cannot reach Redis at {redact_url(config.redis_url)}: {redact(str(exc))}") from None

    # reading

    def _free(self) -> int:
        return max(0, min(self.config.batch_size, self.config.concurrency - self._busy))

    async def _room(self) -> int:
        """Wait until an event slot is free; return how many entries to ask for."""
        while self._busy >= self.config.concurrency:
            await self._room_event.wait()
        return self._free()

    async def _recover(self) -> None:
        """Finish this consumer's own pending entries first (it died holding them)."""
        config = self.config
        last: bytes | str = "0-0"
        while not self._stopping:
            count = await self._room()
            reply = await self._redis.xreadgroup(config.group, config.consumer, {config.stream: last}, count=count)
            entries = reply[0][1] if reply else []
            if not entries:
                return
            last = entries[-1][0]
            self.stats.recovered += len(entries)
            await self._dispatch_counted(entries)

    async def _read_new(self) -> None:
        from redis.exceptions import ConnectionError as RedisConnectionError
        from redis.exceptions import ResponseError

        config = self.config
        streams = {config.stream: ">"}
        backoff = 0.1
        while not self._stopping:
            count = await self._room()
            reply = None
            with anyio.CancelScope() as scope:
                self._read_scope = scope
                if self._stopping:
                    break
                try:
                    reply = await self._redis.xreadgroup(
                        config.group, config.consumer, streams, count=count, block=config.block_ms
                    )
                    backoff = 0.1
                except (RedisConnectionError, OSError, ResponseError) as exc:
                    if isinstance(exc, ResponseError) and "NOGROUP" in str(exc):
                        await self._ensure_group()  # the server lost the group (restarted without data)
                        continue
                    if isinstance(exc, ResponseError):
                        raise
                    logger.warning("reading %s failed (%s); retrying in %.1f s", config.stream, exc, backoff)
                    await anyio.sleep(backoff)
                    backoff = min(backoff * 2, 5.0)
                    continue
            self._read_scope = None
            entries = reply[0][1] if reply else []
            if entries:
                for entry_id, fields in entries:
                    self._dispatch(entry_id, fields, 1)
            elif config.exit_when_idle and not self._in_flight and not await self._group_pending():
                return

    async def _group_pending(self) -> int:
        """Entries delivered to any consumer of the group and not yet acknowledged."""
        summary = await self._redis.xpending(self.config.stream, self.config.group)
        return int(summary["pending"])

    async def _claimer(self) -> None:
        config = self.config
        while True:
            await anyio.sleep(config.claim_interval)
            try:
                await self._touch()
                await self._claim()
            except Exception as exc:  # a failed round is retried at the next interval
                logger.warning("claiming idle entries failed: %s: %s", type(exc).__name__, exc)

    async def _touch(self) -> None:
        """Reset the idle time of the entries in flight, so no other consumer claims them."""
        if self._in_flight:
            config = self.config
            ids = list(self._in_flight)
            await self._redis.xclaim(config.stream, config.group, config.consumer, 0, ids, justid=True)

    async def _claim(self) -> None:
        config = self.config
        cursor: bytes | str = "0-0"
        idle_ms = int(config.claim_idle * 1000)
        while not self._stopping and self._free() > 0:
            count = self._free()
            reply = await self._redis.xautoclaim(
                config.stream, config.group, config.consumer, idle_ms, start_id=cursor, count=count
            )
            cursor, entries = reply[0], [e for e in reply[1] if e[0] not in self._in_flight]
            if len(reply) > 2 and reply[2]:
                logger.warning(
                    "%d pending entries were deleted from %s before evaluation", len(reply[2]), config.stream
                )
            if entries:
                self.stats.claimed += len(entries)
                await self._dispatch_counted(entries)
            if cursor in (b"0-0", "0-0"):
                return

    async def _dispatch_counted(self, entries: list[Any]) -> None:
        """Dispatch entries that may have been delivered before, with their delivery and failure counts."""
        config = self.config
        pipe = self._redis.pipeline(transaction=False)
        for entry_id, _ in entries:
            pipe.xpending_range(config.stream, config.group, entry_id, entry_id, 1)
        pipe.hmget(self.attempts_key, [entry_id for entry_id, _ in entries])
        *counts, failures = await pipe.execute()
        for (entry_id, fields), found, failed in zip(entries, counts, failures, strict=True):
            deliveries = int(found[0]["times_delivered"]) if found else 1
            if entry_id not in self._in_flight:
                self._dispatch(entry_id, fields, deliveries, int(failed or 0))

    # processing

    def _dispatch(self, entry_id: bytes, fields: dict[bytes, bytes] | None, deliveries: int, failures: int = 0) -> None:
        """Take one entry: dead-letter it, finish it on the spot (early exit), or start its judges."""
        self.stats.read += 1
        self._busy += 1
        if self._busy >= self.config.concurrency and self._room_event.is_set():
            self._room_event = anyio.Event()
        self._in_flight.add(entry_id)
        self._idle = anyio.Event() if self._idle.is_set() else self._idle
        payload = (fields or {}).get(b"payload")
        most = self.config.max_deliveries
        if failures >= most:
            reason = f"evaluation failed {failures} times (at most {most} attempts); not retried"
            self._dead(entry_id, fields, reason, deliveries)
            return
        if deliveries > CRASH_FACTOR * most:
            reason = (
                f"delivered {deliveries} times without a stored result or a recorded failure "
                "(it may crash the consumer)"
            )
            self._dead(entry_id, fields, reason, deliveries)
            return
        if payload is None:
            reason = "the entry was deleted from the stream" if fields is None else "the entry has no 'payload' field"
            self._dead(entry_id, fields, reason, deliveries)
            return
        try:
            request: EvaluationRequest = _validate_event(payload)
        except ValidationError as exc:
            self._dead(entry_id, fields, _invalid(exc), deliveries)
            return
        try:
            first = self.pipeline.stage_one(request)
        except Exception:
            self._failed(entry_id)
            return
        if isinstance(first, EvaluationResult):
            self._store(entry_id, first)
        else:
            assert self._group is not None
            self._group.start_soon(self._judge, entry_id, request, first)

    async def _judge(self, entry_id: bytes, request: EvaluationRequest, first: StageOne) -> None:
        try:
            result = await self.pipeline.stage_two(request, first)
        except Exception:
            self._failed(entry_id)
            return
        self._store(entry_id, result)

    def _failed(self, entry_id: bytes) -> None:
        logger.exception("evaluating entry %s failed; it stays pending and will be retried", _text(entry_id))
        self.stats.failed += 1
        assert self._group is not None
        self._group.start_soon(self._count_failure, entry_id)

    async def _count_failure(self, entry_id: bytes) -> None:
        """Record one failed attempt, then let the entry go (it is redone or dead-lettered when claimed)."""
        try:
            await self._redis.hincrby(self.attempts_key, entry_id, 1)
        except Exception as exc:  # unrecorded, the attempt is retried once more: never lost
            logger.warning("recording a failed attempt of %s failed: %s", _text(entry_id), exc)
        finally:
            self._release([entry_id])

    def _store(self, entry_id: bytes, result: EvaluationResult) -> None:
        self._queue((entry_id, b"r", result.id, result.verdict, _result_json(result)))

    def _dead(self, entry_id: bytes, fields: dict[bytes, bytes] | None, reason: str, deliveries: int) -> None:
        payload = (fields or {}).get(b"payload")
        if payload is None:
            payload = json.dumps({_text(k): _text(v) for k, v in (fields or {}).items()}).encode()
        self._queue((entry_id, b"d", reason, payload, str(deliveries)))

    def _queue(self, item: _Commit) -> None:
        self._buffer.append(item)
        self._buffered.set()

    def _release(self, ids: list[bytes]) -> None:
        for entry_id in ids:
            self._in_flight.discard(entry_id)
        self._busy -= len(ids)
        if self._busy < self.config.concurrency:
            self._room_event.set()
        if not self._in_flight:
            self._idle.set()

    # committing

    async def _committer(self) -> None:
        while True:
            await self._buffered.wait()
            batch = self._buffer[:_COMMIT_CHUNK]
            del self._buffer[:_COMMIT_CHUNK]
            if not self._buffer:
                self._buffered = anyio.Event()
            await self._commit(batch)
            self._release([item[0] for item in batch])

    async def _commit(self, batch: list[_Commit]) -> None:
        """Store and acknowledge `batch` in one script call, retrying while Redis is unreachable."""
        from redis.exceptions import ConnectionError as RedisConnectionError
        from redis.exceptions import TimeoutError as RedisTimeoutError

        config = self.config
        keys = [config.stream, config.results_stream, config.dead_letter_stream, self.attempts_key]
        args: list[Any] = [config.group, config.consumer, config.results_maxlen or 0]
        for item in batch:
            args.extend(item)
        backoff = 0.1
        while True:
            try:
                stored = await self._script(keys=keys, args=args)
                break
            except (RedisConnectionError, RedisTimeoutError, OSError) as exc:
                logger.warning("storing %d results failed (%s); retrying in %.1f s", len(batch), exc, backoff)
                await anyio.sleep(backoff)
                backoff = min(backoff * 2, 5.0)
        for item, done in zip(batch, stored, strict=True):
            if not done:
                self.stats.superseded += 1
            elif item[1] == b"r":
                self.stats.results += 1
            else:
                self.stats.dead_lettered += 1


def _invalid(exc: ValidationError) -> str:
    problems = []
    for error in exc.errors(include_url=False)[:5]:
        where = ".".join(str(part) for part in error["loc"])
        problems.append(f"{where}: {error['msg']}" if where else error["msg"])
    return "the payload is not a valid event: " + "; ".join(problems)
