"""`proctor serve`: the online evaluation service's HTTP API (and the options every service command shares).

Every option has a `PROCTOR_*` variable; the Go Eval Agent's variables are honoured after them
(`EVAL_AGENT_API_PORT`, `EARLY_EXIT_THRESHOLD`, `PRECHECK_WEIGHT`, `LLM_JUDGE_WEIGHT`, and
`CLAUDE_MODEL_ID`, which names a Bedrock judge when no `--judge` is given).
"""

from __future__ import annotations

import contextlib
import gc
import os
import signal
import socket
from pathlib import Path
from typing import Any

import typer

from proctor.cli._common import fail, guard
from proctor.cli._help import PANEL_JUDGES, PANEL_LIMITS, PANEL_LOGGING, PANEL_VERDICT, epilog
from proctor.cli._options import given_judge

# Proctor's own modules are imported inside command bodies: `proctor --help` imports every command module
# and must stay fast (tests/test_public_api.py), so each command loads only what it runs.
__all__ = ["EPILOG", "judge_settings", "serve_command"]

EPILOG = epilog(
    [
        (
            "Serve on 127.0.0.1:18081, judged by a Bedrock Claude model:",
            "proctor serve --judge bedrock/anthropic.claude-3-5-haiku-20241022-v1:0",
        ),
        (
            "On every interface, with a token and one worker per core:",
            'proctor serve --host 0.0.0.0 --api-token "$TOKEN" --workers 2',
        ),
        ("Print the OpenAPI schema (JSON) and exit:", "proctor serve --print-openapi"),
    ],
    [
        (0, "stopped cleanly (SIGTERM or Ctrl-C)"),
        (1, "with --workers above 1: a worker process failed"),
        (2, "bad options, cannot listen on the port, or the 'serve' extra missing"),
    ],
)

