from __future__ import annotations

import json
import logging
from collections.abc import Callable
from pathlib import Path

import pytest

from proctor.models import GenerateConfig, ModelCache, ModelSettings, UsageLedger, cache_key, get_model, schema_for
from servers.model_server import ModelServer, Reply

HELLO = [{"role": "user", "content": "hello"}]


@pytest.mark.anyio
async def test_hit_makes_no_request_and_costs_nothing(
    model_server: ModelServer, make_settings: Callable[..., ModelSettings], cache: ModelCache
) -> None:
    script = model_server.script(Reply("first"), Reply("second"))
    ledger = UsageLedger()
    async with get_model("openai/gpt-4.1-mini", settings=make_settings(script, cache=cache, ledger=ledger)) as model:
        fresh = await model.generate(HELLO)
        again = await model.generate(HELLO)
    assert len(script.requests) == 1
    assert (fresh.text, fresh.cached) == ("first", False)
    assert fresh.cost_usd is not None and fresh.cost_usd > 0
    assert (again.text, again.cached, again.cost_usd, again.usage.total_tokens) == ("first", True, 0.0, 0)
    assert again.model == "openai/gpt-4.1-mini"
    judge = ledger.by_role()["judge"]
    assert (judge.calls, judge.cached_calls, judge.prompt_tokens) == (2, 1, 100)
    files = list(cache.root.glob("*/*.json"))
    assert len(files) == 1
    assert files[0].parent.name == files[0].stem[:2]  # sharded by the key's first two hex digits
    entry = json.loads(files[0].read_text())
    assert entry["response"]["text"] == "first"
    assert not list(cache.root.rglob("*.tmp"))


@pytest.mark.anyio
async def test_different_messages_schema_or_params_miss(
    model_server: ModelServer, make_settings: Callable[..., ModelSettings], cache: ModelCache
) -> None:
    script = model_server.script(default=Reply('{"a": 1}'))
    async with get_model("openai/m", settings=make_settings(script, cache=cache)) as model:
        await model.generate(HELLO)
        await model.generate([{"role": "user", "content": "hello!"}])
        await model.generate(HELLO, response_schema={"type": "object"})
        await model.generate(HELLO, GenerateConfig(max_tokens=5))
        await model.generate(HELLO, GenerateConfig(timeout=5))  # the timeout is not part of the key
    assert len(script.requests) == 4


@pytest.mark.anyio
async def test_disabled_cache_is_bypassed(
    model_server: ModelServer, make_settings: Callable[..., ModelSettings], tmp_path: Path
) -> None:
    script = model_server.script()
    off = ModelCache(tmp_path / "off", enabled=False)
    async with get_model("openai/m", settings=make_settings(script, cache=off)) as model:
        await model.generate(HELLO)
        await model.generate(HELLO)
    assert len(script.requests) == 2
    assert not (tmp_path / "off").exists()


@pytest.mark.anyio
async def test_temperature_above_zero_and_other_roles_are_not_cached_by_default(
    model_server: ModelServer, make_settings: Callable[..., ModelSettings], cache: ModelCache
) -> None:
    script = model_server.script()
    warm = GenerateConfig(temperature=0.7)
    async with get_model("openai/m", settings=make_settings(script, cache=cache)) as model:
        await model.generate(HELLO, warm)
        await model.generate(HELLO, warm)
        await model.generate(HELLO, role="simulator")
        await model.generate(HELLO, role="simulator")
    assert len(script.requests) == 4
    assert not cache.root.exists()


@pytest.mark.anyio
async def test_opt_in_caching_of_any_temperature_and_roles(
    model_server: ModelServer, make_settings: Callable[..., ModelSettings], tmp_path: Path
) -> None:
    script = model_server.script()
    cache = ModelCache(tmp_path / "c", roles=("judge", "simulator"), any_temperature=True)
    async with get_model("openai/m", settings=make_settings(script, cache=cache)) as model:
        await model.generate(HELLO, GenerateConfig(temperature=1.0), role="simulator")
        hit = await model.generate(HELLO, GenerateConfig(temperature=1.0), role="simulator")
    assert hit.cached and len(script.requests) == 1


@pytest.mark.anyio
async def test_default_settings_cache_judges_in_proctor_cache(
    model_server: ModelServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    script = model_server.script()
    monkeypatch.setenv("OPENAI_BASE_URL", script.base_url)
    async with get_model("openai/m") as model:  # cwd is tmp_path (conftest)
        await model.generate(HELLO)
        assert (await model.generate(HELLO)).cached
    assert len(script.requests) == 1
    assert list((tmp_path / ".proctor" / "cache").glob("*/*.json"))


@pytest.mark.anyio
async def test_corrupt_entry_is_a_miss_and_is_rewritten(
    model_server: ModelServer,
    make_settings: Callable[..., ModelSettings],
    cache: ModelCache,
    caplog: pytest.LogCaptureFixture,
) -> None:
    script = model_server.script(Reply("one"), Reply("two"))
    settings = make_settings(script, cache=cache)
    async with get_model("openai/m", settings=settings) as model:
        await model.generate(HELLO)
        (entry,) = cache.root.glob("*/*.json")
        entry.write_text("{not json")
        with caplog.at_level(logging.WARNING, logger="proctor.models"):
            repaired = await model.generate(HELLO)
        assert "ignoring unreadable model cache entry" in caplog.text
        assert repaired.text == "two" and not repaired.cached
        assert (await model.generate(HELLO)).text == "two"
    assert len(script.requests) == 2
    assert cache.clear() == 1


def test_cache_key_is_stable_and_covers_everything() -> None:
    base = {
        "provider": "openai",
        "model": "m",
        "endpoint": "http://x/v1",
        "messages": HELLO,
        "config": GenerateConfig(),
        "response_schema": None,
    }
    key = cache_key(**base)  # type: ignore[arg-type]
    assert len(key) == 64 and key == cache_key(**base)  # type: ignore[arg-type]
    for change in (
        {"provider": "ollama"},
        {"model": "n"},
        {"endpoint": "http://y/v1"},
        {"messages": [{"role": "user", "content": "hi"}]},
        {"config": GenerateConfig(seed=1)},
        {"config": GenerateConfig(extra={"top_p": 0.5})},
        {"response_schema": schema_for(dict[str, int])},
    ):
        assert cache_key(**{**base, **change}) != key  # type: ignore[arg-type]
    assert cache_key(**{**base, "config": GenerateConfig(timeout=1)}) == key  # type: ignore[arg-type]
