"""The HTTP API against a real uvicorn server on loopback: the seed's requests, bad inputs, limits, auth."""

from __future__ import annotations

import json
import logging
import socket
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from proctor import __version__
from proctor.service import (
    EvaluationRequest,
    EvaluationResult,
    HttpOptions,
    Pipeline,
    PipelineConfig,
    ServiceSettings,
    build_pipeline,
    create_app,
)
from proctor.service._openapi import SCHEMA_PATH, openapi_schema, schema_text
from servers._serve import closed_port, serve_app
from service.events import SEED_EARLY_EXIT, SEED_EVALUATE, event
from service.judge_server import JudgeScript, verdict

JSON_HEADERS = {"Content-Type": "application/json"}


def start(script: JudgeScript, options: HttpOptions | None = None, **config: Any) -> Any:
    settings = ServiceSettings(PipelineConfig(**config), "openai/judge-test", script.base_url, "test-key")
    return serve_app(create_app(build_pipeline(settings), options))


@pytest.fixture
def api(judge_server: Any) -> Iterator[tuple[httpx.Client, JudgeScript]]:
    script = judge_server.script(relevance=verdict(0.95, "Direct answer."))
    with start(script, HttpOptions(max_body_bytes=4096, max_batch=3)) as url, httpx.Client(base_url=url) as client:
        yield client, script


def test_health(api: tuple[httpx.Client, JudgeScript]) -> None:
    client, _ = api
    response = client.get("/api/v1/health")
    assert response.status_code == 200 and response.json() == {"status": "ok", "version": __version__}


def test_the_seed_requests_get_the_seed_responses(api: tuple[httpx.Client, JudgeScript]) -> None:
    client, script = api
    good = client.post("/api/v1/evaluate", content=SEED_EVALUATE, headers=JSON_HEADERS)
    assert good.status_code == 200 and good.headers["content-type"] == "application/json"
    body = good.json()
    assert body["id"] == "evt-001" and body["verdict"] == "pass" and body["errors"] == []
    assert [s["name"] for s in body["stages"]] == [
        "length-checker",
        "overlap-checker",
        "format-checker",
        "relevance-judge",
        "faithfulness-judge",
        "coherence-judge",
        "completeness-judge",
        "instruction-judge",
    ]  # the Go service's 8 stages
    assert all(set(s) == {"name", "score", "reason", "duration_ns"} for s in body["stages"])
    calls = script.calls
    bad = client.post("/api/v1/evaluate", content=SEED_EARLY_EXIT, headers=JSON_HEADERS).json()
    assert bad["verdict"] == "fail" and len(bad["stages"]) == 3  # no LLM judge results: early exit
    assert script.calls == calls


def test_invalid_bodies_get_422_with_every_field_error(api: tuple[httpx.Client, JudgeScript]) -> None:
    client, _ = api
    response = client.post("/api/v1/evaluate", json={"interaction": {"answer": 3}, "event_id": ""})
    assert response.status_code == 422
    assert response.json() == {
        "detail": [
            {"loc": ["body", "event_id"], "msg": "String should have at least 1 character", "type": "string_too_short"},
            {"loc": ["body", "interaction", "user_query"], "msg": "Field required", "type": "missing"},
            {"loc": ["body", "interaction", "answer"], "msg": "Input should be a valid string", "type": "string_type"},
        ]
    }
    broken = client.post("/api/v1/evaluate", content=b'{"event_id": "x",', headers=JSON_HEADERS)
    assert broken.status_code == 422 and broken.json()["detail"][0]["type"] == "json_invalid"
    listed = client.post("/api/v1/evaluate", json=[1, 2])
    assert listed.status_code == 422 and listed.json()["detail"][0]["loc"] == ["body"]


def test_unknown_fields_are_ignored_and_an_empty_answer_is_evaluated(api: tuple[httpx.Client, JudgeScript]) -> None:
    client, _ = api
    data = event(answer="")
    data["trace"] = {"span": "abc"}
    response = client.post("/api/v1/evaluate", json=data)
    assert response.status_code == 200 and response.json()["verdict"] == "fail"


def test_oversized_bodies_get_413(api: tuple[httpx.Client, JudgeScript]) -> None:
    client, _ = api
    big = event(answer="x" * 5000)
    declared = client.post("/api/v1/evaluate", json=big)
    assert declared.status_code == 413 and "over the limit of 4096 bytes" in declared.json()["detail"]

    def chunks() -> Iterator[bytes]:  # no Content-Length: the limit holds while streaming
        payload = json.dumps(big).encode()
        for start in range(0, len(payload), 1000):
            yield payload[start : start + 1000]

    streamed = client.post("/api/v1/evaluate", content=chunks(), headers=JSON_HEADERS)
    assert streamed.status_code == 413