# Options shared by `serve`, `consume` and `calibrate` (Typer reads these without changing them).
JUDGE = typer.Option(
    None,
    "--judge",
    envvar="PROCTOR_JUDGE_MODEL",
    callback=given_judge,  # an empty or blank value is no judge, as an empty PROCTOR_JUDGE_MODEL is
    metavar="MODEL",
    rich_help_panel=PANEL_JUDGES,
    help="Judge model, provider/model (e.g. openai/gpt-4.1-mini). Default: bedrock/$CLAUDE_MODEL_ID when that "
    "is set; with no judge, events that pass the prechecks get verdict 'error'.",
)
JUDGE_BASE_URL = typer.Option(
    None,
    "--judge-base-url",
    envvar="PROCTOR_JUDGE_BASE_URL",
    metavar="URL",
    rich_help_panel=PANEL_JUDGES,
    help="The judge's endpoint (OpenAI-compatible servers).",
)
JUDGE_API_KEY = typer.Option(
    None,
    "--judge-api-key",
    envvar="PROCTOR_JUDGE_API_KEY",
    metavar="KEY",
    rich_help_panel=PANEL_JUDGES,
    help="The judge's API key (else the provider's variable).",
)
JUDGES = typer.Option(
    None,
    "--judges",
    envvar="PROCTOR_JUDGES",
    metavar="NAMES",
    rich_help_panel=PANEL_JUDGES,
    help="Stage-2 judges, comma-separated (default: all five, relevance, faithfulness, coherence, "
    "completeness, instruction, as the Go Eval Agent runs them; with --judges-config, its enabled ones).",
)
JUDGES_CONFIG = typer.Option(
    None,
    "--judges-config",
    envvar=["PROCTOR_JUDGES_CONFIG", "JUDGES_CONFIG_PATH"],
    metavar="FILE",
    rich_help_panel=PANEL_JUDGES,
    help="The Go Eval Agent's configs/judges.yaml: which judges run, their prompts and model parameters.",
)
JUDGE_TIMEOUT = typer.Option(
    30.0,
    "--judge-timeout",
    envvar="PROCTOR_JUDGE_TIMEOUT",
    min=0.001,
    metavar="SECONDS",
    rich_help_panel=PANEL_JUDGES,
    help="Per judge, retries included.",
)
JUDGE_CONCURRENCY = typer.Option(
    16,
    "--judge-concurrency",
    envvar="PROCTOR_JUDGE_CONCURRENCY",
    min=1,
    metavar="N",
    rich_help_panel=PANEL_JUDGES,
    help="Judge requests in flight.",
)
EARLY_EXIT = typer.Option(
    0.2,
    "--early-exit-threshold",
    envvar=["PROCTOR_EARLY_EXIT_THRESHOLD", "EARLY_EXIT_THRESHOLD"],
    min=0,
    max=1,
    metavar="",
    rich_help_panel=PANEL_VERDICT,
    help="Verdict 'fail' without judges when the precheck mean is below this.",
)
PRECHECK_WEIGHT = typer.Option(
    0.3,
    "--precheck-weight",
    envvar=["PROCTOR_PRECHECK_WEIGHT", "PRECHECK_WEIGHT"],
    min=0,
    metavar="SHARE",
    rich_help_panel=PANEL_VERDICT,
    help="The prechecks' share of the confidence.",
)
JUDGE_WEIGHT = typer.Option(
    0.7,
    "--judge-weight",
    envvar=["PROCTOR_JUDGE_WEIGHT", "LLM_JUDGE_WEIGHT"],
    min=0,
    metavar="SHARE",
    rich_help_panel=PANEL_VERDICT,
    help="The judges' share of the confidence (the two weights add up to 1).",
)
CACHE_DIR = typer.Option(
    None,
    "--cache-dir",
    envvar="PROCTOR_CACHE_DIR",
    metavar="DIR",
    rich_help_panel=PANEL_JUDGES,
    help="Cache deterministic judge calls here (default: no cache).",
)
LOG_LEVEL = typer.Option(
    "info",
    "--log-level",
    envvar="PROCTOR_LOG_LEVEL",
    metavar="LEVEL",
    rich_help_panel=PANEL_LOGGING,
    help="debug, info, warning or error.",
)


def judge_settings(
    *,
    judge: str | None,
    judge_base_url: str | None,
    judge_api_key: str | None,
    judges: str | None,
    judge_timeout: float,
    judge_concurrency: int,
    early_exit_threshold: float,
    precheck_weight: float,
    judge_weight: float,
    cache_dir: Path | None,
    judges_config: Path | None = None,
) -> Any:
    """Build the `ServiceSettings` the shared options describe (exits with a message when invalid)."""
    from proctor.service import DEFAULT_JUDGES, PipelineConfig, ServiceSettings

    model = judge or (f"bedrock/{os.environ['CLAUDE_MODEL_ID']}" if os.environ.get("CLAUDE_MODEL_ID") else None)
    names = tuple(name.strip() for name in (judges or "").split(",") if name.strip()) or DEFAULT_JUDGES
    pipeline = guard(
        lambda: PipelineConfig(
            early_exit_threshold=early_exit_threshold,
            precheck_weight=precheck_weight,
            judge_weight=judge_weight,
            judges=names,
            judge_timeout=judge_timeout,
            judges_config=judges_config,
        )
    )
    return ServiceSettings(pipeline, model, judge_base_url, judge_api_key, judge_concurrency, cache_dir)


def configure_logging(level: str) -> None:
    """Log to stderr at `level`."""
    import logging

    value = logging.getLevelName(level.upper())
    if not isinstance(value, int):
        fail(f"--log-level: unknown level {level!r}; use debug, info, warning or error")
    logging.basicConfig(level=value, format="%(asctime)s %(levelname)s %(name)s: %(message)s")


