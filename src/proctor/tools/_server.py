"""The tool server: one MCP server (streamable HTTP on 127.0.0.1) per run, one endpoint per trial.

Each trial gets its own URL, `http://127.0.0.1:<port>/t/<token>/mcp`, with the tools its case declares
and calls counted from zero: trials never see each other's tools, calls or sequences, though they share
one listener (started once, ~0.1-0.2 s, instead of once per trial). A request to a token no trial holds
gets 404. Every call is answered by the tool's behaviour (mock, proxy, replay, simulate) and kept, in
order, with its arguments, result, latency and error flag, for the trial's transcript.

Served with the official MCP SDK's low-level server; uvicorn runs in the run's event loop (its signal
handlers are left out: Ctrl-C stays Proctor's).
"""

from __future__ import annotations

import contextlib
import json
import re
import socket
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import uvicorn
from anyio.abc import TaskGroup
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import Server

from proctor.errors import ConfigError, ProctorError
from proctor.models import Model
from proctor.suite import Case
from proctor.suite._tools import ToolServerSpec, ToolSimulateSpec, ToolSpec
from proctor.tools._answer import ToolAnswer, call_key
from proctor.tools._cassette import Cassette
from proctor.tools._mock import MockTool
from proctor.tools._simulate import SimulatedTool
from proctor.tools._upstream import Upstream
from proctor.transcript import ToolCall

__all__ = ["ModelFor", "NoToolModel", "ToolReplayError", "ToolServer", "TrialTools"]

ModelFor = Callable[[ToolSpec, Case], Model | None]
"""Returns the model that plays a case's simulated tool (its own `simulate.model`, else the run's), or `None`."""

_PATH = re.compile(r"^/t/([0-9a-f]{32})/mcp/?$")
_ANY_OBJECT: dict[str, Any] = {"type": "object"}


class ToolReplayError(ProctorError):
    """The agent made a call the cassette does not hold (and `record: new` was not asked for)."""


class NoToolModel(ConfigError):
    """A simulated tool has no model to play it (the trial is skipped, like every model step without one)."""


Answer = Callable[[dict[str, Any], "TrialTools", int], Awaitable[ToolAnswer]]
"""A tool's behaviour: (arguments, the trial, the call's 0-based occurrence among identical calls)."""


@dataclass(slots=True)
class _Tool:
    definition: dict[str, Any]
    kind: str
    answer: Answer


@dataclass(slots=True)
class TrialTools:
    """One trial's tools: its endpoint, its tools, the calls made so far."""

    token: str
    url: str
    """The trial's MCP endpoint, e.g. `http://127.0.0.1:40123/t/<token>/mcp`."""
    tools: dict[str, _Tool]
    timeout: float = 120.0
    calls: list[ToolCall] = field(default_factory=list)
    """Every call, in the order it was made."""
    misses: list[str] = field(default_factory=list)
    """Calls a cassette could not answer (each fails the trial)."""
    conversation: list[dict[str, str]] = field(default_factory=list)
    """The conversation so far (`{role, content}`), for simulated tools."""
    graph: Any = None
    """The trial's graph (a `proctor.state.Graph`), for tools that read or write state."""
    _drained: int = 0
    _numbers: dict[str, int] = field(default_factory=dict)
    _occurrences: dict[str, int] = field(default_factory=dict)

    def drain(self) -> list[ToolCall]:
        """The calls made since the last drain (those of the turn that just ended)."""
        calls, self._drained = self.calls[self._drained :], len(self.calls)
        return calls

    def take_misses(self) -> list[str]:
        """The cassette misses since the last call, forgotten once taken."""
        misses, self.misses = self.misses, []
        return misses

    async def call(self, name: str, arguments: dict[str, Any]) -> ToolAnswer:
        """Answer one call with the tool's behaviour and keep it (unknown tools answer with an error)."""
        record = ToolCall(name, arguments, source="tools")
        self.calls.append(record)
        started = time.perf_counter()
        tool = self.tools.get(name)
        if tool is None:
            answer = ToolAnswer.error(f"unknown tool {name!r}; this trial has: {', '.join(sorted(self.tools))}")
        else:
            key = call_key(name, arguments)
            occurrence = self._occurrences.get(key, 0)
            self._occurrences[key] = occurrence + 1
            self._numbers[name] = self._numbers.get(name, 0) + 1
            try:
                answer = await tool.answer(arguments, self, occurrence)
            except ProctorError as exc:  # a real server gone away: the agent sees a failed call
                answer = ToolAnswer.error(f"{name} failed: {exc}")
        record.result, record.error = answer.value, answer.is_error
        record.latency_ms = (time.perf_counter() - started) * 1000
        return answer

    def number(self, name: str) -> int:
        """How many calls the tool has had in this trial (the current one included)."""
        return self._numbers.get(name, 0)


