"""The demo server over real HTTP: OpenAI-compatible, REST sessions and the Lobu gateway protocol."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from typing import Any

import anyio
import httpx
import pytest
from demo_helpers import CASES, RunningServer

from proctor.demo import respond
from proctor.suite import Case


@pytest.fixture
def client(demo_url: str) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=demo_url, timeout=5) as c:
        yield c


def user(text: str) -> dict[str, str]:
    return {"role": "user", "content": text}


def test_health_and_models(client: httpx.Client) -> None:
    assert client.get("/health").json()["status"] == "ok"
    models = client.get("/v1/models").json()
    assert models["object"] == "list"
    assert [m["id"] for m in models["data"]] == ["hr-assistant"]


# OpenAI-compatible.


def chat(client: httpx.Client, messages: list[dict[str, Any]], **extra: Any) -> httpx.Response:
    return client.post("/v1/chat/completions", json={"model": "hr-assistant", "messages": messages, **extra})


def test_chat_completion_shape(client: httpx.Client) -> None:
    body = chat(client, [{"role": "system", "content": "Be brief."}, user("Who manages Carol?")]).json()
    assert body["object"] == "chat.completion"
    assert body["model"] == "hr-assistant"
    (choice,) = body["choices"]
    assert choice["finish_reason"] == "stop"
    message = choice["message"]
    assert message["role"] == "assistant"
    assert message["content"].startswith("Carol Diaz's manager is Frank Okafor")
    assert [c["function"]["name"] for c in message["tool_calls"]] == ["lookup_user", "lookup_user"]
    first = message["tool_calls"][0]
    assert first["type"] == "function" and first["id"] == "call_1_1"
    assert json.loads(first["function"]["arguments"]) == {"name": "Carol"}
    usage = body["usage"]
    assert usage["total_tokens"] == usage["prompt_tokens"] + usage["completion_tokens"] > 0


def test_chat_completion_without_tool_calls_omits_them(client: httpx.Client) -> None:
    message = chat(client, [user("Thanks!")]).json()["choices"][0]["message"]
    assert message == {"role": "assistant", "content": "You're welcome!"}


def test_chat_completion_is_stateless_and_uses_history(client: httpx.Client) -> None:
    first = chat(client, [user("My name is Alice")]).json()["choices"][0]["message"]["content"]
    history = [user("My name is Alice"), {"role": "assistant", "content": first}, user("What's my email?")]
    assert chat(client, history).json()["choices"][0]["message"]["content"] == (
        "Your email is alice.chen@acme.example."
    )
    alone = chat(client, [user("What's my email?")]).json()["choices"][0]["message"]["content"]
    assert "don't know who you are" in alone


def test_chat_completion_stream(client: httpx.Client) -> None:
    messages = [user("Who is out next week?")]
    plain = chat(client, messages).json()
    payload = {"model": "hr-assistant", "messages": messages, "stream": True}
    payload["stream_options"] = {"include_usage": True}
    with client.stream("POST", "/v1/chat/completions", json=payload) as response:
        assert response.headers["content-type"].startswith("text/event-stream")
        lines = [line.removeprefix("data: ") for line in response.iter_lines() if line.startswith("data: ")]
    assert lines[-1] == "[DONE]"
    chunks = [json.loads(line) for line in lines[:-1]]
    text = "".join(c["choices"][0]["delta"].get("content") or "" for c in chunks if c["choices"])
    assert text == plain["choices"][0]["message"]["content"]
    assert len([c for c in chunks if c["choices"] and c["choices"][0]["delta"].get("content")]) > 1
    calls = [c for c in chunks if c["choices"] and "tool_calls" in c["choices"][0]["delta"]]
    assert calls[0]["choices"][0]["delta"]["tool_calls"][0]["function"]["name"] == "get_time_off"
    assert chunks[-1]["usage"] == plain["usage"]


@pytest.mark.parametrize(
    ("content", "error"),
    [
        (b"not json", "JSON object"),
        (b"[1, 2]", "JSON object"),
        (b'{"model": "hr-assistant"}', "'messages'"),
        (b'{"messages": [{"role": "system", "content": "x"}]}', "user message"),
    ],
)
def test_chat_completion_errors(client: httpx.Client, content: bytes, error: str) -> None:
    response = client.post("/v1/chat/completions", content=content)
    assert response.status_code == 400
    assert error in response.json()["error"]["message"]


# REST with sessions.


def open_session(client: httpx.Client, **body: Any) -> str:
    response = client.post("/api/sessions", json=body)
    assert response.status_code == 201
    return str(response.json()["session_id"])


def test_rest_session_round_trip(client: httpx.Client) -> None:
    session = open_session(client, user="proctor")
    url = f"/api/sessions/{session}/messages"
    intro = client.post(url, json={"message": "My name is Alice", "user": "proctor"}).json()
    assert intro["reply"].startswith("Nice to meet you, Alice Chen!")
    assert intro["tool_calls"][0]["name"] == "lookup_user"
    assert intro["tool_calls"][0]["arguments"] == {"name": "Alice"}
    assert intro["tool_calls"][0]["result"]["id"] == "u1"
    assert intro["usage"]["input_tokens"] > 0 and intro["usage"]["output_tokens"] > 0
    email = client.post(url, json={"message": "What's my email?"}).json()
    assert email["reply"] == "Your email is alice.chen@acme.example."
    assert email["tool_calls"] == []
    assert len(email["trace_id"]) == 32 and email["trace_id"] != intro["trace_id"]
    history = client.get(f"/api/sessions/{session}").json()["messages"]
    assert [m["role"] for m in history] == ["user", "assistant", "user", "assistant"]
    assert client.delete(f"/api/sessions/{session}").json() == {"deleted": True, "session_id": session}
    gone = client.post(url, json={"message": "hi"})
    assert gone.status_code == 404 and "unknown session" in gone.json()["error"]


def test_rest_sessions_are_isolated(client: httpx.Client) -> None:
    first, second = open_session(client), open_session(client)
    client.post(f"/api/sessions/{first}/messages", json={"message": "Remind me to call Bob on Friday"})
    listed = client.post(f"/api/sessions/{second}/messages", json={"message": "What are my reminders?"})
    assert listed.json()["reply"] == "You have no reminders yet."


def test_rest_user_identifies_the_speaker(client: httpx.Client) -> None:
    session = open_session(client, user="u4")
    reply = client.post(f"/api/sessions/{session}/messages", json={"message": "Who is my manager?"}).json()
    assert reply["reply"].startswith("Your manager is Frank Okafor")


def test_rest_errors(client: httpx.Client) -> None:
    assert client.get("/api/sessions/nope").status_code == 404
    assert client.delete("/api/sessions/nope").status_code == 404
    assert client.post("/api/sessions/nope/messages", json={"message": "hi"}).status_code == 404
    assert client.post("/api/sessions", content=b"[]").status_code == 400
    session = open_session(client)
    bad = client.post(f"/api/sessions/{session}/messages", json={"text": "hi"})
    assert bad.status_code == 400 and "'message'" in bad.json()["error"]


# Lobu gateway protocol.


def lobu_session(client: httpx.Client, prefix: str = "", **body: Any) -> dict[str, Any]:
    response = client.post(f"{prefix}/api/v1/agents", json={"forceNew": True, "dryRun": True, **body})
    assert response.status_code == 201
    return dict(response.json())


def read_events(client: httpx.Client, key: str, prefix: str = "", until: str | None = None) -> list[tuple[str, Any]]:
    """Read the SSE stream like the Lobu CLI, until `complete` for message `until` (or `closed`)."""
    events: list[tuple[str, Any]] = []
    with client.stream("GET", f"{prefix}/api/v1/agents/{key}/events") as response:
        assert response.status_code == 200
        name = None
        for line in response.iter_lines():
            if line.startswith("event: "):
                name = line.removeprefix("event: ")
            elif line.startswith("data: "):
                data = json.loads(line.removeprefix("data: "))
                events.append((name, data))
                if name == "closed" or (name == "complete" and data["messageId"] == until):
                    break
    return events


def lobu_say(client: httpx.Client, key: str, content: str, prefix: str = "") -> dict[str, Any]:
    """Post a message and collect its reply as `lobu eval` does: text, usage and (extension) tool calls."""
    posted = client.post(f"{prefix}/api/v1/agents/{key}/messages", json={"content": content})
    assert posted.status_code == 200
    message_id = posted.json()["messageId"]
    events = read_events(client, key, prefix, until=message_id)
    mine = [(n, d) for n, d in events if isinstance(d, dict) and d.get("messageId") == message_id]
    text = "".join(d["content"] for n, d in mine if n == "output")
    complete = next(d for n, d in mine if n == "complete")
    return {"text": text, "events": events, "complete": complete, "post": posted.json()}


def test_lobu_create_session(client: httpx.Client) -> None:
    created = lobu_session(client, agentId="hr-assistant")
    assert created["success"] is True
    assert created["agentId"].startswith("hr-assistant_hr-assistant_")
    assert created["token"] and created["expiresAt"] > time.time() * 1000
    assert created["sseUrl"] == f"/api/v1/agents/{created['agentId']}/events"
    assert created["messagesUrl"] == f"/api/v1/agents/{created['agentId']}/messages"
    assert lobu_session(client)["agentId"] != lobu_session(client)["agentId"]  # forceNew: never shared
    threaded = lobu_session(client, agentId="hr-assistant", thread="eval-1")
    assert threaded["agentId"] == "hr-assistant_hr-assistant_eval-1"


def test_lobu_conversation(client: httpx.Client) -> None:
    key = lobu_session(client, agentId="hr-assistant")["agentId"]
    first = lobu_say(client, key, "Who is Carol?")
    assert first["post"]["queued"] is True
    trace = first["post"]["traceparent"].split("-")
    assert trace[0] == "00" and len(trace[1]) == 32
    names = [n for n, _ in first["events"]]
    assert names[0] == "connected"
    assert names.count("output") > 1  # streamed in pieces
    assert first["text"] == respond([user("Who is Carol?")])["text"]
    usage = first["complete"]["usage"]
    assert usage["input_tokens"] > 0 and usage["output_tokens"] > 0
    assert first["complete"]["processedMessageIds"] == [first["complete"]["messageId"]]
    assert first["complete"]["tool_calls"][0]["arguments"] == {"name": "Carol"}
    second = lobu_say(client, key, "What's her email?")
    assert second["text"] == "Carol Diaz's email is carol.diaz@acme.example."
    replayed = {d.get("messageId") for n, d in second["events"] if n == "output"}
    assert first["complete"]["messageId"] in replayed  # the backlog is replayed; clients filter by id
    deleted = client.delete(f"/api/v1/agents/{key}")
    assert deleted.json() == {"success": True, "message": "Agent deleted", "agentId": key}
    assert client.post(f"/api/v1/agents/{key}/messages", json={"content": "hi"}).status_code == 404


def test_lobu_under_the_lobu_prefix(client: httpx.Client) -> None:
    created = lobu_session(client, prefix="/lobu")
    assert created["sseUrl"].startswith("/lobu/api/v1/agents/")
    reply = lobu_say(client, created["agentId"], "Who is Bob?", prefix="/lobu")
    assert reply["text"].startswith("Bob Smith (u2)")


def test_lobu_message_alias_and_errors(client: httpx.Client) -> None:
    key = lobu_session(client)["agentId"]
    assert client.post(f"/api/v1/agents/{key}/messages", json={"message": "Hello"}).status_code == 200
    assert client.post(f"/api/v1/agents/{key}/messages", json={}).status_code == 400
    assert client.post("/api/v1/agents", content=b"nope").status_code == 400
    assert client.get("/api/v1/agents/missing/events").status_code == 404
    assert client.delete("/api/v1/agents/missing").status_code == 404
    assert client.post("/api/v1/agents/missing/messages", json={"content": "x"}).status_code == 404


def test_lobu_delete_closes_open_streams(client: httpx.Client, demo_url: str) -> None:
    key = lobu_session(client)["agentId"]
    with httpx.Client(base_url=demo_url, timeout=5) as other:
        result: list[list[tuple[str, Any]]] = []

        def listen() -> None:
            result.append(read_events(other, key))

        thread = threading.Thread(target=listen)
        thread.start()
        time.sleep(0.2)
        client.post(f"/api/v1/agents/{key}/messages", json={"content": "Who is Ivy?"})  # arrives live
        time.sleep(0.2)
        client.delete(f"/api/v1/agents/{key}")
        thread.join(timeout=5)
    names = [n for n, _ in result[0]]
    assert names[0] == "connected" and names[-1] == "closed" and "complete" in names
    assert result[0][-1][1] == {"reason": "agent_deleted"}


@pytest.mark.anyio
async def test_lobu_concurrent_sessions_do_not_mix(demo_url: str) -> None:
    async with httpx.AsyncClient(base_url=demo_url, timeout=5) as client:
        replies: dict[str, str] = {}

        async def trial(name: str) -> None:
            created = await client.post("/api/v1/agents", json={"agentId": "hr-assistant", "forceNew": True})
            key = created.json()["agentId"]
            await client.post(f"/api/v1/agents/{key}/messages", json={"content": f"My name is {name}"})
            posted = await client.post(f"/api/v1/agents/{key}/messages", json={"content": "What's my email?"})
            message_id = posted.json()["messageId"]
            text, event = "", None
            async with client.stream("GET", f"/api/v1/agents/{key}/events") as response:
                async for line in response.aiter_lines():
                    if line.startswith("event: "):
                        event = line[7:]
                    elif line.startswith("data: "):
                        data = json.loads(line[6:])
                        if data.get("messageId") != message_id:
                            continue
                        if event == "output":
                            text += data["content"]
                        elif event == "complete":
                            break
            replies[name] = text
            await client.delete(f"/api/v1/agents/{key}")

        async with anyio.create_task_group() as group:
            for name in ("Alice", "Bob", "Carol", "Dave"):
                group.start_soon(trial, name)
    assert replies == {
        n: f"Your email is {n.lower()}.{s}@acme.example."
        for n, s in [("Alice", "chen"), ("Bob", "smith"), ("Carol", "diaz"), ("Dave", "kim")]
    }


# Every example conversation gets the same replies over every protocol.


def replies_over(client: httpx.Client, protocol: str, case: Case) -> list[str]:
    texts: list[str] = []
    history: list[dict[str, str]] = []
    session = open_session(client) if protocol == "rest" else None
    key = lobu_session(client, agentId="hr-assistant")["agentId"] if protocol == "lobu" else None
    for turn in case.turns:
        history.append(user(turn.content))
        if protocol == "python":
            text = respond(history)["text"]
        elif protocol == "openai":
            text = chat(client, history).json()["choices"][0]["message"]["content"]
        elif protocol == "rest":
            reply = client.post(f"/api/sessions/{session}/messages", json={"message": turn.content})
            text = reply.json()["reply"]
        else:
            assert key is not None
            text = lobu_say(client, key, turn.content)["text"]
        history.append({"role": "assistant", "content": text})
        texts.append(text)
    return texts


@pytest.mark.parametrize("case", CASES, ids=[f"{c.suite}/{c.name}" for c in CASES])
def test_examples_get_the_same_replies_over_every_protocol(client: httpx.Client, case: Case) -> None:
    expected = replies_over(client, "python", case)
    for protocol in ("openai", "rest", "lobu"):
        assert replies_over(client, protocol, case) == expected, protocol


# Server options and the command line.


def test_latency_option() -> None:
    with RunningServer(latency_ms=150) as server, httpx.Client(base_url=server.url, timeout=5) as client:
        start = time.perf_counter()
        assert chat(client, [user("Who is Alice?")]).status_code == 200
        assert time.perf_counter() - start >= 0.15
        assert server.app.state.demo.latency_ms == 150


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_serve_command() -> None:
    port = free_port()
    command = [sys.executable, "-m", "proctor.demo", "serve", "--port", str(port), "--latency-ms", "0"]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 15
        while True:
            try:
                assert httpx.get(f"http://127.0.0.1:{port}/health", timeout=1).json() == {
                    "status": "ok",
                    "agent": "hr-assistant",
                }
                break
            except httpx.TransportError:
                assert process.poll() is None, process.communicate()[1]
                assert time.monotonic() < deadline, "the server did not start"
                time.sleep(0.05)
    finally:
        process.terminate()
        _, err = process.communicate(timeout=10)
    assert f"http://127.0.0.1:{port}/v1" in err
