from __future__ import annotations

import time
from collections.abc import Callable

import pytest

from proctor.errors import ConfigError, ModelError, ModelHTTPError, ModelTimeout
from proctor.models import GenerateConfig, ModelSettings, get_model
from proctor.models._retry import RetryPolicy, call_with_retries, map_sdk_error, parse_retry_after
from servers._serve import closed_port
from servers.model_server import ModelServer, Reply

HELLO = [{"role": "user", "content": "hello"}]


@pytest.mark.anyio
async def test_429_waits_for_retry_after_then_succeeds(
    model_server: ModelServer, make_settings: Callable[..., ModelSettings]
) -> None:
    script = model_server.script(Reply("slow down", status=429, headers={"Retry-After": "1"}), Reply("done"))
    async with get_model("openai/m", settings=make_settings(script)) as model:
        started = time.monotonic()
        response = await model.generate(HELLO)
        elapsed = time.monotonic() - started
    assert response.text == "done"
    assert response.retries == 1
    assert elapsed >= 1.0
    gap = script.requests[1].at - script.requests[0].at
    assert gap >= 0.99


@pytest.mark.anyio
async def test_500_then_success_counts_the_retry(
    model_server: ModelServer, make_settings: Callable[..., ModelSettings]
) -> None:
    script = model_server.script(Reply("kaboom", status=500), Reply("fine"))
    async with get_model("openai/m", settings=make_settings(script)) as model:
        response = await model.generate(HELLO)
    assert (response.text, response.retries, len(script.requests)) == ("fine", 1, 2)


@pytest.mark.anyio
async def test_5xx_every_time_gives_up_after_max_retries(
    model_server: ModelServer, make_settings: Callable[..., ModelSettings]
) -> None:
    script = model_server.script(default=Reply("overloaded", status=503))
    async with get_model("openai/m", settings=make_settings(script, max_retries=2)) as model:
        with pytest.raises(ModelHTTPError) as info:
            await model.generate(HELLO)
    assert info.value.status == 503
    assert info.value.exit_code == 3
    assert "returned 503: overloaded (after 2 retries)" in str(info.value)
    assert len(script.requests) == 3


@pytest.mark.anyio
async def test_400_is_not_retried(model_server: ModelServer, make_settings: Callable[..., ModelSettings]) -> None:
    script = model_server.script(Reply("bad request: unknown field", status=400))
    async with get_model("openai/m", settings=make_settings(script)) as model:
        with pytest.raises(ModelHTTPError, match="returned 400: bad request: unknown field") as info:
            await model.generate(HELLO)
    assert info.value.status == 400 and not info.value.retryable
    assert len(script.requests) == 1


@pytest.mark.anyio
async def test_the_settings_timeout_bounds_every_attempt_of_every_call(
    model_server: ModelServer, make_settings: Callable[..., ModelSettings]
) -> None:
    # `--judge-timeout`: a hung judge costs timeout x attempts, not 60 s x 4.
    script = model_server.script(default=Reply("late", delay=1.0))
    async with get_model("openai/m", settings=make_settings(script, max_retries=1, timeout=0.2)) as model:
        started = time.monotonic()
        with pytest.raises(ModelTimeout, match=r"within 0\.2 s"):
            await model.generate(HELLO)  # the call's own default is 60 s
        elapsed = time.monotonic() - started
    assert len(script.requests) == 2 and elapsed < 0.9
    fast = model_server.script(default=Reply("ok", delay=0.3))
    async with get_model("openai/m", settings=make_settings(fast, timeout=2.0)) as model:
        assert (await model.generate(HELLO, GenerateConfig(timeout=0.1))).text == "ok"  # the setting wins
    with pytest.raises(ConfigError, match="model timeout must be > 0 seconds"):
        ModelSettings(timeout=0)


@pytest.mark.anyio
async def test_timeout_raises_model_timeout(
    model_server: ModelServer, make_settings: Callable[..., ModelSettings]
) -> None:
    script = model_server.script(default=Reply("late", delay=1.0))
    async with get_model("openai/m", settings=make_settings(script, max_retries=1)) as model:
        started = time.monotonic()
        with pytest.raises(ModelTimeout, match=r"openai/m: no reply .*within 0\.2 s") as info:
            await model.generate(HELLO, GenerateConfig(timeout=0.2))
        elapsed = time.monotonic() - started
    assert "(after 1 retry)" in str(info.value)
    assert len(script.requests) == 2  # timeouts are retried
    assert elapsed < 0.9