# Long only by its signature: Typer declares each option as a parameter; the body is a few steps.
def serve_command(
    host: str = typer.Option(
        "127.0.0.1", "--host", envvar="PROCTOR_SERVE_HOST", metavar="ADDRESS", help="Address to listen on."
    ),
    port: int = typer.Option(
        18081,
        "--port",
        envvar=["PROCTOR_SERVE_PORT", "EVAL_AGENT_API_PORT"],
        min=0,
        max=65535,
        metavar="PORT",
        help="Port to listen on (0: any free port).",
    ),
    api_token: str | None = typer.Option(
        None,
        "--api-token",
        envvar="PROCTOR_API_TOKEN",
        metavar="TOKEN",
        help="Require 'Authorization: Bearer <token>'.",
    ),
    max_body_bytes: int = typer.Option(
        1_048_576,
        "--max-body-bytes",
        envvar="PROCTOR_MAX_BODY_BYTES",
        min=1,
        metavar="BYTES",
        rich_help_panel=PANEL_LIMITS,
        help="Larger bodies get 413.",
    ),
    max_batch: int = typer.Option(
        100,
        "--max-batch",
        envvar="PROCTOR_MAX_BATCH",
        min=1,
        metavar="N",
        rich_help_panel=PANEL_LIMITS,
        help="Most events per /evaluate/batch request.",
    ),
    workers: int = typer.Option(
        1,
        "--workers",
        envvar="PROCTOR_SERVE_WORKERS",
        min=1,
        metavar="N",
        rich_help_panel=PANEL_LIMITS,
        help="Worker processes (one per core).",
    ),
    shutdown_timeout: int = typer.Option(
        30,
        "--shutdown-timeout",
        envvar="PROCTOR_SHUTDOWN_TIMEOUT",
        min=0,
        metavar="SECONDS",
        rich_help_panel=PANEL_LIMITS,
        help="On SIGTERM, time to let requests in flight finish.",
    ),
    access_log: bool = typer.Option(
        False,
        "--access-log/--no-access-log",
        envvar="PROCTOR_ACCESS_LOG",
        rich_help_panel=PANEL_LOGGING,
        help="Log every request.",
    ),
    print_openapi: bool = typer.Option(
        False, "--print-openapi", envvar="PROCTOR_PRINT_OPENAPI", help="Print the OpenAPI schema (JSON) and exit."
    ),
    judge: str | None = JUDGE,
    judge_base_url: str | None = JUDGE_BASE_URL,
    judge_api_key: str | None = JUDGE_API_KEY,
    judges: str | None = JUDGES,
    judges_config: Path | None = JUDGES_CONFIG,
    judge_timeout: float = JUDGE_TIMEOUT,
    judge_concurrency: int = JUDGE_CONCURRENCY,
    early_exit_threshold: float = EARLY_EXIT,
    precheck_weight: float = PRECHECK_WEIGHT,
    judge_weight: float = JUDGE_WEIGHT,
    cache_dir: Path | None = CACHE_DIR,
    log_level: str = LOG_LEVEL,
    otlp: bool = typer.Option(
        False,
        "--otlp",
        envvar="PROCTOR_OTLP",
        help="Also receive OpenTelemetry traces at POST /v1/traces (OTLP/HTTP) and score each traced turn; "
        "needs the otel extra.",
    ),
    otlp_output: Path = typer.Option(
        Path("otlp-results.jsonl"),
        "--otlp-output",
        envvar="PROCTOR_OTLP_OUTPUT",
        help="JSON Lines file the scored turns are appended to (written before each request is answered).",
    ),
    from_traces: str | None = typer.Option(
        None,
        "--from-traces",
        envvar="PROCTOR_FROM_TRACES",
        help="Which span attributes hold what: genai (default), openinference, logfire, or a mapping file.",
    ),
) -> None:
    """Serve the online evaluation API: prechecks, early exit, judges, confidence and verdict per event."""
    if print_openapi:
        from proctor.service._openapi import schema_text

        typer.echo(schema_text(), nl=False)
        return
    configure_logging(log_level)
    settings = judge_settings(
        judge=judge,
        judge_base_url=judge_base_url,
        judge_api_key=judge_api_key,
        judges=judges,
        judges_config=judges_config,
        judge_timeout=judge_timeout,
        judge_concurrency=judge_concurrency,
        early_exit_threshold=early_exit_threshold,
        precheck_weight=precheck_weight,
        judge_weight=judge_weight,
        cache_dir=cache_dir,
    )
    try:
        import uvicorn

        from proctor.service._http import HttpOptions, create_app
        from proctor.service._pipeline import build_pipeline
        from proctor.service._server import server_config
    except ImportError as exc:
        fail(f"the service needs the 'serve' extra ({exc.name} is missing): pip install 'proctor-eval[serve]'")
    options = HttpOptions(api_token=api_token or None, max_body_bytes=max_body_bytes, max_batch=max_batch)
    pipeline = guard(lambda: build_pipeline(settings))
    receiver = _otlp_receiver(pipeline, otlp_output, from_traces, max_body_bytes) if otlp else None
    config = server_config(
        create_app(pipeline, options, otlp=receiver),
        host=host,
        port=port,
        access_log=access_log,
        log_level=log_level.lower(),
        shutdown_timeout=shutdown_timeout,
    )
    try:
        sock = _listen(host, port)
    except OSError as exc:
        fail(f"cannot listen on {host}:{port}: {exc.strerror or exc}")
    # Everything loaded so far lives as long as the process: the collector need not walk it again per
    # collection, and forked workers share its pages (gc.freeze's documented use before fork).
    gc.collect()
    gc.freeze()
    if workers == 1:
        uvicorn.Server(config).run(sockets=[sock])
    else:
        _fork_workers(config, sock, workers)


