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
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from proctor.drivers.conversation import Conversation, exchange
from proctor.errors import ModelError, ModelOutputError, ProctorError
from proctor.transcript import Message

if TYPE_CHECKING:
    import jinja2

    from proctor.models import Model
    from proctor.suite import Arm, SimulateSpec
    from proctor.targets import Session

__all__ = [
    "ASKED_PROMPT",
    "NO_SIMULATOR_HINT",
    "PROMPT",
    "Conversation",
    "Simulator",
    "asked_for",
    "fact_mentioned",
    "judge_asked_for",
    "judge_requests",
    "simulator_checks",
]

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


class Simulator:
    """A model playing the user.

    Args:
        model: The simulator model (never the agent under test unless the user named it).
        prompt: A Jinja template replacing the built-in one (`persona`, `tasks`, `facts` (`None` in
            arm `withheld`), `story`, `signoff`, `arm` are its variables).
    """

    def __init__(self, model: Model, prompt: str | None = None) -> None:
        import jinja2  # on first use

        from proctor._jinja import LimitedSandbox  # on first use too: it imports Jinja

        self.model = model
        env = LimitedSandbox(  # a suite's own prompt is data: no attribute walk to os, bounded work and memory
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
        from proctor._jinja import render  # loaded with the environment (__init__)

        variables = {
            "persona": spec.persona,
            "tasks": spec.tasks,
            "facts": list(spec.facts) if arm == "supplied" else None,
            "story": spec.story,
            "signoff": spec.persona.signoff,
            "arm": arm,
        }
        return render(self._template, variables).strip()

    async def next_message(self, spec: SimulateSpec, arm: Arm, messages: list[Message], seed: int) -> tuple[str, Any]:
        """Ask the simulator model for the user's next message, given the conversation so far.

        Returns:
            The message text and the model's response (for accounting).

        Raises:
            proctor.errors.ModelError: The simulator model could not answer.
        """
        chat: list[dict[str, str]] = [
            {"role": "system", "content": self.system_prompt(spec, arm)},
            {"role": "user", "content": _KICKOFF},
        ]
        # the simulator plays the user: its own messages are the "assistant" side of its chat
        chat.extend({"role": "assistant" if m.role == "user" else "user", "content": m.content} for m in messages)
        from proctor.models import GenerateConfig  # must stay fast: the model layer loads once a user is simulated

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
        conversation: Conversation | None = None,
    ) -> Conversation:
        """Play one arm's conversation on `session` (the caller opens and closes it).

        Args:
            session: A fresh agent session.
            spec: The case's `simulate:` block.
            arm: `withheld` or `supplied`.
            seed: Picks the greeting and seeds the simulator's sampling.
            reply_timeout: Seconds the agent may take per reply.
            conversation: Scripted turns already exchanged (`proctor.drivers.script`); the simulator then
                goes on from them and speaks first (no greeting).

        Never raises for agent or simulator problems: they end the conversation with `stop` set to
        `error` or `simulator_error` and the reason in `error`.
        """
        rng = random.Random(seed)
        opener = spec.starting_sentence or rng.choice(spec.greetings)
        scripted = conversation is not None and bool(conversation.messages)
        conversation = conversation if conversation is not None else Conversation()
        conversation.arm, conversation.opener, conversation.seed = arm, opener, seed
        conversation.first_simulated = len(conversation.messages) if scripted else 1
        text: str | None = None if scripted else opener
        while True:
            if text is None:
                text = await self._next(spec, arm, conversation, seed)
                if text is None:
                    return conversation
            if spec.persona.signoff.lower() in text.lower():
                conversation.messages.append(Message("user", text))
                conversation.stop = "signoff"
                return conversation
            if len(conversation.messages) + 1 >= spec.max_turns:
                conversation.messages.append(Message("user", text))
                conversation.stop = "max_turns"
                return conversation
            try:
                await exchange(session, conversation, text, reply_timeout)
            except ProctorError as exc:
                turn = len(conversation.messages) // 2 + 1
                return conversation.fail("error", f"turn {turn}: {exc}", type(exc).__name__)
            if len(conversation.messages) >= spec.max_turns:
                conversation.stop = "max_turns"
                return conversation
            text = None

    async def _next(self, spec: SimulateSpec, arm: Arm, conversation: Conversation, seed: int) -> str | None:
        """The user's next message, counted; `None` (the conversation ended) when the model failed."""
        try:
            text, response = await self.next_message(spec, arm, conversation.messages, seed)
        except ModelError as exc:
            conversation.fail("simulator_error", f"the simulator model failed: {exc}", type(exc).__name__)
            return None
        conversation.simulator_calls += 1
        conversation.simulator_usage = conversation.simulator_usage + response.usage
        if response.cost_usd is not None:
            conversation.simulator_cost_usd = (conversation.simulator_cost_usd or 0.0) + response.cost_usd
        return text


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


