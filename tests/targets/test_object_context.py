"""Fetching the agent's object context after a conversation: the http request spec and the python hook."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from proctor.errors import TargetError, TargetProtocolError
from proctor.suite import HttpTargetSpec, PythonTargetSpec
from proctor.targets import HttpTarget, PythonTarget, SessionContext

pytestmark = pytest.mark.anyio

CONTEXT = SessionContext(case="c", trial=1, variables={"graph_name": "g-1"})


async def _reply(request: Request) -> JSONResponse:
    return JSONResponse({"reply": "ok"})


async def _context(request: Request) -> JSONResponse:
    return JSONResponse({"data": {"session": request.path_params["sid"], "graph": request.query_params.get("g")}})


@pytest.fixture
def server() -> Iterator[str]:
    from servers._serve import serve_app

    app = Starlette(routes=[Route("/chat", _reply, methods=["POST"]), Route("/ctx/{sid}", _context)])
    with serve_app(app) as base_url:
        yield base_url


async def test_http_object_context_request_and_path(server: str) -> None:
    spec = HttpTargetSpec(
        request={"url": f"{server}/chat", "body": {"m": "{{ message }}"}},  # type: ignore[arg-type]
        object_context={"url": server + "/ctx/{{ session_id }}?g={{ graph_name }}", "path": "$.data"},  # type: ignore[arg-type]
    )
    target = HttpTarget(spec)
    session = await target.open_session(CONTEXT)
    await session.send("hi")
    assert await session.object_context() == {"session": session.session_id, "graph": "g-1"}
    missing = HttpTarget(
        spec.model_copy(update={"object_context": spec.object_context.model_copy(update={"path": "$.nope"})})
    )  # type: ignore[union-attr]
    with pytest.raises(TargetProtocolError, match=r"object context reply from .* has nothing at \$\.nope"):
        await (await missing.open_session(CONTEXT)).object_context()
    without = HttpTarget(HttpTargetSpec(request={"url": f"{server}/chat"}))  # type: ignore[arg-type]
    assert await (await without.open_session(CONTEXT)).object_context() is None
    for each in (target, missing, without):
        await each.aclose()


def sync_context(messages: list[dict[str, str]], context: SessionContext) -> dict[str, Any]:
    return {"turns": len(messages), "graph": context.variables["graph_name"]}


async def async_context(messages: list[dict[str, str]]) -> list[str]:
    return [m["content"] for m in messages]


def broken_context(messages: list[dict[str, str]]) -> None:
    raise RuntimeError("no context today")


def reply(messages: list[dict[str, str]]) -> str:
    return "ok"


async def test_python_object_context_hook() -> None:
    module = __name__
    for hook, expected in (
        (f"{module}:sync_context", {"turns": 2, "graph": "g-1"}),
        (f"{module}:async_context", ["hi", "ok"]),
    ):
        target = PythonTarget(PythonTargetSpec(callable=f"{module}:reply", object_context=hook))
        session = await target.open_session(CONTEXT)
        await session.send("hi")
        assert await session.object_context() == expected
    broken = PythonTarget(PythonTargetSpec(callable=f"{module}:reply", object_context=f"{module}:broken_context"))
    with pytest.raises(TargetError, match="broken_context raised RuntimeError: no context today"):
        await (await broken.open_session(CONTEXT)).object_context()
    plain = PythonTarget(PythonTargetSpec(callable=f"{module}:reply"))
    assert await (await plain.open_session(CONTEXT)).object_context() is None
