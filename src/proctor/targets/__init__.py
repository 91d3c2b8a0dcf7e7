"""Targets: how Proctor talks to the agent under test.

Built-in types are `openai` (an OpenAI-compatible chat completions endpoint), `http` (any REST agent,
described by templates and JSONPaths), `lobu` (a Lobu gateway) and `python` (a callable in this
process). Plugins add more through the `proctor.targets` entry point group.

Example:
    ```python
    target = build_target(OpenAITargetSpec(base_url="http://127.0.0.1:8000/v1"))
    session = await target.open_session(SessionContext(case="greeting", trial=1))
    reply = await session.send("Hello!")
    await session.aclose()
    await target.aclose()
    ```
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from proctor._lazy import lazy_attributes as _lazy_attributes
from proctor.targets._base import DEFAULT_MAX_CONNECTIONS, Session, SessionContext, Target, TargetFactory
from proctor.targets._registry import ENTRY_POINT_GROUP, build_target, register_target, target_types

if TYPE_CHECKING:
    from proctor.targets._http import HttpTarget
    from proctor.targets._http_client import DEFAULT_RETRY, RetryPolicy
    from proctor.targets._lobu import LobuTarget
    from proctor.targets._openai import OpenAITarget
    from proctor.targets._python import PythonTarget

# Concrete targets load on first use, so a run against a `python` target never imports httpx.
_LAZY = {
    "HttpTarget": "proctor.targets._http",
    "LobuTarget": "proctor.targets._lobu",
    "OpenAITarget": "proctor.targets._openai",
    "PythonTarget": "proctor.targets._python",
    "RetryPolicy": "proctor.targets._http_client",
    "DEFAULT_RETRY": "proctor.targets._http_client",
}


__getattr__ = _lazy_attributes(__name__, _LAZY)


__all__ = [
    "DEFAULT_MAX_CONNECTIONS",
    "DEFAULT_RETRY",
    "ENTRY_POINT_GROUP",
    "HttpTarget",
    "LobuTarget",
    "OpenAITarget",
    "PythonTarget",
    "RetryPolicy",
    "Session",
    "SessionContext",
    "Target",
    "TargetFactory",
    "build_target",
    "register_target",
    "target_types",
]