def _stem(word: str) -> str:
    """A crude stem for matching inflections ("orders"/"ordered" -> "order"): the first 5 letters."""
    return word[:5]


def _request_words(fact: str) -> set[str]:
    """What names the fact's subject: its content words that are not values (stemmed)."""
    words = [t.strip(".,;:!?'\"()") for t in _TOKEN.findall(fact)]
    subject = set()
    for index, word in enumerate(words):
        low = word.lower()
        value = any(c.isdigit() for c in word) or "/" in word or "@" in word or (index > 0 and word[:1].isupper())
        if not value and len(low) >= 3 and low.isalpha() and low not in _STOP:
            subject.add(_stem(low))
    return subject


def asked_for(agent_text: str, fact: str) -> bool:
    """Whether an agent message requested `fact` (the keyword rule, used when no judge decides).

    It did when it names the fact's subject: a content word of the fact that is not one of its values,
    matched on a 5-letter stem, so "What is your order number?" requests "My order number is 4521". A
    question that names nothing ("What do you need?", "Anything else?") requests no fact. A fact that is
    all values (no subject word) is requested by a message that names one of its values.
    """
    subject = _request_words(fact)
    if not subject:
        low = agent_text.lower()
        return any(marker in low for marker in _markers(fact))
    said = {_stem(t.strip(".,;:!?'\"()").lower()) for t in _TOKEN.findall(agent_text)}
    return bool(subject & said)


ASKED_PROMPT = (
    "You decide whether an assistant's message asks the user for one specific piece of information. "
    "Answer with one word: yes if the message asks for it (or asks about its subject), no otherwise."
)
"""The system prompt of the judge that decides `asked_for` when one is configured."""


async def judge_asked_for(model: Model, agent_text: str, fact: str) -> bool:
    """Ask a judge model whether the agent's message requested `fact` (the judge form of `asked_for`).

    Raises:
        proctor.errors.ModelOutputError: The reply was neither yes nor no (never guessed).
        proctor.errors.ModelError: The judge model failed.
    """
    chat = [
        {"role": "system", "content": ASKED_PROMPT},
        {"role": "user", "content": f"Assistant message:\n{agent_text}\n\nInformation:\n{fact}\n\nDoes it ask?"},
    ]
    from proctor.models import GenerateConfig  # must stay fast: see `Simulator.next_message`

    response = await model.generate(chat, GenerateConfig(temperature=0.0, max_tokens=16), role="judge")
    word = re.sub(r"[^a-z]", "", response.text.strip().lower().split(maxsplit=1)[0] if response.text.strip() else "")
    if word not in ("yes", "no"):
        raise ModelOutputError(f"the judge answered {response.text!r}, not yes or no", [response.text])
    return word == "yes"


def _first_mentions(conversation: Conversation, spec: SimulateSpec) -> list[tuple[int, str]]:
    """`(message index, fact)` of each fact's first mention by the simulator, in conversation order."""
    start = conversation.first_simulated
    found = []
    for fact in spec.facts:
        for index, message in enumerate(conversation.messages):
            if message.role == "user" and index >= start and fact_mentioned(message.content, fact):
                found.append((index, fact))
                break
    return sorted(found, key=lambda pair: pair[0])


async def judge_requests(model: Model, conversation: Conversation, spec: SimulateSpec) -> dict[tuple[int, str], bool]:
    """The judge's `asked` decisions for `simulator_checks`, by `(message index, fact)`.

    For each fact the simulator revealed in arm `supplied`, the judge says whether the agent's message
    before it requested that fact (one yes/no call per revealed fact; none in arm `withheld`).

    Raises:
        proctor.errors.ModelError: The judge failed or answered neither yes nor no.
    """
    if conversation.arm != "supplied":
        return {}
    decisions: dict[tuple[int, str], bool] = {}
    for index, fact in _first_mentions(conversation, spec):
        previous = conversation.messages[index - 1].content if index > 0 else ""
        decisions[(index, fact)] = await judge_asked_for(model, previous, fact)
    return decisions


def simulator_checks(
    conversation: Conversation, spec: SimulateSpec, *, asked: Mapping[tuple[int, str], bool] | None = None
) -> list[str]:
    """Faults of the simulator itself in one arm's conversation (empty when it played fair).

    Only the simulator's own messages are looked at (the opener comes from the suite): a fact in arm
    `withheld` (leaked), a fact in arm `supplied` before the agent asked for it (volunteered: the agent's
    previous message did not request that fact, see `asked_for`), the sign-off before any task was
    attempted, a farewell without the sign-off, or an empty message.

    Args:
        conversation: One arm's conversation.
        spec: The case's `simulate:` block.
        asked: A judge's decisions by `(message index, fact)` (from `judge_requests`); pairs it lacks are
            decided by the keyword rule `asked_for`.
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
            elif not (asked or {}).get((index, fact), asked_for(messages[index - 1].content, fact)):
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
