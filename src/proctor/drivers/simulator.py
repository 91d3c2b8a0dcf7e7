"""The simulated user: an LLM playing the user from a persona or a user story.

It opens with a greeting picked at random (seeded), or with the story's `starting_sentence`; then, turn
by turn, the simulator model writes the user's next message from its prompt (a Jinja template the suite
may override, see `drivers/prompts/simulator.j2`) and the conversation so far. The conversation stops
when a user message contains the persona's sign-off (case-insensitive; that message is not sent to the
agent) or when `max_turns` messages have been exchanged (then it is marked aborted).

Arm `withheld` renders the prompt without the facts (the simulator is told it knows nothing more and
must say so); arm `supplied` renders them, to be revealed only when asked. `simulator_checks` then
looks at the simulator's own messages for faults that are not the agent's: a withheld fact leaked, a
fact volunteered before it was asked for, a stop before any task was attempted, a farewell without the
sign-off, an empty message.
"""

from __future__ import annotations

import random
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import anyio

from proctor.errors import ProctorError, TargetTimeout
from proctor.transcript import Message, Usage

if TYPE_CHECKING:
    import jinja2

    from proctor.models import Model
    from proctor.suite import Arm, SimulateSpec
    from proctor.targets import Session

__all__ = ["NO_SIMULATOR_HINT", "PROMPT", "Conversation", "Simulator", "fact_mentioned", "simulator_checks"]

PROMPT = "simulator.j2"
"""The built-in prompt template, in `proctor/drivers/prompts/`."""
NO_SIMULATOR_HINT = (
    "no simulator model configured (no bundled model can play a user): pass --simulator provider/model "
    "(e.g. --simulator openai/gpt-4.1-mini), set PROCTOR_SIMULATOR_MODEL, add 'simulator:' to the suite, "
    "or configure a judge model (--judge / PROCTOR_JUDGE_MODEL / 'judge:'), which then also plays the user"
)
_KICKOFF = "(The conversation starts now. Write your first message to the assistant.)"
_FAREWELL = re.compile(r"\b(good ?bye|bye|farewell|that'?s all)\b", re.IGNORECASE)
_TOKEN = re.compile(r"[\w'/@:.+-]+")
_STOP = frozenset(
    [
        "the",
        "a",
        "an",
        "and",
        "or",
        "but",
        "of",
        "to",
        "in",
        "on",
        "at",
        "for",
        "with",
        "from",
        "by",
        "is",
        "are",
        "was",
        "were",
        "be",
        "been",
        "am",
        "user",
        "user's",
        "users",
        "their",
        "there",
        "this",
        "that",
        "these",
        "those",
        "has",
        "have",
        "had",
        "prefers",
        "prefer",
        "likes",
        "like",
        "wants",
        "want",
    ]
)

Stop = Literal["signoff", "max_turns", "error", "simulator_error"]


@dataclass(slots=True)
class Conversation:
    """One arm's simulated conversation."""

    arm: str
    """`withheld` or `supplied`."""
    messages: list[Message] = field(default_factory=list)
    """User and agent messages in order (the sign-off message last, when there was one)."""
    stop: Stop = "max_turns"
    """Why it ended: the sign-off, `max_turns` (aborted), an agent `error`, or a `simulator_error`."""
    error: str | None = None
    """The agent's or the simulator model's error, when there was one."""
    error_type: str | None = None
    """The error's class name."""
    retries: int = 0
    """Agent calls re-sent after retryable failures (each a failed attempt)."""
    usage: Usage = field(default_factory=Usage)
    """The agent's tokens."""
    simulator_usage: Usage = field(default_factory=Usage)
    """The simulator model's tokens."""
    simulator_calls: int = 0
    """Simulator model calls made."""
    trace_ids: list[str] = field(default_factory=list)
    """Trace ids the agent returned."""
    opener: str = ""
    """The first user message (a greeting or the starting sentence)."""
    seed: int = 0
    """The seed the greeting and the simulator's sampling used."""
    first_simulated: int = 1
    """Index of the first message the simulator wrote (after the opener or the scripted turns)."""

    @property
    def aborted(self) -> bool:
        """Whether the conversation hit `max_turns` without the sign-off."""
        return self.stop == "max_turns"


