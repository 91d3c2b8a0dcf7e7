"""Redis plumbing shared by the consumer and `proctor produce`: the address, the commit script, XADD.

The `redis` client (extra `serve`) is imported on first use.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from typing import Any
from urllib.parse import quote

from proctor._redact import redact_url
from proctor.errors import ConfigError

__all__ = ["COMMIT_SCRIPT", "DEFAULT_REDIS_URL", "connect", "produce", "redis_url"]

DEFAULT_REDIS_URL = "redis://localhost:6379/0"
"""Where Redis is unless `--redis-url`, `PROCTOR_REDIS_URL` or the Go agent's `REDIS_ADDR` say otherwise."""

COMMIT_SCRIPT = """
-- Store results (or dead letters) and acknowledge their entries, atomically, in one round trip.
-- Only an entry still pending for this consumer is stored: if it was acknowledged already or claimed
-- by another consumer, nothing is written, so a redelivered entry never gets a second stored result.
-- KEYS: stream, results stream, dead-letter stream, failed-attempts hash (cleared for a committed entry).
-- ARGV: group, consumer, results MAXLEN (0: none), then 5 values per entry:
--   id, 'r', event id, verdict, result JSON     or     id, 'd', reason, payload, deliveries
local stream, results, dead, attempts = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local group, consumer, maxlen = ARGV[1], ARGV[2], tonumber(ARGV[3])
local out = {}
for base = 4, #ARGV, 5 do
  local id = ARGV[base]
  local pending = redis.call('XPENDING', stream, group, id, id, 1)
  if #pending == 1 and pending[1][2] == consumer then
    if ARGV[base + 1] == 'r' then
      local fields = {'event_id', ARGV[base + 2], 'entry_id', id, 'verdict', ARGV[base + 3],
                      'result', ARGV[base + 4], 'consumer', consumer}
      if maxlen > 0 then
        redis.call('XADD', results, 'MAXLEN', '~', maxlen, '*', unpack(fields))
      else
        redis.call('XADD', results, '*', unpack(fields))
      end
    else
      redis.call('XADD', dead, '*', 'entry_id', id, 'stream', stream, 'reason', ARGV[base + 2],
                 'payload', ARGV[base + 3], 'deliveries', ARGV[base + 4], 'consumer', consumer)
    end
    redis.call('XACK', stream, group, id)
    if attempts then redis.call('HDEL', attempts, id) end
    out[#out + 1] = 1
  else
    out[#out + 1] = 0
  end
end
return out
"""


def redis_url(url: str | None = None) -> str:
    """The Redis URL to use.

    Returns:
        `url` when given, else the Go agent's `REDIS_ADDR` (`host:port`) with `REDIS_PASSWORD`, else
        `DEFAULT_REDIS_URL`.
    """
    if url:
        return url
    address = os.environ.get("REDIS_ADDR", "").strip()
    if not address:
        return DEFAULT_REDIS_URL
    if "://" in address:
        return address
    password = os.environ.get("REDIS_PASSWORD", "")
    auth = f":{quote(password, safe='')}@" if password else ""
    return f"redis://{auth}{address}/0"


def connect(url: str) -> Any:
    """An asyncio Redis client for `url` (bytes in and out).

    Raises:
        ConfigError: The `redis` package is missing or the URL is invalid.
    """
    try:
        from redis.asyncio import Redis
    except ImportError:  # pragma: no cover - the extra is installed in development
        raise ConfigError("the Redis consumer needs the 'redis' package: pip install 'proctor-eval[serve]'") from None
    try:
        return Redis.from_url(url, decode_responses=False, health_check_interval=30)
    except ValueError as exc:
        raise ConfigError(f"invalid Redis URL {redact_url(url)!r}: {exc}") from None


async def produce(
    client: Any, stream: str, payloads: Iterable[bytes | str], *, maxlen: int | None = None, chunk: int = 1000
) -> list[str]:
    """Add one entry per payload (field `payload`) to `stream`, pipelined `chunk` at a time.

    Args:
        client: An asyncio Redis client.
        stream: The stream name.
        payloads: Event JSON texts.
        maxlen: Trim the stream to about this many entries.
        chunk: Entries per pipeline round trip.

    Returns:
        The new entry ids.
    """
    ids: list[str] = []
    batch: list[bytes | str] = []

    async def flush() -> None:
        pipe = client.pipeline(transaction=False)
        for payload in batch:
            pipe.xadd(stream, {"payload": payload}, maxlen=maxlen, approximate=True)
        ids.extend(i.decode() if isinstance(i, bytes) else str(i) for i in await pipe.execute())
        batch.clear()

    for payload in payloads:
        batch.append(payload)
        if len(batch) >= chunk:
            await flush()
    if batch:
        await flush()
    return ids