def test_one_judge_endpoint(api: tuple[httpx.Client, JudgeScript]) -> None:
    client, _ = api
    response = client.post("/api/v1/evaluate/judge/relevance?threshold=0.9", content=SEED_EVALUATE)
    body = response.json()
    assert response.status_code == 200
    assert (body["verdict"], body["confidence"], [s["name"] for s in body["stages"]]) == (
        "pass",
        0.95,
        ["relevance-judge"],
    )
    assert client.post("/api/v1/evaluate/judge/coherence-judge", content=SEED_EVALUATE).json()["verdict"] == "pass"
    missing = client.post("/api/v1/evaluate/judge/tone", content=SEED_EVALUATE)
    assert missing.status_code == 404 and "unknown judge 'tone'" in missing.json()["detail"]
    bad = client.post("/api/v1/evaluate/judge/relevance?threshold=high", content="{}")
    assert bad.status_code == 422
    locs = [error["loc"] for error in bad.json()["detail"]]
    assert locs[0] == ["query", "threshold"] and ["body", "event_id"] in locs
    assert client.post("/api/v1/evaluate/judge/relevance?threshold=1.5", content=SEED_EVALUATE).status_code == 422


def test_batch_keeps_the_order_and_limits_the_size(api: tuple[httpx.Client, JudgeScript]) -> None:
    client, _ = api
    events = [event(event_id="a"), json.loads(SEED_EARLY_EXIT), event(event_id="c")]
    response = client.post("/api/v1/evaluate/batch", json=events)
    assert response.status_code == 200
    assert [(r["id"], r["verdict"]) for r in response.json()] == [("a", "pass"), ("evt-002", "fail"), ("c", "pass")]
    too_many = client.post("/api/v1/evaluate/batch", json=[*events, event(event_id="d")])
    assert too_many.status_code == 422 and "at most 3 events" in too_many.json()["detail"][0]["msg"]
    invalid = client.post("/api/v1/evaluate/batch", json=[events[0], {"event_id": "x"}])
    assert invalid.status_code == 422 and invalid.json()["detail"][0]["loc"] == ["body", 1, "interaction"]
    assert client.post("/api/v1/evaluate/batch", json=events[0]).status_code == 422  # not a list


def test_wrong_method_and_path_answer_in_json(api: tuple[httpx.Client, JudgeScript]) -> None:
    client, _ = api
    assert client.get("/api/v1/evaluate").status_code == 405
    missing = client.get("/api/v2/nothing")
    assert missing.status_code == 404 and "detail" in missing.json()


def test_bearer_token(judge_server: Any) -> None:
    script = judge_server.script()
    with start(script, HttpOptions(api_token="s3cret")) as url, httpx.Client(base_url=url) as client:
        assert client.get("/api/v1/health").status_code == 200  # probes need no token
        assert client.get("/openapi.json").status_code == 200
        missing = client.post("/api/v1/evaluate", content=SEED_EARLY_EXIT)
        assert missing.status_code == 401 and missing.headers["www-authenticate"] == "Bearer"
        assert missing.json() == {"detail": "missing bearer token"}
        wrong = client.post("/api/v1/evaluate", content=SEED_EARLY_EXIT, headers={"Authorization": "Bearer nope"})
        assert wrong.status_code == 401 and wrong.json() == {"detail": "invalid bearer token"}
        ok = client.post("/api/v1/evaluate", content=SEED_EARLY_EXIT, headers={"Authorization": "Bearer s3cret"})
        assert ok.status_code == 200
        batch = client.post("/api/v1/evaluate/batch", json=[], headers={"Authorization": "Bearer s3cret"})
        assert batch.status_code == 200 and batch.json() == []


@pytest.mark.parametrize("scheme", ["bearer", "BEARER", "bEaReR"])
def test_the_bearer_scheme_is_case_insensitive(judge_server: Any, scheme: str) -> None:
    script = judge_server.script()
    with start(script, HttpOptions(api_token="s3cret")) as url, httpx.Client(base_url=url) as client:
        ok = client.post("/api/v1/evaluate", content=SEED_EARLY_EXIT, headers={"Authorization": f"{scheme} s3cret"})
        assert ok.status_code == 200
        other = client.post("/api/v1/evaluate", content=SEED_EARLY_EXIT, headers={"Authorization": "Basic s3cret"})
        assert other.status_code == 401  # another scheme with the right credentials is still refused


def test_the_committed_openapi_schema_has_not_drifted() -> None:
    committed = SCHEMA_PATH.read_text(encoding="utf-8")
    assert committed == schema_text(), (
        "src/proctor/service/openapi.json is out of date: run "
        "`python -m proctor.service._openapi > src/proctor/service/openapi.json`"
    )