class Simulator:
    """A model playing the user.

    Args:
        model: The simulator model (never the agent under test unless the user named it).
        prompt: A Jinja template replacing the built-in one (`persona`, `tasks`, `facts` (`None` in
            arm `withheld`), `story`, `signoff`, `arm` are its variables).
    """

    def __init__(self, model: Model, prompt: str | None = None) -> None:
        import jinja2.sandbox  # on first use

        self.model = model
        env = jinja2.sandbox.SandboxedEnvironment(  # a suite's own prompt is data: no attribute walk to os
            loader=jinja2.FileSystemLoader(Path(__file__).parent / "prompts"),
            undefined=jinja2.StrictUndefined,
            autoescape=False,
            trim_blocks=True,
            lstrip_blocks=True,
        )
        self._template: jinja2.Template = env.from_string(prompt) if prompt else env.get_template(PROMPT)

    @property
    def name(self) -> str:
        """The simulator model's name."""
        return self.model.name

    def system_prompt(self, spec: SimulateSpec, arm: Arm) -> str:
        """The simulator's instructions for `arm` (the facts only in arm `supplied`)."""
        return self._template.render(
            persona=spec.persona,
            tasks=spec.tasks,
            facts=list(spec.facts) if arm == "supplied" else None,
            story=spec.story,
            signoff=spec.persona.signoff,
            arm=arm,
        ).strip()

    async def next_message(self, spec: SimulateSpec, arm: Arm, messages: list[Message], seed: int) -> tuple[str, Any]:
        """Ask the simulator model for the user's next message, given the conversation so far.

        Returns:
            The message text and the model's response (for accounting).

        Raises:
            proctor.errors.ModelError: The simulator model could not answer.
        """
        from proctor.models import GenerateConfig

        chat: list[dict[str, str]] = [
            {"role": "system", "content": self.system_prompt(spec, arm)},
            {"role": "user", "content": _KICKOFF},
        ]
        # the simulator plays the user: its own messages are the "assistant" side of its chat
        chat.extend({"role": "assistant" if m.role == "user" else "user", "content": m.content} for m in messages)
        # providers take 32-bit seeds; the trial's seed may be larger
        config = GenerateConfig(temperature=spec.persona.temperature, seed=seed % 2**31)
        response = await self.model.generate(chat, config, role="simulator")
        return response.text.strip(), response

    async def converse(
        self,
        session: Session,
        spec: SimulateSpec,
        arm: Arm,
        *,
        seed: int,
        reply_timeout: float,
        prefix: Sequence[Message] = (),
    ) -> Conversation:
        """Play one arm's conversation on `session` (the caller opens and closes it).

        Args:
            session: A fresh agent session.
            spec: The case's `simulate:` block.
            arm: `withheld` or `supplied`.
            seed: Picks the greeting and seeds the simulator's sampling.
            reply_timeout: Seconds the agent may take per reply.
            prefix: Scripted turns already exchanged; the simulator then speaks first (no greeting).

        Never raises for agent or simulator problems: they end the conversation with `stop` set to
        `error` or `simulator_error` and the reason in `error`.
        """
        from proctor.errors import ModelError

        rng = random.Random(seed)
        opener = spec.starting_sentence or rng.choice(spec.greetings)
        conversation = Conversation(
            arm=arm, messages=list(prefix), opener=opener, seed=seed, first_simulated=len(prefix) if prefix else 1
        )
        signoff = spec.persona.signoff.lower()
        text = opener
        if prefix:
            try:
                text, response = await self.next_message(spec, arm, conversation.messages, seed)
            except ModelError as exc:
                conversation.stop = "simulator_error"
                conversation.error = f"the simulator model failed: {exc}"
                conversation.error_type = type(exc).__name__
                return conversation
            conversation.simulator_calls += 1
            conversation.simulator_usage = conversation.simulator_usage + response.usage
        while True:
            conversation.messages.append(Message("user", text))
            if signoff in text.lower():
                conversation.stop = "signoff"
                return conversation
            if len(conversation.messages) >= spec.max_turns:
                conversation.stop = "max_turns"
                return conversation
            try:
                try:
                    with anyio.fail_after(reply_timeout):
                        reply = await session.send(text)
                except TimeoutError:
                    raise TargetTimeout(f"no reply within {reply_timeout:g} s") from None
            except ProctorError as exc:
                conversation.stop = "error"
                conversation.error = f"turn {len(conversation.messages) // 2 + 1}: {exc}"
                conversation.error_type = type(exc).__name__
                return conversation
            conversation.retries += reply.retries
            if reply.usage is not None:
                conversation.usage = conversation.usage + reply.usage
            if reply.trace_id:
                conversation.trace_ids.append(reply.trace_id)
            conversation.messages.append(Message("assistant", reply.text, reply.tool_calls, reply.latency_ms))
            if len(conversation.messages) >= spec.max_turns:
                conversation.stop = "max_turns"
                return conversation
            try:
                text, response = await self.next_message(spec, arm, conversation.messages, seed)
            except ModelError as exc:
                conversation.stop = "simulator_error"
                conversation.error = f"the simulator model failed: {exc}"
                conversation.error_type = type(exc).__name__
                return conversation
            conversation.simulator_calls += 1
            conversation.simulator_usage = conversation.simulator_usage + response.usage