@pytest.mark.anyio
async def test_connection_refused_is_retried_then_reported() -> None:
    settings = ModelSettings(
        base_url=f"http://127.0.0.1:{closed_port()}/v1", max_retries=1, retry_initial_wait=0.01, cache=None
    )
    async with get_model("openai/m", settings=settings) as model:
        with pytest.raises(ModelError, match=r"cannot reach .* \(after 1 retry\)") as info:
            await model.generate(HELLO)
    assert info.value.retryable


@pytest.mark.anyio
async def test_a_first_failure_given_to_the_retry_loop_is_retried_not_repeated() -> None:
    attempts: list[int] = []

    async def attempt() -> str:
        attempts.append(len(attempts))
        if len(attempts) < 2:
            failure = ModelError("flaky")
            failure.retryable = True
            raise failure
        return "ok"

    first = ModelError("first")
    first.retryable = True
    policy = RetryPolicy(max_retries=3, initial_wait=0.001)
    assert await call_with_retries(attempt, policy, failed=first) == ("ok", 2)
    assert len(attempts) == 2  # the failed first attempt was the caller's: two more were made

    async def failing() -> str:
        attempts.append(len(attempts))
        failure = ModelError("still down")
        failure.retryable = True
        raise failure

    attempts.clear()
    with pytest.raises(ModelError, match=r"^still down \(after 2 retries\)$"):
        await call_with_retries(failing, RetryPolicy(max_retries=2, initial_wait=0.001), failed=first)
    assert len(attempts) == 2
    final = ModelError("final")  # not retryable: raised as it is
    with pytest.raises(ModelError, match=r"^final$"):
        await call_with_retries(attempt, policy, failed=final)


@pytest.mark.anyio
async def test_200_with_a_non_json_body_is_an_error(
    model_server: ModelServer, make_settings: Callable[..., ModelSettings]
) -> None:
    script = model_server.script(Reply(body="<html>gateway</html>"), Reply(body={"error": "no choices"}))
    async with get_model("openai/m", settings=make_settings(script)) as model:
        with pytest.raises(ModelError, match="is not JSON"):
            await model.generate(HELLO)
        with pytest.raises(ModelError, match="has no choices"):
            await model.generate(HELLO)
    assert len(script.requests) == 2


def test_parse_retry_after() -> None:
    assert parse_retry_after({"retry-after": "2.5"}) == 2.5
    assert parse_retry_after({"retry-after-ms": "1500", "retry-after": "9"}) == 1.5
    assert parse_retry_after({"retry-after": "Wed, 21 Oct 2015 07:28:00 GMT"}) == 0.0  # in the past
    assert parse_retry_after({"retry-after": "soon"}) is None
    assert parse_retry_after(None) is None


class _FakeResponse:
    def __init__(self, status: int, headers: dict[str, str]) -> None:
        self.status_code = status
        self.headers = headers


class RateLimitError(Exception):
    def __init__(self) -> None:
        super().__init__("rate limited")
        self.status_code = 429
        self.response = _FakeResponse(429, {"retry-after": "3"})


class APITimeoutError(Exception):
    pass


class EndpointConnectionError(Exception):
    pass


class ClientError(Exception):
    def __init__(self, code: str, status: int) -> None:
        super().__init__(f"{code} occurred")
        self.response = {"Error": {"Code": code}, "ResponseMetadata": {"HTTPStatusCode": status, "HTTPHeaders": {}}}


def test_map_sdk_error_by_shape() -> None:
    limited = map_sdk_error(RateLimitError(), "anthropic/x")
    assert isinstance(limited, ModelHTTPError) and limited.status == 429 and limited.retry_after == 3.0
    assert isinstance(map_sdk_error(APITimeoutError("slow"), "x"), ModelTimeout)
    refused = map_sdk_error(EndpointConnectionError("nope"), "x")
    assert refused is not None and refused.retryable and "connection failed" in str(refused)
    throttled = map_sdk_error(ClientError("ThrottlingException", 400), "bedrock/x")
    assert isinstance(throttled, ModelHTTPError) and throttled.status == 429 and throttled.retryable
    invalid = map_sdk_error(ClientError("ValidationException", 400), "bedrock/x")
    assert isinstance(invalid, ModelHTTPError) and invalid.status == 400 and not invalid.retryable
    assert map_sdk_error(KeyError("bug"), "x") is None
