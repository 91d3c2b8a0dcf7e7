from __future__ import annotations

import time
from collections.abc import Callable

import anyio
import pytest

from proctor.errors import ConfigError
from proctor.models import ModelLimits, ModelSettings, RateLimiter, get_model
from servers.model_server import ModelServer, Reply

HELLO = [{"role": "user", "content": "hello"}]


@pytest.mark.anyio
async def test_concurrency_limit_is_honoured(
    model_server: ModelServer, make_settings: Callable[..., ModelSettings]
) -> None:
    script = model_server.script(default=Reply(delay=0.15))
    async with get_model("openai/m", settings=make_settings(script, concurrency=3)) as model:
        assert model.limits.name == "openai/m" and model.limits.concurrency == 3
        async with anyio.create_task_group() as group:
            for _ in range(9):
                group.start_soon(model.generate, HELLO)
    assert len(script.requests) == 9
    assert script.max_in_flight == 3


@pytest.mark.anyio
async def test_rpm_limit_spaces_request_starts(
    model_server: ModelServer, make_settings: Callable[..., ModelSettings]
) -> None:
    script = model_server.script()
    async with get_model("openai/m", settings=make_settings(script, rpm=600)) as model:  # one per 0.1 s
        started = time.monotonic()
        async with anyio.create_task_group() as group:
            for _ in range(4):
                group.start_soon(model.generate, HELLO)
        elapsed = time.monotonic() - started
    starts = sorted(request.at for request in script.requests)
    assert elapsed >= 0.3  # starts at 0, 0.1, 0.2 and 0.3 s
    assert starts[-1] - starts[0] >= 0.25  # as the server saw them (less network jitter)


@pytest.mark.anyio
async def test_limit_group_is_shared_between_models(
    model_server: ModelServer, make_settings: Callable[..., ModelSettings]
) -> None:
    script = model_server.script(default=Reply(delay=0.15))
    settings = make_settings(script, concurrency=2, limit_group="shared-key-test")
    async with get_model("openai/a", settings=settings) as a, get_model("openai/b", settings=settings) as b:
        assert a.limits is b.limits and a.limits.name == "shared-key-test"
        async with anyio.create_task_group() as group:
            for model in (a, b, a, b, a, b):
                group.start_soon(model.generate, HELLO)
    assert script.max_in_flight == 2
    with pytest.raises(ConfigError, match="already set to concurrency 2"):
        get_model("openai/c", settings=make_settings(script, concurrency=5, limit_group="shared-key-test"))


def test_rate_limiter_reservations() -> None:
    limiter = RateLimiter(60)  # one per second
    assert limiter.reserve() == 0.0
    assert limiter.reserve() == pytest.approx(1.0, abs=0.05)
    assert limiter.reserve() == pytest.approx(2.0, abs=0.05)
    bursty = RateLimiter(60, burst=3)
    assert [round(bursty.reserve(), 1) for _ in range(4)] == [0.0, 0.0, 0.0, 1.0]
    with pytest.raises(ValueError):
        RateLimiter(0)


def test_bad_limits_are_config_errors() -> None:
    with pytest.raises(ConfigError, match="concurrency must be at least 1"):
        ModelLimits("m", concurrency=0)
    with pytest.raises(ConfigError, match="rpm must be at least 1"):
        ModelLimits("m", concurrency=1, rpm=0)


@pytest.mark.anyio
async def test_a_call_cancelled_while_it_waits_for_the_rate_limit_gives_its_slot_back() -> None:
    limits = ModelLimits("m", concurrency=1, rpm=1)  # the second start waits a minute
    async with limits.slot():
        pass
    with anyio.CancelScope() as scope:
        async with anyio.create_task_group() as group:

            async def waiting() -> None:
                async with limits.slot():
                    pytest.fail("started before the rate limit allowed it")

            group.start_soon(waiting)
            await anyio.wait_all_tasks_blocked()
            scope.cancel()
    with anyio.fail_after(1):  # the slot is free again (only the rate limit would make a caller wait)
        await limits._slots.get().acquire()
