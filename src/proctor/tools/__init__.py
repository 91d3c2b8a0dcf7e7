"""Tools under Proctor's control: the MCP server a trial hands its agent (`tools:` in a suite).

Mocked, proxied (and recorded into cassettes), replayed and simulated tools, served with the official
MCP SDK over streamable HTTP on 127.0.0.1, one endpoint per trial; every call the agent makes lands in
the trial's transcript. The SDK is the `tools` extra (`pip install 'proctor-eval[tools]'`), imported
when a run first needs the server.

Example:
    ```python
    async with ToolServer() as server, server.trial(case) as tools:
        ...  # the agent calls tools.url; tools.calls holds what it did
    ```
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from proctor._lazy import lazy_attributes as _lazy_attributes
from proctor.tools._answer import ToolAnswer, call_key, merge_calls

if TYPE_CHECKING:
    from proctor.tools._cassette import CASSETTE_VERSION, Cassette
    from proctor.tools._server import ModelFor, NoToolModel, ToolReplayError, ToolServer, TrialTools
    from proctor.tools._session import ToolCallsSession
    from proctor.tools._upstream import UpstreamError

# The server and the upstream client load the MCP SDK (~0.6 s): only when a run serves tools.
_LAZY = {
    "CASSETTE_VERSION": "proctor.tools._cassette",
    "Cassette": "proctor.tools._cassette",
    "ModelFor": "proctor.tools._server",
    "NoToolModel": "proctor.tools._server",
    "ToolReplayError": "proctor.tools._server",
    "ToolServer": "proctor.tools._server",
    "TrialTools": "proctor.tools._server",
    "ToolCallsSession": "proctor.tools._session",
    "UpstreamError": "proctor.tools._upstream",
}

__getattr__ = _lazy_attributes(__name__, _LAZY)

__all__ = [
    "CASSETTE_VERSION",
    "Cassette",
    "ModelFor",
    "NoToolModel",
    "ToolAnswer",
    "ToolCallsSession",
    "ToolReplayError",
    "ToolServer",
    "TrialTools",
    "UpstreamError",
    "call_key",
    "merge_calls",
]