def _otlp_receiver(pipeline: Any, output: Path, mapping: str | None, max_body_bytes: int) -> Any:
    """The `/v1/traces` receiver (`--otlp`); exits 2 without the otel extra or with a bad mapping."""
    try:
        from proctor.service._otlp import OtlpOptions, OtlpReceiver
        from proctor.traces import load_mapping
    except ImportError as exc:
        fail(f"--otlp needs the 'otel' extra ({exc.name} is missing): pip install 'proctor-eval[otel]'")
    options = OtlpOptions(output=output, mapping=guard(lambda: load_mapping(mapping)))
    return OtlpReceiver(pipeline, options, max_body_bytes=max_body_bytes)


def _listen(host: str, port: int) -> socket.socket:
    """A listening TCP socket; created with `IPPROTO_TCP` so that asyncio turns Nagle off on connections."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, port))
    sock.listen(2048)
    sock.set_inheritable(True)
    return sock


def _fork_workers(config: Any, sock: socket.socket, workers: int) -> None:
    """Run `workers` forked uvicorn servers accepting on one socket; forward SIGTERM/SIGINT to them."""
    import uvicorn

    if not hasattr(os, "fork"):
        fail("--workers above 1 needs a system with fork(); run one process per core instead")
    children: list[int] = []
    for _ in range(workers):
        pid = os.fork()
        if pid == 0:  # a worker: its own event loop, judge connections and signal handling
            code = 0
            try:
                uvicorn.Server(config).run(sockets=[sock])
            except BaseException:
                code = 1
            os._exit(code)
        children.append(pid)

    def forward(signum: int, frame: object) -> None:
        for child in children:
            with contextlib.suppress(ProcessLookupError):
                os.kill(child, signum)

    signal.signal(signal.SIGTERM, forward)
    signal.signal(signal.SIGINT, forward)
    failed = 0
    for child in children:
        _, status = os.waitpid(child, 0)
        failed += os.WIFEXITED(status) and os.WEXITSTATUS(status) != 0
    if failed:
        raise typer.Exit(1)
