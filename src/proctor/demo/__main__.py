"""`python -m proctor.demo`: serve the demo HR agent over HTTP, or chat with it in the terminal.

```
python -m proctor.demo serve [--host 127.0.0.1] [--port 8765] [--latency-ms 0]
python -m proctor.demo chat
python -m proctor.demo tools          # the agent's directory tools as an MCP server over stdio
```
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

__all__ = ["main", "serve", "tools"]

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8765


def serve(
    host: str = DEFAULT_HOST,
    port: int = DEFAULT_PORT,
    latency_ms: float = 0.0,
    log_level: str = "warning",
    access_log: bool = False,
) -> None:
    """Run the demo server with uvicorn until interrupted.

    Args:
        host: Interface to bind.
        port: Port to bind.
        latency_ms: Delay before every reply, in milliseconds.
        log_level: uvicorn's log level.
        access_log: Log every request.
    """
    try:
        import uvicorn

        from proctor.demo._server import create_app
    except ImportError as exc:  # pragma: no cover - depends on the installation
        sys.exit(f"the demo server needs the 'serve' extra: pip install 'proctor-eval[serve]' ({exc})")
    url = f"http://{host}:{port}"
    print(
        f"Proctor demo HR agent on {url}\n"
        f"  OpenAI-compatible: {url}/v1 (model hr-assistant)\n"
        f"  REST sessions:     {url}/api/sessions\n"
        f"  Lobu gateway:      {url} (agent hr-assistant)\n"
        f"  A2A:               {url}/a2a (with the 'a2a' extra)\n"
        f"  Health:            {url}/health",
        file=sys.stderr,
        flush=True,
    )
    config = uvicorn.Config(
        create_app(latency_ms=latency_ms),
        host=host,
        port=port,
        log_level=log_level,
        access_log=access_log,
        lifespan="off",
        timeout_graceful_shutdown=1,
    )
    uvicorn.Server(config).run()


def chat() -> None:
    """Talk to the agent on stdin/stdout; prints each reply and its tool calls."""
    import json

    from proctor.demo._agent import HRAgent

    agent = HRAgent()
    history: list[dict[str, str]] = []
    print('Demo HR agent. Try "Who is Alice?", "Is Dave out next week?". Ctrl-D to quit.', file=sys.stderr)
    for line in sys.stdin:
        if not line.strip():
            continue
        history.append({"role": "user", "content": line.strip()})
        reply = agent.respond(history)
        history.append({"role": "assistant", "content": reply.text})
        for call in reply.tool_calls:
            print(f"  [{call.name} {json.dumps(call.arguments)}]", file=sys.stderr)
        print(reply.text, flush=True)


def tools() -> None:
    """Serve the agent's directory tools as an MCP server over stdio (needs the `tools` extra)."""
    try:
        from proctor.demo._mcp import tool_server
    except ImportError as exc:  # pragma: no cover - depends on the installation
        sys.exit(f"the demo's tool server needs the 'tools' extra: pip install 'proctor-eval[tools]' ({exc})")
    tool_server().run()


def main(argv: Sequence[str] | None = None) -> None:
    """Parse the command line and run `serve` or `chat`."""
    parser = argparse.ArgumentParser(prog="python -m proctor.demo", description="The Proctor demo HR agent.")
    commands = parser.add_subparsers(dest="command", required=True)
    serve_parser = commands.add_parser("serve", help="serve the agent over HTTP (OpenAI, REST, Lobu)")
    serve_parser.add_argument("--host", default=DEFAULT_HOST, help=f"interface to bind (default {DEFAULT_HOST})")
    serve_parser.add_argument("--port", type=int, default=DEFAULT_PORT, help=f"port (default {DEFAULT_PORT})")
    serve_parser.add_argument(
        "--latency-ms", type=float, default=0.0, help="delay before every reply, in ms (default 0)"
    )
    serve_parser.add_argument(
        "--log-level", default="warning", choices=["critical", "error", "warning", "info", "debug"]
    )
    serve_parser.add_argument("--access-log", action="store_true", help="log every request")
    commands.add_parser("chat", help="chat with the agent in the terminal")
    commands.add_parser("tools", help="serve the agent's directory tools as an MCP server (stdio)")
    args = parser.parse_args(argv)
    if args.command == "serve":
        serve(args.host, args.port, args.latency_ms, args.log_level, args.access_log)
    elif args.command == "tools":
        tools()
    else:
        chat()


if __name__ == "__main__":
    main()
