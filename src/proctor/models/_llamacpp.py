"""`llamacpp/<path-to.gguf>`: a local GGUF model run in-process by llama.cpp's server (xllamacpp).

For users with their own weights. The engine is the `xllamacpp` wheel (extra `local`): a prebuilt
llama.cpp with its server built in, OpenAI-shaped dicts in and out, JSON-schema-constrained decoding.
(`llama-cpp-python` compiles llama.cpp from source for ~9 minutes on every new machine; measured in
`../shared/NOTES.md`, so it is not the default.) Calls are blocking and run in a worker thread; one
server per GGUF file is kept for the process.

Settings: `PROCTOR_LLAMACPP_CTX` (context size, default 4096) and `PROCTOR_LLAMACPP_THREADS` (default:
cores - 1, which keeps generation from collapsing when every core is busy).
"""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path
from typing import Any

import anyio.to_thread

from proctor.errors import ConfigError, ModelError
from proctor.models._base import GenerateConfig, ModelResponse, require_module
from proctor.models._managed import ModelSettings
from proctor.models._openai import build_chat_request, parse_chat_response

__all__ = ["LlamaCppProvider", "llamacpp_factory"]

_SERVERS: dict[str, Any] = {}
_LOCK = threading.Lock()


def _server(path: str) -> Any:
    """The in-process llama.cpp server for `path`, started once."""
    with _LOCK:
        server = _SERVERS.get(path)
        if server is None:
            xllamacpp = require_module("xllamacpp", extra="local", provider="llamacpp")
            params = xllamacpp.CommonParams()
            params.model.path = path
            params.n_ctx = int(os.environ.get("PROCTOR_LLAMACPP_CTX", "4096"))
            params.verbosity = -1
            threads = int(os.environ.get("PROCTOR_LLAMACPP_THREADS", str(max(1, (os.cpu_count() or 2) - 1))))
            params.cpuparams.n_threads = threads
            params.cpuparams_batch.n_threads = threads
            server = _SERVERS[path] = xllamacpp.Server(params)
        return server


class LlamaCppProvider:
    """Runs chat completions on a local GGUF file."""

    def __init__(self, path: str) -> None:
        """Build the adapter; the model loads on the first call.

        Args:
            path: The GGUF file.
        """
        self.provider = "llamacpp"
        self.model = path
        self.endpoint = "local"
        self.name = f"llamacpp/{path}"

    async def complete(
        self, messages: list[dict[str, str]], config: GenerateConfig, response_schema: dict[str, Any] | None
    ) -> ModelResponse:
        """Generate one answer (see `Provider.complete`); `n` > 1 is served by separate generations."""
        body = build_chat_request(Path(self.model).name, messages, config, response_schema)
        body.pop("n", None)

        def generate() -> list[dict[str, Any]]:
            server = _server(self.model)
            return [server.handle_chat_completions(dict(body)) for _ in range(max(1, config.n))]

        started = time.perf_counter()
        with anyio.fail_after(config.timeout * max(1, config.n)):
            answers = await anyio.to_thread.run_sync(generate, abandon_on_cancel=True)
        parsed = []
        for answer in answers:
            if isinstance(answer, dict) and "error" in answer and "choices" not in answer:
                raise ModelError(f"{self.name}: llama.cpp answered with an error: {answer['error']}")
            parsed.append(parse_chat_response(answer, self.name))
        first = parsed[0]
        first.choices = [text for response in parsed for text in response.choices]
        for extra in parsed[1:]:
            first.usage = first.usage + extra.usage
        first.latency_ms = (time.perf_counter() - started) * 1000
        return first

    async def aclose(self) -> None:
        """Nothing to close per call; the server lives for the process."""


def llamacpp_factory(model: str, settings: ModelSettings) -> LlamaCppProvider:
    """Build the adapter for `llamacpp/<path-to.gguf>`.

    Raises:
        ConfigError: The path is not an existing `.gguf` file.
        proctor.errors.ModelUnavailable: `xllamacpp` is not installed (extra `local`).
    """
    path = Path(model).expanduser()
    if path.suffix.lower() != ".gguf" or not path.is_file():
        raise ConfigError(f"llamacpp/{model}: expected the path of a local .gguf file; found no such file")
    require_module("xllamacpp", extra="local", provider="llamacpp")
    return LlamaCppProvider(str(path.resolve()))