def _markers(fact: str) -> list[str]:
    """The words that give a fact away: values (digits, names, paths) or, failing those, content words."""
    tokens = [t.strip(".,;:!?'\"()").lower() for t in _TOKEN.findall(fact)]
    raw = [t.strip(".,;:!?'\"()") for t in _TOKEN.findall(fact)]
    values = [
        low
        for index, (low, word) in enumerate(zip(tokens, raw, strict=True))
        if low and (any(c.isdigit() for c in word) or "/" in word or "@" in word or (index > 0 and word[:1].isupper()))
    ]
    if values:
        return values
    return [t for t in tokens if len(t) >= 4 and t not in _STOP]


def fact_mentioned(text: str, fact: str) -> bool:
    """Whether `text` states `fact`: the whole fact, or every word that gives it away (case-insensitive)."""
    low = text.lower()
    if fact.lower().strip(" .") in low:
        return True
    markers = _markers(fact)
    return bool(markers) and all(marker in low for marker in markers)


def _asked(agent_text: str, fact: str) -> bool:
    """Whether an agent message asks for something (a question, or it names the fact's subject)."""
    if "?" in agent_text:
        return True
    low = agent_text.lower()
    return any(word in low for word in _markers(fact))


def simulator_checks(conversation: Conversation, spec: SimulateSpec) -> list[str]:
    """Faults of the simulator itself in one arm's conversation (empty when it played fair).

    Only the simulator's own messages are looked at (the opener comes from the suite): a fact in arm
    `withheld` (leaked), a fact in arm `supplied` before the agent asked for it (volunteered: the agent's
    previous message asked nothing), the sign-off before any task was attempted, a farewell without
    the sign-off, or an empty message.
    """
    problems: list[str] = []
    messages = conversation.messages
    start = conversation.first_simulated
    simulated = [(i, m) for i, m in enumerate(messages) if m.role == "user" and i >= start]
    signoff = spec.persona.signoff.lower()
    for index, message in simulated:
        if not message.content.strip():
            problems.append(f"the simulator sent an empty message (message {index + 1})")
    for fact in spec.facts:
        for index, message in simulated:
            if not fact_mentioned(message.content, fact):
                continue
            if conversation.arm == "withheld":
                problems.append(f"withheld fact leaked in message {index + 1}: {fact!r}")
            elif not _asked(messages[index - 1].content, fact):
                problems.append(f"fact volunteered before the agent asked for it (message {index + 1}): {fact!r}")
            break
    if conversation.stop == "signoff" and spec.tasks:
        attempts = [m for i, m in simulated if signoff not in m.content.lower()]
        if not attempts and not spec.starting_sentence and start <= 1:
            problems.append("the simulator signed off before attempting any task")
    if conversation.stop != "signoff":
        farewells = [i for i, m in simulated if _FAREWELL.search(m.content)]
        if farewells:
            problems.append(f"the simulator said goodbye without the sign-off (message {farewells[0] + 1})")
    return problems
