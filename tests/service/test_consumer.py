"""The Redis Stream consumer, in process, against a real redis-server."""

from __future__ import annotations

import json
from typing import Any

import anyio
import pytest

from proctor.service import Consumer, ConsumerConfig, ConsumerStats, EvaluationRequest, Pipeline, ServiceSettings
from proctor.service import build_pipeline as build
from proctor.service._redis import COMMIT_SCRIPT, connect, produce, redis_url
from service.conftest import RedisServer, Streams
from service.events import SEED_EARLY_EXIT, SEED_EVALUATE, event
from service.judge_server import JudgeScript, verdict


def config(server: RedisServer, streams: Streams, **overrides: Any) -> ConsumerConfig:
    values: dict[str, Any] = {
        "redis_url": server.url,
        "stream": streams.events,
        "results_stream": streams.results,
        "dead_letter_stream": streams.dead,
        "consumer": "c1",
        "block_ms": 50,
        "exit_when_idle": True,
    }
    values.update(overrides)
    return ConsumerConfig(**values)


def judged(script: JudgeScript) -> Pipeline:
    return build(ServiceSettings(judge_model="openai/judge-test", judge_base_url=script.base_url, judge_api_key="k"))


def results(rdb: Any, streams: Streams) -> list[dict[str, str]]:
    return [fields for _, fields in rdb.xrange(streams.results)]


def dead(rdb: Any, streams: Streams) -> list[dict[str, str]]:
    return [fields for _, fields in rdb.xrange(streams.dead)]


def pending(rdb: Any, streams: Streams) -> int:
    return int(rdb.xpending(streams.events, streams.group)["pending"])


async def add(server: RedisServer, stream: str, payloads: list[str]) -> list[str]:
    client = connect(server.url)
    try:
        return await produce(client, stream, payloads, chunk=7)
    finally:
        await client.aclose()


def early_exit(n: int) -> list[str]:
    return [json.dumps(event(SEED_EARLY_EXIT, f"evt-{i}")) for i in range(n)]


@pytest.mark.anyio
async def test_every_event_gets_one_result_with_its_event_id(
    redis_server: RedisServer, streams: Streams, rdb: Any, judge_server: Any
) -> None:
    script = judge_server.script(default=verdict(0.9))
    payloads = [json.dumps(event(SEED_EVALUATE if i % 3 else SEED_EARLY_EXIT, f"evt-{i}")) for i in range(30)]
    ids = await add(redis_server, streams.events, payloads)
    stats = await Consumer(judged(script), config(redis_server, streams, batch_size=8, concurrency=5)).run()
    stored = results(rdb, streams)
    assert sorted(r["event_id"] for r in stored) == sorted(f"evt-{i}" for i in range(30))
    assert sorted(r["entry_id"] for r in stored) == sorted(ids)
    for record in stored:
        result = json.loads(record["result"])
        assert result["id"] == record["event_id"] and result["verdict"] == record["verdict"]
        assert record["consumer"] == "c1"
    assert {r["verdict"] for r in stored} == {"pass", "fail"}
    assert script.calls == 20 * 5  # five judges each; the 10 early exits called no judge
    assert pending(rdb, streams) == 0 and dead(rdb, streams) == []
    assert (stats.read, stats.results, stats.dead_lettered, stats.superseded) == (30, 30, 0, 0)


@pytest.mark.anyio
async def test_malformed_entries_go_to_the_dead_letter_stream(
    redis_server: RedisServer, streams: Streams, rdb: Any
) -> None:
    rdb.xadd(streams.events, {"data": "no payload here"})
    rdb.xadd(streams.events, {"payload": "{not json"})
    rdb.xadd(streams.events, {"payload": json.dumps({"event_id": "evt-x", "interaction": {"answer": "hi"}})})
    rdb.xadd(streams.events, {"payload": SEED_EARLY_EXIT})
    stats = await Consumer(Pipeline(), config(redis_server, streams)).run()
    letters = dead(rdb, streams)
    assert [letter["reason"] for letter in letters] == [
        "the entry has no 'payload' field",
        "the payload is not a valid event: Invalid JSON: key must be a string at line 1 column 2",
        "the payload is not a valid event: interaction.user_query: Field required",
    ]
    assert json.loads(letters[0]["payload"]) == {"data": "no payload here"}
    assert letters[1]["payload"] == "{not json" and letters[1]["stream"] == streams.events
    assert {letter["deliveries"] for letter in letters} == {"1"}
    assert [r["event_id"] for r in results(rdb, streams)] == ["evt-002"]
    assert pending(rdb, streams) == 0 and (stats.dead_lettered, stats.results) == (3, 1)