class _Uvicorn(uvicorn.Server):
    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        yield  # Ctrl-C belongs to Proctor's run, not to the tool server


class ToolServer:
    """The run's MCP tool server (an async context manager): `async with ToolServer() as server: ...`."""

    def __init__(self, model_for: ModelFor | None = None) -> None:
        """Prepare the server; it listens once entered.

        Args:
            model_for: The model for simulated tools (`None`: simulated tools cannot be served).
        """
        self._model_for = model_for
        self._trials: dict[str, TrialTools] = {}
        self._cassettes: dict[Path, Cassette] = {}
        self._upstreams: dict[str, Upstream] = {}
        self._connecting = anyio.Lock()
        self._group: TaskGroup | None = None
        self._uvicorn: _Uvicorn | None = None
        self.base_url = ""
        """`http://127.0.0.1:<port>` once started."""
        self.trials_served = 0
        """Trials that had an endpoint on this server."""

    async def __aenter__(self) -> ToolServer:
        self._group = await anyio.create_task_group().__aenter__()
        try:
            await self._start()
        except BaseException:
            self._group.cancel_scope.cancel()
            await self._group.__aexit__(None, None, None)
            raise
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        assert self._group is not None
        for cassette in self._cassettes.values():
            with contextlib.suppress(ConfigError):  # saved after each trial; this is the last chance
                cassette.save()
        for upstream in self._upstreams.values():
            upstream.close()
        if self._uvicorn is not None:
            self._uvicorn.should_exit = True
        await self._group.__aexit__(None, None, None)  # waits for uvicorn and the upstream sessions to end

    async def _start(self) -> None:
        assert self._group is not None
        server: Server[Any] = Server("proctor-tools", on_list_tools=self._list_tools, on_call_tool=self._call_tool)
        inner = server.streamable_http_app(json_response=True)
        # TCP proto given explicitly: asyncio then sets TCP_NODELAY (without it a call takes ~44 ms).
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
        sock.bind(("127.0.0.1", 0))
        self.base_url = f"http://127.0.0.1:{sock.getsockname()[1]}"

        async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
            if scope["type"] == "http":
                match = _PATH.match(scope["path"])
                if match is None or match.group(1) not in self._trials:
                    await _not_found(send)
                    return
                scope = {**scope, "path": "/mcp", "raw_path": b"/mcp", "proctor.trial": match.group(1)}
            await inner(scope, receive, send)

        config = uvicorn.Config(
            app, log_level="warning", access_log=False, ws="none", lifespan="on", timeout_graceful_shutdown=1
        )  # an agent that never closed its session does not hold up the end of the run
        self._uvicorn = _Uvicorn(config)
        self._group.start_soon(self._serve, sock)
        with anyio.fail_after(10):
            while not self._uvicorn.started:
                if self._uvicorn.should_exit:
                    raise ConfigError("the tool server could not start")
                await anyio.sleep(0.005)

    async def _serve(self, sock: socket.socket) -> None:
        assert self._uvicorn is not None
        try:
            await self._uvicorn.serve(sockets=[sock])
        finally:
            self._uvicorn.should_exit = True
            sock.close()

    def _trial_of(self, ctx: ServerRequestContext[Any, Any]) -> TrialTools | None:
        request = ctx.request
        token = request.scope.get("proctor.trial") if request is not None else None
        return self._trials.get(token) if isinstance(token, str) else None

    async def _list_tools(
        self, ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        trial = self._trial_of(ctx)
        tools = [] if trial is None else [types.Tool.model_validate(t.definition) for t in trial.tools.values()]
        return types.ListToolsResult(tools=tools)

    async def _call_tool(
        self, ctx: ServerRequestContext[Any, Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        trial = self._trial_of(ctx)
        if trial is None:
            answer = ToolAnswer.error("this trial has ended")
        else:
            answer = await trial.call(params.name, dict(params.arguments or {}))
        return types.CallToolResult.model_validate(answer.to_mcp())

    @asynccontextmanager
    async def trial(self, case: Case, graph: Any = None) -> AsyncIterator[TrialTools]:
        """An endpoint with the case's tools for one trial; closed (404) and its recordings saved after.

        `graph` is the trial's graph, for tools whose mock is a Cypher statement.

        Raises:
            ConfigError: A tool cannot be served (a missing cassette, a bad template, no model to simulate).
            proctor.tools.UpstreamError: A real server to proxy could not be reached.
        """
        tools = {name: await self._tool(case, name, spec) for name, spec in case.tools.items()}
        token = uuid.uuid4().hex
        trial = TrialTools(token, f"{self.base_url}/t/{token}/mcp", tools, timeout=case.timeout, graph=graph)
        self._trials[token] = trial
        self.trials_served += 1
        try:
            yield trial
        finally:
            del self._trials[token]
            for cassette in self._cassettes.values():
                cassette.save()

    def cassette(self, path: Path) -> Cassette:
        """The run's copy of a cassette file (one per file, shared by its tools and trials)."""
        path = path.resolve()
        if path not in self._cassettes:
            self._cassettes[path] = Cassette(path)
        return self._cassettes[path]

    async def upstream(self, spec: ToolServerSpec, cwd: Path) -> Upstream:
        """The run's connection to a real server, opened on first use."""
        key = f"{spec.model_dump_json()} {cwd}"
        async with self._connecting:
            if key not in self._upstreams:
                assert self._group is not None
                upstream = Upstream(spec, cwd)
                await self._group.start(upstream.run)
                self._upstreams[key] = upstream
        return self._upstreams[key]

    async def _tool(self, case: Case, name: str, spec: ToolSpec) -> _Tool:
        base = case.file.parent
        mock = spec.mock_spec
        if mock is not None:
            mocked = MockTool(name, mock)

            async def mocked_answer(arguments: dict[str, Any], trial: TrialTools, _: int) -> ToolAnswer:
                return await mocked.answer(arguments, trial.number(name), trial.graph)

            return _Tool(_definition(name, spec, await self._imported(name, spec, base)), "mock", mocked_answer)
        if spec.simulate not in (None, False):
            return self._simulated(name, spec, case, await self._imported(name, spec, base))
        if spec.replay is not None:
            return await self._replayed(name, spec, base)
        assert spec.proxy is not None
        upstream = await self.upstream(spec.proxy, base)
        remote = spec.proxy.tool or name
        definition = _definition(name, spec, upstream.tools.get(remote))
        recording = self.cassette(base / spec.cassette) if spec.cassette is not None else None
        if recording is not None:
            recording.record_tool(definition)

        async def proxied(arguments: dict[str, Any], trial: TrialTools, occurrence: int) -> ToolAnswer:
            answer = await upstream.call(remote, arguments, seconds=trial.timeout)
            if recording is not None:
                recording.record(name, arguments, occurrence, answer)
            return answer

        return _Tool(definition, "proxy", proxied)

    async def _imported(self, name: str, spec: ToolSpec, base: Path) -> dict[str, Any] | None:
        """The tool's definition from `schema_from` (a real server's list, or a cassette), if named."""
        source = spec.schema_from
        if source is None:
            return None
        if isinstance(source, str):
            cassette = self.cassette(base / source)
            if not cassette.exists:
                raise ConfigError(f"tool {name!r}: schema_from cassette {cassette.path} does not exist")
            known = cassette.tools.get(name)
        else:
            known = (await self.upstream(source, base)).tools.get(source.tool or name)
        if known is None:
            raise ConfigError(f"tool {name!r}: its schema_from source has no tool of that name")
        return known

    def _simulated(self, name: str, spec: ToolSpec, case: Case, known: dict[str, Any] | None = None) -> _Tool:
        settings = spec.simulate if isinstance(spec.simulate, ToolSimulateSpec) else ToolSimulateSpec()
        model = self._model_for(spec, case) if self._model_for is not None else None
        if model is None:
            raise NoToolModel(
                f"tool {name!r} is played by a model, but none is configured (give it 'simulate: {{model: ...}}', "
                "or run with --simulator or --judge)"
            )
        definition = _definition(name, spec, known)
        simulated = SimulatedTool(name, definition, settings, model)
        earlier: dict[str, list[dict[str, Any]]] = {}

        async def simulate(arguments: dict[str, Any], trial: TrialTools, _: int) -> ToolAnswer:
            history = earlier.setdefault(trial.token, [])
            answer = await simulated.answer(arguments, trial.conversation, history)
            history.append({"arguments": arguments, "result": answer.value})
            return answer

        return _Tool(definition, "simulate", simulate)

    async def _replayed(self, name: str, spec: ToolSpec, base: Path) -> _Tool:
        assert spec.replay is not None
        cassette = self.cassette(base / spec.replay)
        if not cassette.exists and spec.record != "new":
            raise ConfigError(
                f"tool {name!r}: cassette {cassette.path} does not exist; record it first (a 'proxy' with "
                "'cassette:'), or add 'record: new' and a 'proxy' to record what is missing"
            )
        upstream = await self.upstream(spec.proxy, base) if spec.record == "new" and spec.proxy else None
        remote = spec.proxy.tool or name if spec.proxy is not None else name
        known = cassette.tools.get(name) or (upstream.tools.get(remote) if upstream is not None else None)
        definition = _definition(name, spec, known)
        if upstream is not None:
            cassette.record_tool(definition)

        async def replayed(arguments: dict[str, Any], trial: TrialTools, occurrence: int) -> ToolAnswer:
            answer = cassette.lookup(name, arguments, occurrence)
            if answer is not None:
                return answer
            if upstream is not None:
                answer = await upstream.call(remote, arguments, seconds=trial.timeout)
                cassette.record(name, arguments, occurrence, answer)
                return answer
            miss = f"{name}({json.dumps(arguments, sort_keys=True)}) is not in cassette {cassette.path}"
            trial.misses.append(miss)
            return ToolAnswer.error(f"not recorded: {miss}")

        return _Tool(definition, "replay", replayed)


def _definition(name: str, spec: ToolSpec, known: dict[str, Any] | None) -> dict[str, Any]:
    """The tool as the agent sees it: the block's description and input, else the real server's."""
    known = known or {}
    definition: dict[str, Any] = {
        "name": name,
        "inputSchema": spec.input or known.get("inputSchema") or _ANY_OBJECT,
    }
    description = spec.description if spec.description is not None else known.get("description")
    if description is not None:
        definition["description"] = description
    return definition


async def _not_found(send: Any) -> None:
    body = b'{"error": "no such trial endpoint (the trial ended, or the URL is wrong)"}'
    await send(
        {
            "type": "http.response.start",
            "status": 404,
            "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())],
        }
    )
    await send({"type": "http.response.body", "body": body})
