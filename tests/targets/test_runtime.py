"""A watsonx dataset's `runtime_context` and `file_upload` reach the agent through every target kind.

The datasets are IBM's (`tests/suite/seeds/watsonx_adk`, MIT).
"""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Any

import pytest

from proctor.checks import registry
from proctor.suite import HttpTargetSpec, OpenAITargetSpec, PythonTargetSpec, load_suites
from proctor.targets import HttpTarget, OpenAITarget, PythonTarget, SessionContext
from proctor.targets._runtime import trial_variables
from servers._serve import FAST_RETRY
from servers.chat import ChatServer
from servers.rest import RestServer

pytestmark = pytest.mark.anyio

TREE = Path(__file__).parents[1] / "suite" / "seeds" / "watsonx_adk"
IMAGE = TREE / "evaluate_with_file_upload" / "sample-id.jpg"


def variables(folder: str) -> dict[str, Any]:
    [suite] = load_suites([TREE / folder], registry)
    return trial_variables(suite.cases[0])


def context_of(extra: dict[str, Any]) -> SessionContext:
    return SessionContext(case="c", trial=1, timeout=5, variables=extra)


async def talk(target: Any, context: SessionContext, *messages: str) -> list[str]:
    session = await target.open_session(context)
    try:
        return [(await session.send(message)).text for message in messages]
    finally:
        await session.aclose()
        await target.aclose()


def test_variables_from_ibms_datasets() -> None:
    assert variables("evaluate_with_context_variable") == {"runtime_context": {"sap_username": "nwaters"}}
    upload = variables("evaluate_with_file_upload")["file_upload"]
    assert base64.b64decode(upload["data_base64"]) == IMAGE.read_bytes()
    [suite, *_] = load_suites([TREE / "evaluate"], registry)
    assert trial_variables(suite.cases[0]) == {}


async def test_openai_target_sends_context_every_turn_and_the_file_first(chat_server: ChatServer) -> None:
    base = chat_server.script({}, {})
    extra = {**variables("evaluate_with_context_variable"), **variables("evaluate_with_file_upload")}
    target = OpenAITarget(OpenAITargetSpec.model_validate({"base_url": base}), retry=FAST_RETRY)
    await talk(target, context_of(extra), "i want to know my time off schedule", "ok")
    first, second = (r.body for r in chat_server.requests[ChatServer.token_of(base)])
    assert first["context"] == second["context"] == {"sap_username": "nwaters"}
    text, image = first["messages"][-1]["content"]
    assert text == {"type": "text", "text": "i want to know my time off schedule"}
    url = image["image_url"]["url"]
    assert url.startswith("data:image/jpeg;base64,")
    assert base64.b64decode(url.split(",", 1)[1]) == IMAGE.read_bytes()
    assert second["messages"][-1] == {"role": "user", "content": "ok"}  # the file goes once


async def test_http_target_templates_see_the_variables(rest_server: RestServer) -> None:
    spec = {
        "request": {
            "url": rest_server.base_url + "/sessions/{{ session_id }}/messages",
            "body": {"text": "{{ message }}", "context": "{{ runtime_context }}"},
        },
        "reply_path": "$.output.text",
        "session": {
            "open": {"url": rest_server.base_url + "/sessions", "headers": {"X-Api-Key": "k-123"}, "body": {}},
            "id_path": "$.data.session.id",
        },
    }
    target = HttpTarget(HttpTargetSpec.model_validate(spec), retry=FAST_RETRY)
    context = context_of(variables("evaluate_with_context_variable"))
    session = await target.open_session(context)
    sid = session.session_id  # type: ignore[attr-defined]
    await session.send("hi")
    await session.aclose()
    await target.aclose()
    assert rest_server.messages[sid][0] == {"text": "hi", "context": {"sap_username": "nwaters"}}


async def test_python_target_gets_them_in_its_context() -> None:
    extra = {**variables("evaluate_with_context_variable"), **variables("evaluate_with_file_upload")}
    target = PythonTarget(PythonTargetSpec(callable="servers.pyagents:runtime_context"))
    assert await talk(target, context_of(extra), "hi") == ["user=nwaters file=001"]
