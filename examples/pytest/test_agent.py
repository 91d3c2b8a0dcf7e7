"""An ordinary pytest test that runs a Proctor case against a Python agent (`proctor.testing`).

The `proctor_case` fixture is `proctor.testing.run_case`: it loads a suite file, runs one case (all its
trials) with `agent=` as the target, and returns an outcome whose `assert_passed()` fails with the failing
checks' reasons. Run: pytest examples/pytest/test_agent.py
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from proctor.demo import respond

SUITE = Path(__file__).with_name("directory.yaml")


def polite_agent(messages: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """The demo agent, with a greeting in front of every reply (a wrapper you might be testing)."""
    reply = respond(messages)
    return {**reply, "text": f"Hello! {reply['text']}"}


def test_the_wrapped_agent_still_finds_managers(proctor_case: Callable[..., Any]) -> None:
    """The greeting wrapper keeps the agent's answers (the case's checks) and adds the greeting."""
    outcome = proctor_case(SUITE, "manager", agent=polite_agent)
    outcome.assert_passed()
    assert outcome.data["trials"][0]["turns"][1]["content"].startswith("Hello!")
