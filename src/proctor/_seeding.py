"""Memory seeding: deliver a case's `seeds` to the agent before the evaluated conversation.

Conversation seeds are replayed (their `user` messages, in order) in a session of their own that is
closed before the conversation (`seed_session: prior`, the default), or in the evaluated session itself
(`same`; the seed exchange is then not part of the transcript). Text seeds go to the target's `ingest`
(the `embabel` target's `ingest_url`). A target that cannot take a seed kind raises `ConfigError`.
"""

from __future__ import annotations

from typing import Any

import anyio

from proctor.errors import ConfigError, TargetTimeout
from proctor.suite import Case
from proctor.targets import Session, SessionContext, Target

__all__ = ["deliver_seeds"]


async def _replay(session: Session, case: Case) -> int:
    retries = 0
    for seed in case.seeds:
        for message in seed.conversation or []:
            if message.role != "user":
                continue
            try:
                with anyio.fail_after(case.timeout):
                    reply = await session.send(message.content)
            except TimeoutError:
                raise TargetTimeout(f"seed message got no reply within {case.timeout:g} s") from None
            retries += reply.retries
    return retries


async def deliver_seeds(target: Target, context: SessionContext, session: Session, case: Case) -> int:
    """Deliver `case.seeds`; returns the agent calls retried while doing so.

    Raises:
        ConfigError: The target cannot take text seeds.
        proctor.errors.TargetError: The agent failed while being seeded.
    """
    if not case.seeds:
        return 0
    retries = 0
    texts = [seed.text for seed in case.seeds if seed.text is not None]
    if texts:
        ingest: Any = getattr(target, "ingest", None)
        if ingest is None:
            raise ConfigError(f"the {target.name} target cannot ingest text seeds (see 'ingest_url')")
        for text in texts:
            with anyio.fail_after(case.timeout):
                retries += await ingest(text, context)
    if any(seed.conversation for seed in case.seeds):
        if case.seed_session == "same":
            return retries + await _replay(session, case)
        prior = await target.open_session(context)
        try:
            retries += await _replay(prior, case)
        finally:
            with anyio.CancelScope(shield=True):
                await prior.aclose()
    return retries
