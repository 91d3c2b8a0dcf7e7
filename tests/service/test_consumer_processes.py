"""Consumers as real processes: killed mid-batch, stopped by SIGTERM, sharing a stream."""

from __future__ import annotations

import json
import signal
import time
from collections import Counter
from typing import Any

import pytest

from servers._serve import closed_port
from servers.model_server import Reply
from service.conftest import RedisServer, Streams
from service.events import SEED_EARLY_EXIT, event
from service.judge_server import JudgeScript
from service.processes import consumer

pytestmark = pytest.mark.slow


def slow_judge(judge_server: Any, delay: float = 0.05) -> JudgeScript:
    return judge_server.script(default=Reply(json.dumps({"reason": "ok", "score": 0.9}), delay=delay))


def arguments(server: RedisServer, streams: Streams, script: JudgeScript, name: str, *extra: str) -> list[str]:
    return [
        "--redis-url",
        server.url,
        "--stream",
        streams.events,
        "--results-stream",
        streams.results,
        "--dead-letter-stream",
        streams.dead,
        "--name",
        name,
        "--judge",
        "openai/judge-test",
        "--judge-base-url",
        script.base_url,
        "--block-ms",
        "100",
        *extra,
    ]


def fill(rdb: Any, streams: Streams, count: int) -> list[str]:
    """Add `count` events, every fifth an early exit, the rest judged."""
    pipe = rdb.pipeline(transaction=False)
    for i in range(count):
        data = event(SEED_EARLY_EXIT, f"evt-{i}") if i % 5 == 0 else event(event_id=f"evt-{i}")
        pipe.xadd(streams.events, {"payload": json.dumps(data)})
    return list(pipe.execute())