class Poisoned(Pipeline):
    """Raises on one event id, as a bug would."""

    def stage_one(self, request: EvaluationRequest) -> Any:
        if request.event_id == "poison":
            raise RuntimeError("boom")
        return super().stage_one(request)


@pytest.mark.anyio
async def test_a_poison_entry_is_retried_then_dead_lettered(
    redis_server: RedisServer, streams: Streams, rdb: Any
) -> None:
    await add(redis_server, streams.events, [json.dumps(event(SEED_EARLY_EXIT, "poison")), *early_exit(3)])
    consumer = Consumer(
        Poisoned(),
        config(redis_server, streams, exit_when_idle=False, max_deliveries=2, claim_idle=0.1, claim_interval=0.05),
    )
    async with anyio.create_task_group() as group:
        group.start_soon(consumer.run)
        with anyio.fail_after(10):
            while not dead(rdb, streams):  # noqa: ASYNC110
                await anyio.sleep(0.02)
        consumer.stop()
    (letter,) = dead(rdb, streams)
    assert letter["reason"] == "evaluation failed 2 times (at most 2 attempts); not retried"
    assert json.loads(letter["payload"])["event_id"] == "poison" and letter["deliveries"] == "3"
    assert len(results(rdb, streams)) == 3 and pending(rdb, streams) == 0
    assert consumer.stats.failed == 2


@pytest.mark.anyio
async def test_re_reads_by_a_consumer_in_a_crash_loop_dead_letter_nothing(
    redis_server: RedisServer, streams: Streams, rdb: Any
) -> None:
    await add(redis_server, streams.events, early_exit(10))
    rdb.xgroup_create(streams.events, streams.group, id="0")
    rdb.xreadgroup(streams.group, "c1", {streams.events: ">"}, count=10)
    for _ in range(8):  # eight restarts, each killed after re-reading its own pending entries
        rdb.xreadgroup(streams.group, "c1", {streams.events: "0"}, count=10)
    (entry,) = rdb.xpending_range(streams.events, streams.group, "-", "+", 1)
    assert entry["times_delivered"] == 9  # what the old rule (more than 5: dead) counted
    stats = await Consumer(Pipeline(), config(redis_server, streams)).run()
    assert (stats.recovered, stats.results, stats.dead_lettered) == (10, 10, 0)
    assert dead(rdb, streams) == [] and pending(rdb, streams) == 0
    assert rdb.exists(f"{streams.events}:{streams.group}:attempts") == 0


@pytest.mark.anyio
async def test_an_entry_that_kills_its_consumer_is_dead_lettered_in_the_end(
    redis_server: RedisServer, streams: Streams, rdb: Any
) -> None:
    await add(redis_server, streams.events, early_exit(1))
    rdb.xgroup_create(streams.events, streams.group, id="0")
    for _ in range(3):  # read, then re-read twice: 4 deliveries once the consumer reads it
        rdb.xreadgroup(streams.group, "c1", {streams.events: "0" if _ else ">"}, count=1)
    stats = await Consumer(Pipeline(), config(redis_server, streams, max_deliveries=1)).run()
    assert (stats.results, stats.dead_lettered) == (1, 0)  # 4 deliveries <= CRASH_FACTOR x 1: evaluated
    await add(redis_server, streams.events, early_exit(1))
    for _ in range(11):
        rdb.xreadgroup(streams.group, "c1", {streams.events: "0" if _ else ">"}, count=1)
    stats = await Consumer(Pipeline(), config(redis_server, streams, max_deliveries=1)).run()
    (letter,) = dead(rdb, streams)
    assert stats.dead_lettered == 1 and letter["deliveries"] == "12"
    assert letter["reason"].startswith("delivered 12 times without a stored result or a recorded failure")


