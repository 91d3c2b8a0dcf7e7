"""The HTTP API (Starlette on uvicorn): the Go Eval Agent's endpoints over the same pipeline.

```
GET  /api/v1/health                         {"status": "ok", "version": ...}
POST /api/v1/evaluate                       one event -> EvaluationResult
POST /api/v1/evaluate/judge/{name}?threshold=0.7   one judge alone
POST /api/v1/evaluate/batch                 a JSON list of events -> a list of results, in order
GET  /openapi.json                          the committed OpenAPI schema
POST /v1/traces                             with `--otlp`: OTLP/HTTP traces, scored per turn (service/_otlp.py)
```

`POST /api/v1/evaluate`, the hot route, is answered by a pure ASGI middleware in front of the router
(`_EvaluateRoute`): no Request or Response object, the body read straight from `receive`, the result
serialised to bytes once; its answers, errors included, are the same as the routed endpoints'.

Invalid bodies get 422 with every field error (`{"detail": [{"loc", "msg", "type"}]}`, FastAPI's
shape), bodies over the size limit 413, an unknown judge 404. With an API token, every route but the
health check and the schema needs `Authorization: Bearer <token>` (401 otherwise).
"""

from __future__ import annotations

import hmac
import json
import logging
from collections.abc import AsyncIterator, Awaitable, Callable, MutableMapping
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pydantic import TypeAdapter, ValidationError
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import ClientDisconnect, Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from proctor import __version__
from proctor._redact import install_log_redaction, redact
from proctor.service._batch import evaluate_all
from proctor.service._models import EvaluationRequest, EvaluationResult
from proctor.service._pipeline import Pipeline

if TYPE_CHECKING:
    from proctor.service._otlp import OtlpReceiver

__all__ = ["HttpOptions", "create_app", "read_body"]

logger = logging.getLogger("proctor.service")

EVALUATE_PATH = "/api/v1/evaluate"
PUBLIC_PATHS = frozenset({"/api/v1/health", "/openapi.json"})
"""Routes that need no bearer token."""
JSON = "application/json"

Scope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]


@dataclass(frozen=True, slots=True)
class HttpOptions:
    """Limits and access control of the HTTP API."""

    api_token: str | None = None
    """When set, requests need `Authorization: Bearer <token>` (`PROCTOR_API_TOKEN`)."""
    max_body_bytes: int = 1_048_576
    """Larger request bodies are refused with 413."""
    max_batch: int = 100
    """Most events in one `/evaluate/batch` request (more: 422)."""
    batch_concurrency: int = 16
    """Events of one batch evaluated at once."""


class _BearerAuth:
    """Pure ASGI middleware: a constant-time bearer-token check on every non-public route."""

    def __init__(self, app: ASGIApp, token: str) -> None:
        self.app = app
        self.expected = token.encode()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["path"] not in PUBLIC_PATHS:
            given = b""
            for name, value in scope["headers"]:
                if name == b"authorization":
                    given = value
                    break
            # RFC 9110 section 11.1: the scheme is case-insensitive ("bearer", "BEARER" too)
            scheme, _, credentials = given.strip().partition(b" ")
            if scheme.lower() != b"bearer" or not hmac.compare_digest(credentials.strip(), self.expected):
                detail = "missing bearer token" if not given else "invalid bearer token"
                response = JSONResponse({"detail": detail}, 401, {"WWW-Authenticate": "Bearer"})
                await response(scope, receive, send)
                return
        await self.app(scope, receive, send)


def _field_errors(exc: ValidationError, *prefix: str | int) -> list[dict[str, Any]]:
    return [
        {"loc": [*prefix, *error["loc"]], "msg": error["msg"], "type": error["type"]}
        for error in exc.errors(include_url=False)
    ]


def _unprocessable(errors: list[dict[str, Any]]) -> Response:
    return JSONResponse({"detail": errors}, 422)