def wait_for(predicate: Any, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError("timed out waiting")
        time.sleep(0.02)


def assert_exactly_one_result_each(rdb: Any, streams: Streams, ids: list[str]) -> list[dict[str, str]]:
    stored = [fields for _, fields in rdb.xrange(streams.results)]
    assert len(stored) == len(ids), "a result was lost or stored twice"
    assert Counter(r["entry_id"] for r in stored) == Counter(ids)
    assert sorted(r["event_id"] for r in stored) == sorted(f"evt-{i}" for i in range(len(ids)))
    assert rdb.xpending(streams.events, streams.group)["pending"] == 0
    assert rdb.xlen(streams.dead) == 0
    return stored


@pytest.mark.parametrize(("kill_after", "same_name"), [(1, False), (40, False), (40, True)])
def test_a_consumer_killed_mid_batch_loses_nothing(
    redis_server: RedisServer, streams: Streams, rdb: Any, judge_server: Any, kill_after: int, same_name: bool
) -> None:
    script = slow_judge(judge_server)
    ids = fill(rdb, streams, 150)
    first = consumer(*arguments(redis_server, streams, script, "a", "--concurrency", "16", "--batch-size", "20"))
    try:
        wait_for(lambda: rdb.exists(streams.results) and rdb.xlen(streams.results) >= kill_after)
        first.send_signal(signal.SIGKILL)  # mid-batch: entries read, some judged, none of them committed
        assert first.wait(timeout=10) == -signal.SIGKILL
    finally:
        if first.poll() is None:
            first.kill()
        first.communicate()
    done_before = rdb.xlen(streams.results)
    assert done_before < 150 and rdb.xpending(streams.events, streams.group)["pending"] > 0
    name = "a" if same_name else "b"
    claim = ["--claim-idle", "0.5", "--claim-interval", "0.1", "--exit-when-idle"]
    second = consumer(*arguments(redis_server, streams, script, name, *claim))
    out, err = second.communicate(timeout=90)
    assert second.returncode == 0, err
    stats = json.loads(out.strip().splitlines()[-1])
    if same_name:
        assert stats["recovered"] > 0  # its own pending entries, first
    else:
        assert stats["claimed"] > 0  # the dead consumer's, after the idle time
    stored = assert_exactly_one_result_each(rdb, streams, ids)
    assert {r["consumer"] for r in stored} == ({"a"} if same_name else {"a", "b"})


def test_sigterm_finishes_in_flight_work_and_exits_cleanly(
    redis_server: RedisServer, streams: Streams, rdb: Any, judge_server: Any
) -> None:
    script = slow_judge(judge_server, delay=0.3)
    ids = fill(rdb, streams, 40)
    process = consumer(*arguments(redis_server, streams, script, "t", "--concurrency", "8"))
    try:
        wait_for(lambda: script.calls >= 6)
        process.send_signal(signal.SIGTERM)
        out, err = process.communicate(timeout=30)
    finally:
        if process.poll() is None:
            process.kill()
    assert process.returncode == 0, err
    stats = json.loads(out.strip().splitlines()[-1])
    assert stats["results"] == rdb.xlen(streams.results) > 0
    assert rdb.xpending(streams.events, streams.group)["pending"] == 0  # nothing left half-done
    assert stats["results"] < len(ids)  # it stopped reading new work


def test_two_consumers_share_a_stream_without_double_results(
    redis_server: RedisServer, streams: Streams, rdb: Any, judge_server: Any
) -> None:
    script = slow_judge(judge_server)
    ids = fill(rdb, streams, 200)  # first: a consumer with --exit-when-idle stops on an empty stream
    options = ["--concurrency", "8", "--batch-size", "5", "--exit-when-idle"]
    processes = [consumer(*arguments(redis_server, streams, script, name, *options)) for name in ("x", "y")]
    stats = []
    for process in processes:
        out, err = process.communicate(timeout=120)
        assert process.returncode == 0, err
        stats.append(json.loads(out.strip().splitlines()[-1]))
    stored = assert_exactly_one_result_each(rdb, streams, ids)
    by_consumer = Counter(r["consumer"] for r in stored)
    assert set(by_consumer) == {"x", "y"} and min(by_consumer.values()) > 20
    assert sum(s["results"] for s in stats) == 200


def test_an_unreachable_redis_is_reported_without_its_password() -> None:
    process = consumer("--redis-url", f"redis://:pw-redis-planted@127.0.0.1:{closed_port()}/0", "--exit-when-idle")
    out, err = process.communicate(timeout=60)
    assert process.returncode == 2, err
    assert "cannot reach Redis at redis://***@127.0.0.1" in err and "pw-redis-planted" not in out + err


RESTARTS = 6
"""Crash-loop restarts in the test below: the issue's case (64 of 300 events dead-lettered after 6)."""


def test_a_consumer_in_a_crash_loop_dead_letters_no_healthy_event(
    redis_server: RedisServer, streams: Streams, rdb: Any, judge_server: Any
) -> None:
    script = slow_judge(judge_server, delay=0.2)
    ids = fill(rdb, streams, 300)
    killed = 0
    for _ in range(RESTARTS):  # the same consumer, killed mid-batch each time it has started working
        process = consumer(*arguments(redis_server, streams, script, "looping", "--concurrency", "64"))
        try:
            started = script.calls
            wait_for(lambda at_least=started + 20: script.calls >= at_least)
            process.send_signal(signal.SIGKILL)
            assert process.wait(timeout=10) == -signal.SIGKILL
            killed += 1
        finally:
            if process.poll() is None:
                process.kill()
            process.communicate()
    pending = rdb.xpending(streams.events, streams.group)["pending"]
    assert pending > 0 and rdb.xlen(streams.dead) == 0
    last = consumer(*arguments(redis_server, streams, script, "looping", "--exit-when-idle"))
    _, err = last.communicate(timeout=120)
    assert last.returncode == 0, err
    assert killed == RESTARTS
    assert_exactly_one_result_each(rdb, streams, ids)  # all 300, none twice, none dead-lettered
