"""Simulated tools: a model plays the tool from its description, its input schema and the conversation."""

from __future__ import annotations

import json
from typing import Any

from proctor.errors import ProctorError
from proctor.models import GenerateConfig, Model
from proctor.suite._tools import ToolSimulateSpec
from proctor.tools._answer import ToolAnswer

__all__ = ["SimulatedTool"]

_SYSTEM = """You play a software tool called {name} that an AI assistant is calling. Answer exactly as the
real tool would: only the tool's result, plausible and consistent with the conversation and with your
earlier answers, as compact JSON when the result is structured, else as plain text. Never address the
user, never explain that you are simulating.

What the tool does: {description}
Its input schema: {schema}
{instructions}"""


class SimulatedTool:
    """Answers calls to one tool with a model (temperature 0; the run's cache applies)."""

    kind = "simulate"

    def __init__(self, name: str, definition: dict[str, Any], spec: ToolSimulateSpec, model: Model) -> None:
        """Keep what the model is told about the tool."""
        self.name = name
        self.model = model
        self.system = _SYSTEM.format(
            name=name,
            description=definition.get("description") or "(no description)",
            schema=json.dumps(definition.get("inputSchema") or {}, ensure_ascii=False),
            instructions=f"How it behaves: {spec.instructions}" if spec.instructions else "",
        )

    async def answer(
        self, arguments: dict[str, Any], conversation: list[dict[str, str]], earlier: list[dict[str, Any]]
    ) -> ToolAnswer:
        """Ask the model for the result of this call, given the conversation and the tool's earlier calls."""
        history = "\n".join(f"{m['role']}: {m['content']}" for m in conversation[-20:]) or "(nothing yet)"
        calls = "\n".join(json.dumps(c, ensure_ascii=False, default=str) for c in earlier[-20:]) or "(none)"
        prompt = (
            f"The conversation so far:\n{history}\n\nYour earlier calls and answers:\n{calls}\n\n"
            f"Now answer this call: {json.dumps(arguments, ensure_ascii=False)}"
        )
        messages = [{"role": "system", "content": self.system}, {"role": "user", "content": prompt}]
        try:
            response = await self.model.generate(messages, GenerateConfig(temperature=0.0), role="tool")
        except ProctorError as exc:
            return ToolAnswer.error(f"the simulated {self.name} failed: {exc}")
        text = response.text.strip()
        try:
            return ToolAnswer.of(json.loads(text))
        except ValueError:
            return ToolAnswer.of(text)