async def read_body(request: Request, limit: int) -> bytes:
    """The request's body; 413 past `limit` bytes."""
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > limit:
        raise HTTPException(413, f"request body of {declared} bytes is over the limit of {limit} bytes")
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            raise HTTPException(413, f"request body is over the limit of {limit} bytes")
        chunks.append(chunk)
    return b"".join(chunks)


# pydantic-core's validator and serializer themselves: the models' wrappers cost more than the work here
_validate_event = EvaluationRequest.__pydantic_validator__.validate_json
_result_json = EvaluationResult.__pydantic_serializer__.to_json
_JSON_HEADER = (b"content-type", JSON.encode())


def _result(result: EvaluationResult) -> Response:
    return Response(_result_json(result), media_type=JSON)


class _EvaluateRoute:
    """Pure ASGI middleware answering `POST /api/v1/evaluate` itself; every other request goes on to `app`.

    The same answers as a routed endpoint (413 past the limit, 422 with every field error, the result),
    at a fraction of the per-request CPU: this is the route a producer calls once per agent response.
    Unexpected errors propagate to Starlette's error middleware, which answers 500 as for any route.
    """

    def __init__(self, app: ASGIApp, pipeline: Pipeline, limit: int) -> None:
        self.app = app
        self.pipeline = pipeline
        self.limit = limit

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["path"] != EVALUATE_PATH or scope["method"] != "POST" or scope["root_path"]:
            await self.app(scope, receive, send)
            return
        try:
            body = await self._body(scope, receive)
        except HTTPException as exc:
            await JSONResponse({"detail": exc.detail}, exc.status_code)(scope, receive, send)
            return
        except ClientDisconnect:
            _log_disconnect(EVALUATE_PATH)
            return
        try:
            event: EvaluationRequest = _validate_event(body)
        except ValidationError as exc:
            await _unprocessable(_field_errors(exc, "body"))(scope, receive, send)
            return
        payload = _result_json(await self.pipeline.evaluate(event))
        headers = [(b"content-length", str(len(payload)).encode()), _JSON_HEADER]
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        await send({"type": "http.response.body", "body": payload})

    async def _body(self, scope: Scope, receive: Receive) -> bytes:
        """The body, as `read_body` reads it: 413 past the limit, `ClientDisconnect` on a hang-up."""
        limit = self.limit
        for name, value in scope["headers"]:
            if name == b"content-length":
                if value.isdigit() and int(value) > limit:
                    declared = value.decode()
                    raise HTTPException(413, f"request body of {declared} bytes is over the limit of {limit} bytes")
                break
        chunks: list[bytes] = []
        size = 0
        while True:
            message = await receive()
            if message["type"] != "http.request":  # http.disconnect
                raise ClientDisconnect()
            chunk: bytes = message.get("body", b"")
            size += len(chunk)
            if size > limit:
                raise HTTPException(413, f"request body is over the limit of {limit} bytes")
            chunks.append(chunk)
            if not message.get("more_body", False):
                return chunks[0] if len(chunks) == 1 else b"".join(chunks)


def _log_disconnect(path: str) -> None:
    # The client hung up mid-body: nobody is left to answer and nothing went wrong here.
    logger.debug("client disconnected before sending the whole body of %s", path)