def test_the_schema_describes_the_routes_and_shapes(api: tuple[httpx.Client, JudgeScript]) -> None:
    client, _ = api
    served = client.get("/openapi.json").json()
    assert served == json.loads(SCHEMA_PATH.read_text(encoding="utf-8"))
    schema = openapi_schema()
    assert set(schema["paths"]) == {
        "/api/v1/health",
        "/api/v1/evaluate",
        "/api/v1/evaluate/judge/{name}",
        "/api/v1/evaluate/batch",
    }
    result = schema["components"]["schemas"]["EvaluationResult"]
    assert set(result["properties"]) == {"id", "stages", "confidence", "verdict", "errors"}
    assert set(result["required"]) >= {"id", "stages", "confidence", "verdict"}
    request = schema["components"]["schemas"]["EvaluationRequest"]
    assert request["required"] == ["event_id", "interaction"]


def test_a_client_that_hangs_up_mid_body_leaves_no_traceback(
    api: tuple[httpx.Client, JudgeScript], caplog: pytest.LogCaptureFixture
) -> None:
    client, _ = api
    host, port = str(client.base_url.host), int(client.base_url.port or 80)
    caplog.set_level(logging.DEBUG)
    for _ in range(3):
        with socket.create_connection((host, port)) as sock:
            head = f"POST /api/v1/evaluate HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\n"
            sock.sendall(f"{head}Content-Length: 2000\r\n\r\n".encode() + b'{"id": "cut')
        # the server notices the hang-up on its next read; the health check proves it is still serving
        assert client.get("/api/v1/health").status_code == 200
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline and not any("disconnected" in r.getMessage() for r in caplog.records):
        time.sleep(0.02)
    assert any("disconnected before sending the whole body" in r.getMessage() for r in caplog.records)
    noisy = [r for r in caplog.records if r.levelno >= logging.WARNING or r.exc_info]
    assert noisy == [], [r.getMessage() for r in noisy]


def test_the_judge_endpoints_userinfo_reaches_neither_clients_nor_logs(
    judge_server: Any, caplog: pytest.LogCaptureFixture
) -> None:
    script = judge_server.script(relevance=verdict(0.95, "Direct answer."))
    secret_url = script.base_url.replace("http://", "http://judge:pw-judge-planted@")
    down_url = f"http://judge:pw-judge-planted@127.0.0.1:{closed_port()}/v1"
    caplog.set_level(logging.INFO)
    for base_url in (secret_url, down_url):
        settings = ServiceSettings(PipelineConfig(), "openai/judge-test", base_url, "test-key")
        with serve_app(create_app(build_pipeline(settings))) as url, httpx.Client(base_url=url) as client:
            body = client.post("/api/v1/evaluate", content=SEED_EVALUATE, headers=JSON_HEADERS).text
            assert "pw-judge-planted" not in body
    assert '"status":"error"' in body.replace(" ", "") and "judge:***@127.0.0.1" in body  # the failure, masked
    logged = "\n".join(record.getMessage() for record in caplog.records)
    assert "HTTP Request: POST http://judge:***@127.0.0.1" in logged  # proctor.http logged the call, masked
    assert "pw-judge-planted" not in logged


class _Broken(Pipeline):
    """Raises on every event, as a bug would."""

    def stage_one(self, request: EvaluationRequest) -> Any:
        raise RuntimeError("boom")


def test_an_unexpected_error_on_the_evaluate_route_is_a_json_500(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.ERROR)
    with serve_app(create_app(_Broken())) as url, httpx.Client(base_url=url) as client:
        response = client.post("/api/v1/evaluate", content=SEED_EARLY_EXIT, headers=JSON_HEADERS)
        assert response.status_code == 500 and response.json() == {"detail": "internal error: RuntimeError: boom"}
        assert httpx.get(f"{url}/api/v1/health").status_code == 200  # still serving (uvicorn closed that connection)
    assert any("unexpected error serving /api/v1/evaluate" in record.getMessage() for record in caplog.records)


def test_the_evaluate_route_answers_as_a_routed_endpoint_would(api: tuple[httpx.Client, JudgeScript]) -> None:
    client, _ = api
    response = client.post("/api/v1/evaluate", content=SEED_EARLY_EXIT, headers=JSON_HEADERS)
    assert response.status_code == 200 and response.headers["content-type"] == "application/json"
    assert int(response.headers["content-length"]) == len(response.content)
    result = EvaluationResult.model_validate_json(response.content)
    assert response.content == result.model_dump_json().encode()  # compact JSON, the model's field order
    assert (result.id, result.verdict, [stage.name for stage in result.stages]) == (
        "evt-002",
        "fail",
        ["length-checker", "overlap-checker", "format-checker"],
    )
    empty = client.post("/api/v1/evaluate", content=b"", headers=JSON_HEADERS)
    assert empty.status_code == 422 and empty.json()["detail"][0]["type"] == "json_invalid"
