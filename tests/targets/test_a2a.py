"""The `a2a` target against an agent built with the official A2A SDK (`a2a-sdk`), on loopback."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from proctor.checks import registry
from proctor.errors import TargetError
from proctor.run import RunOptions, run_sync
from proctor.suite import A2ATargetSpec, load_suites
from proctor.targets import SessionContext, build_target
from servers import a2a_agent
from servers._serve import serve_built


@pytest.fixture(scope="module", params=[True, False], ids=["streaming", "blocking"])
def agent_url(request: pytest.FixtureRequest) -> Iterator[str]:
    with serve_built(lambda base: a2a_agent.build_app(base, streaming=request.param)[0]) as url:
        yield url


@pytest.mark.anyio
async def test_turns_share_a_context_and_tool_parts_become_calls(agent_url: str) -> None:
    target = build_target(A2ATargetSpec(url=agent_url))  # type: ignore[arg-type]
    session = await target.open_session(SessionContext(case="c", trial=1))
    first = await session.send("My name is Alice.")
    assert first.text == "Nice to meet you."
    (call,) = first.tool_calls
    assert (call.name, call.arguments, call.result) == ("remember", {"name": "Alice"}, {"ok": True})
    second = await session.send("What is my name?")
    assert second.text == "Your name is Alice." and [c.name for c in second.tool_calls] == ["recall"]
    assert second.latency_ms > 0 and second.raw  # the task's updates, as received
    other = await target.open_session(SessionContext(case="c", trial=2))
    assert (await other.send("What is my name?")).text == "I don't know your name."  # a context per trial
    with pytest.raises(TargetError, match="the agent's task failed: I cannot do that"):
        await session.send("fail")
    assert target.card is not None and target.card["name"] == "Memory agent"
    await session.aclose()
    await other.aclose()
    await target.aclose()


@pytest.mark.anyio
async def test_an_unreachable_agent_is_a_target_error(tmp_path: Path) -> None:
    target = build_target({"type": "a2a", "url": "http://127.0.0.1:9/"})
    with pytest.raises(TargetError, match="cannot read the agent card"):
        await target.open_session(SessionContext(case="c", trial=1))
    await target.aclose()


def run(tmp_path: Path, text: str) -> dict[str, Any]:
    path = tmp_path / "suite.yaml"
    path.write_text(text, encoding="utf-8")
    return run_sync(load_suites([path], registry), RunOptions(write_results=False)).data


def test_an_a2a_agent_runs_a_suite(tmp_path: Path, agent_url: str) -> None:
    data = run(
        tmp_path,
        f"""\
name: memory
target: "a2a:{agent_url}"
trials: 2
turns:
  - content: "My name is Alice."
    assert: [{{type: contains, value: meet}}]
  - content: "What is my name?"
    assert: [{{type: contains, value: Alice}}]
assert:
  - {{type: tool-sequence, value: [remember, recall]}}
""",
    )
    case = data["cases"][0]
    assert case["status"] == "passed", case["trials"][0]
    assert case["trials"][0]["turns"][1]["tool_calls"][0] == {
        "name": "remember", "arguments": {"name": "Alice"}, "result": {"ok": True},
    }  # fmt: skip