# The routes are closures over the pipeline and options, so their branches count here: split, they would
# need a class around the same state for nothing.
def create_app(  # noqa: C901
    pipeline: Pipeline, options: HttpOptions | None = None, *, otlp: OtlpReceiver | None = None
) -> Starlette:
    """Build the ASGI app serving `pipeline`.

    Args:
        pipeline: Scores the events; closed when the app shuts down.
        options: Token, body and batch limits.
        otlp: Also receive OTLP traces at `POST /v1/traces` (`proctor serve --otlp`).

    Returns:
        The Starlette app (wrapped in the bearer check when a token is set, as `app.state.asgi`).
    """
    options = options or HttpOptions()
    install_log_redaction()  # httpx logs the judge endpoint's URL on every call
    limit = options.max_body_bytes
    batch_adapter: TypeAdapter[list[EvaluationRequest]] = TypeAdapter(list[EvaluationRequest])
    health = json.dumps({"status": "ok", "version": __version__}).encode()

    async def health_route(request: Request) -> Response:
        return Response(health, media_type=JSON)

    async def openapi_route(request: Request) -> Response:
        # on first use: only a client asking for the schema pays for reading it
        from proctor.service._openapi import committed_schema_text

        return Response(committed_schema_text(), media_type=JSON)

    async def evaluate_route(request: Request) -> Response:
        body = await read_body(request, limit)
        try:
            event = EvaluationRequest.model_validate_json(body)
        except ValidationError as exc:
            return _unprocessable(_field_errors(exc, "body"))
        return _result(await pipeline.evaluate(event))

    async def judge_route(request: Request) -> Response:
        name = request.path_params["name"]
        try:
            judge = pipeline.resolve_judge(name)
        except KeyError as exc:
            raise HTTPException(404, str(exc.args[0])) from None
        errors: list[dict[str, Any]] = []
        threshold = 0.7
        raw = request.query_params.get("threshold")
        if raw is not None:
            try:
                threshold = float(raw)
            except ValueError:
                threshold = -1.0
            if not 0 <= threshold <= 1:
                message = f"threshold must be a number in 0..1, got {raw!r}"
                errors.append({"loc": ["query", "threshold"], "msg": message, "type": "value_error"})
        body = await read_body(request, limit)
        try:
            event = EvaluationRequest.model_validate_json(body)
        except ValidationError as exc:
            errors.extend(_field_errors(exc, "body"))
        if errors:
            return _unprocessable(errors)
        return _result(await pipeline.evaluate_judge(event, judge, threshold))

    async def batch_route(request: Request) -> Response:
        body = await read_body(request, limit)
        try:
            events = batch_adapter.validate_json(body)
        except ValidationError as exc:
            return _unprocessable(_field_errors(exc, "body"))
        if len(events) > options.max_batch:
            message = f"a batch holds at most {options.max_batch} events, got {len(events)}"
            return _unprocessable([{"loc": ["body"], "msg": message, "type": "too_long"}])
        results = await evaluate_all(pipeline, events, workers=options.batch_concurrency)
        payload = b"[" + b",".join(r.model_dump_json().encode() for r in results) + b"]"
        return Response(payload, media_type=JSON)

    async def http_error(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, HTTPException)
        return JSONResponse({"detail": exc.detail}, exc.status_code, exc.headers)

    async def client_gone(request: Request, exc: Exception) -> Response:
        _log_disconnect(request.url.path)
        return Response(status_code=400)

    async def server_error(request: Request, exc: Exception) -> Response:
        logger.exception("unexpected error serving %s", request.url.path, exc_info=exc)
        return JSONResponse({"detail": redact(f"internal error: {type(exc).__name__}: {exc}")}, 500)

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        if pipeline.judge is None:
            logger.warning("no judge model configured: events that pass the prechecks get verdict 'error'")
        try:
            yield
        finally:
            await pipeline.aclose()

    app = Starlette(
        routes=[
            Route("/api/v1/health", health_route, methods=["GET"]),
            Route(EVALUATE_PATH, evaluate_route, methods=["POST"]),  # answered by _EvaluateRoute
            Route("/api/v1/evaluate/batch", batch_route, methods=["POST"]),
            Route("/api/v1/evaluate/judge/{name}", judge_route, methods=["POST"]),
            Route("/openapi.json", openapi_route, methods=["GET"]),
            *([Route("/v1/traces", otlp.route, methods=["POST"])] if otlp is not None else []),
        ],
        exception_handlers={HTTPException: http_error, ClientDisconnect: client_gone, Exception: server_error},
        lifespan=lifespan,
    )
    app.add_middleware(_EvaluateRoute, pipeline=pipeline, limit=limit)
    if options.api_token:  # added last, so outermost: the token is checked before the hot route too
        app.add_middleware(_BearerAuth, token=options.api_token)
    return app