@pytest.mark.anyio
async def test_own_pending_entries_are_finished_first(redis_server: RedisServer, streams: Streams, rdb: Any) -> None:
    await add(redis_server, streams.events, early_exit(5))
    rdb.xgroup_create(streams.events, streams.group, id="0")
    rdb.xreadgroup(streams.group, "c1", {streams.events: ">"}, count=5)  # then "c1" died
    await add(redis_server, streams.events, early_exit(3))
    stats = await Consumer(Pipeline(), config(redis_server, streams)).run()
    assert (stats.recovered, stats.read, stats.results) == (5, 8, 8)
    assert len(results(rdb, streams)) == 8 and pending(rdb, streams) == 0


@pytest.mark.anyio
async def test_entries_of_a_dead_consumer_are_claimed_after_the_idle_time(
    redis_server: RedisServer, streams: Streams, rdb: Any
) -> None:
    await add(redis_server, streams.events, early_exit(6))
    rdb.xgroup_create(streams.events, streams.group, id="0")
    rdb.xreadgroup(streams.group, "dead", {streams.events: ">"}, count=4)
    overrides = {"consumer": "c2", "claim_idle": 0.2, "claim_interval": 0.05}
    stats = await Consumer(Pipeline(), config(redis_server, streams, **overrides)).run()
    stored = results(rdb, streams)
    assert len(stored) == 6 and {r["consumer"] for r in stored} == {"c2"}
    assert stats.claimed == 4 and pending(rdb, streams) == 0


def test_the_commit_script_stores_a_result_only_for_the_entry_owner(
    redis_server: RedisServer, streams: Streams, rdb: Any
) -> None:
    entry = rdb.xadd(streams.events, {"payload": SEED_EARLY_EXIT})
    rdb.xgroup_create(streams.events, streams.group, id="0")
    rdb.xreadgroup(streams.group, "slow", {streams.events: ">"})
    rdb.xclaim(streams.events, streams.group, "fast", 0, [entry])  # "slow" looked dead; "fast" took over
    script = rdb.register_script(COMMIT_SCRIPT)
    keys = [streams.events, streams.results, streams.dead]

    def commit(consumer: str) -> list[int]:
        return list(script(keys=keys, args=[streams.group, consumer, 0, entry, "r", "evt-002", "fail", "{}"]))

    assert commit("slow") == [0]  # no longer its entry: nothing stored, nothing acknowledged
    assert commit("fast") == [1]
    assert commit("fast") == [0]  # acknowledged already: a redelivery cannot store a second result
    assert [r["consumer"] for r in results(rdb, streams)] == ["fast"] and pending(rdb, streams) == 0


@pytest.mark.anyio
async def test_stop_lets_events_in_flight_finish(
    redis_server: RedisServer, streams: Streams, rdb: Any, judge_server: Any
) -> None:
    from servers.model_server import Reply

    script = judge_server.script(default=Reply(json.dumps({"reason": "ok", "score": 0.9}), delay=0.5))
    await add(redis_server, streams.events, [json.dumps(event(event_id=f"evt-{i}")) for i in range(4)])
    consumer = Consumer(judged(script), config(redis_server, streams, exit_when_idle=False))
    stats: list[ConsumerStats] = []

    async def run() -> None:
        stats.append(await consumer.run())

    async with anyio.create_task_group() as group:
        group.start_soon(run)
        with anyio.fail_after(10):
            while script.calls < 12:  # noqa: ASYNC110
                await anyio.sleep(0.01)
        consumer.stop()
    assert stats[0].results == 4 and len(results(rdb, streams)) == 4 and pending(rdb, streams) == 0


def test_redis_url_honours_the_seed_variables(monkeypatch: pytest.MonkeyPatch) -> None:
    assert redis_url("redis://h:1/2") == "redis://h:1/2"
    monkeypatch.delenv("REDIS_ADDR", raising=False)
    assert redis_url() == "redis://localhost:6379/0"
    monkeypatch.setenv("REDIS_ADDR", "cache:6380")
    monkeypatch.setenv("REDIS_PASSWORD", "p@ss")
    assert redis_url() == "redis://:p%40ss@cache:6380/0"


def test_consumer_settings_are_validated() -> None:
    from proctor.errors import ConfigError

    with pytest.raises(ConfigError, match="concurrency must be > 0"):
        ConsumerConfig(concurrency=0)
    with pytest.raises(ConfigError, match="three different streams"):
        ConsumerConfig(results_stream="eval-events")
