"""`proctor consume`: evaluate events from a Redis Stream as a member of a consumer group.

Runs until SIGTERM or Ctrl-C (a second signal stops at once; unfinished entries stay pending and are
redone), then prints its counters as JSON. Exit codes: 0 stopped cleanly; 2 bad options or Redis
unreachable at start.
"""

from __future__ import annotations

import json
import signal
import socket
from pathlib import Path
from typing import Any

import typer

from proctor.cli._common import fail, guard
from proctor.cli._help import PANEL_LIMITS, epilog
from proctor.cli._options import CONSUMER_CONCURRENCY
from proctor.cli._serve import (
    CACHE_DIR,
    EARLY_EXIT,
    JUDGE,
    JUDGE_API_KEY,
    JUDGE_BASE_URL,
    JUDGE_CONCURRENCY,
    JUDGE_TIMEOUT,
    JUDGE_WEIGHT,
    JUDGES,
    JUDGES_CONFIG,
    LOG_LEVEL,
    PRECHECK_WEIGHT,
    configure_logging,
    judge_settings,
)

# Proctor's own modules are imported inside command bodies: `proctor --help` imports every command module
# and must stay fast (tests/test_public_api.py), so each command loads only what it runs.
__all__ = ["EPILOG", "consume_command"]

EPILOG = epilog(
    [
        ("Join group eval-group on stream eval-events at localhost:", "proctor consume --judge openai/gpt-4.1-mini"),
        (
            "Drain the stream once, then print the counters (JSON):",
            "proctor consume --redis-url redis://cache:6379/0 --exit-when-idle",
        ),
        ("A second consumer, more events in flight:", "proctor consume --name worker-2 --concurrency 32"),
    ],
    [
        (0, "stopped cleanly (SIGTERM, Ctrl-C or --exit-when-idle); counters printed"),
        (2, "bad options, Redis unreachable at start, or the 'serve' extra missing"),
    ],
)

REDIS_URL = typer.Option(
    None,
    "--redis-url",
    envvar="PROCTOR_REDIS_URL",
    metavar="URL",
    help="Redis, e.g. redis://localhost:6379/0 (else REDIS_ADDR host:port with REDIS_PASSWORD).",
)
STREAM = typer.Option("eval-events", "--stream", envvar="PROCTOR_STREAM", metavar="NAME", help="The stream of events.")


# Long only by its signature: Typer declares each option as a parameter; the body is a few steps.
def consume_command(
    redis_url: str | None = REDIS_URL,
    stream: str = STREAM,
    group: str = typer.Option(
        "eval-group", "--group", envvar="PROCTOR_GROUP", metavar="NAME", help="The consumer group."
    ),
    name: str | None = typer.Option(
        None,
        "--name",
        envvar="PROCTOR_CONSUMER_NAME",
        metavar="NAME",
        help="This consumer's name (default: the host name).",
    ),
    results_stream: str = typer.Option(
        "eval-results", "--results-stream", envvar="PROCTOR_RESULTS_STREAM", metavar="NAME", help="Where results go."
    ),
    dead_letter_stream: str = typer.Option(
        "eval-dead-letter",
        "--dead-letter-stream",
        envvar="PROCTOR_DEAD_LETTER_STREAM",
        metavar="NAME",
        help="Where malformed and poison entries go.",
    ),
    batch_size: int = typer.Option(
        100,
        "--batch-size",
        envvar="PROCTOR_BATCH_SIZE",
        min=1,
        metavar="N",
        rich_help_panel=PANEL_LIMITS,
        help="Entries per read.",
    ),
    concurrency: int = typer.Option(
        CONSUMER_CONCURRENCY,
        "--concurrency",
        envvar=["PROCTOR_CONSUMER_CONCURRENCY", "PROCTOR_CONCURRENCY"],
        min=1,
        metavar="N",
        rich_help_panel=PANEL_LIMITS,
        help="Events in flight.",
    ),
    block_ms: int = typer.Option(
        2000,
        "--block-ms",
        envvar="PROCTOR_BLOCK_MS",
        min=1,
        metavar="MS",
        rich_help_panel=PANEL_LIMITS,
        help="How long a read waits for new entries.",
    ),
    claim_idle: float = typer.Option(
        60.0,
        "--claim-idle",
        envvar="PROCTOR_CLAIM_IDLE",
        min=0.001,
        metavar="SECONDS",
        rich_help_panel=PANEL_LIMITS,
        help="Claim other consumers' entries pending this long.",
    ),
    claim_interval: float = typer.Option(
        10.0,
        "--claim-interval",
        envvar="PROCTOR_CLAIM_INTERVAL",
        min=0.001,
        metavar="SECONDS",
        rich_help_panel=PANEL_LIMITS,
        help="Time between claim rounds.",
    ),
    max_deliveries: int = typer.Option(
        5,
        "--max-deliveries",
        envvar="PROCTOR_MAX_DELIVERIES",
        min=1,
        metavar="N",
        rich_help_panel=PANEL_LIMITS,
        help="Dead-letter an entry delivered more times than this.",
    ),
    results_maxlen: int | None = typer.Option(
        None,
        "--results-maxlen",
        envvar="PROCTOR_RESULTS_MAXLEN",
        min=1,
        metavar="N",
        rich_help_panel=PANEL_LIMITS,
        help="Trim the results stream to about N entries.",
    ),
    start_id: str = typer.Option(
        "0",
        "--start-id",
        envvar="PROCTOR_START_ID",
        metavar="ID",
        help="Where a new group starts: 0 (everything) or $ (new).",
    ),
    shutdown_timeout: float = typer.Option(
        30.0,
        "--shutdown-timeout",
        envvar="PROCTOR_SHUTDOWN_TIMEOUT",
        min=0.001,
        metavar="SECONDS",
        rich_help_panel=PANEL_LIMITS,
        help="Time to finish on stop.",
    ),
    exit_when_idle: bool = typer.Option(
        False, "--exit-when-idle", envvar="PROCTOR_EXIT_WHEN_IDLE", help="Stop once the stream is drained."
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
) -> None:
    """Evaluate events from a Redis Stream; results go to a results stream, bad entries to a dead letter.

    Runs until stopped, then prints its counters as JSON on stdout (it has no other output there).
    """
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
        import redis  # noqa: F401  # checked here for a clear message

        from proctor.service._consumer import Consumer, ConsumerConfig
        from proctor.service._pipeline import build_pipeline
        from proctor.service._redis import redis_url as resolve_url
    except ImportError as exc:
        fail(f"the consumer needs the 'serve' extra ({exc.name} is missing): pip install 'proctor-eval[serve]'")
    config = guard(
        lambda: ConsumerConfig(
            redis_url=resolve_url(redis_url),
            stream=stream,
            group=group,
            consumer=name or socket.gethostname(),
            results_stream=results_stream,
            dead_letter_stream=dead_letter_stream,
            batch_size=batch_size,
            concurrency=concurrency,
            block_ms=block_ms,
            claim_idle=claim_idle,
            claim_interval=claim_interval,
            max_deliveries=max_deliveries,
            results_maxlen=results_maxlen,
            start_id=start_id,
            shutdown_timeout=shutdown_timeout,
            exit_when_idle=exit_when_idle,
        )
    )
    consumer = Consumer(guard(lambda: build_pipeline(settings)), config)
    stats = guard(lambda: _run(consumer))
    typer.echo(json.dumps({"consumer": config.consumer, **stats.to_dict()}))


def _run(consumer: Any) -> Any:
    import anyio

    failures: list[Exception] = []

    async def main() -> None:
        async with anyio.create_task_group() as group:

            async def on_signals() -> None:
                with anyio.open_signal_receiver(signal.SIGTERM, signal.SIGINT) as signals:
                    async for _ in signals:
                        if consumer.stopping:  # a second signal: stop now, leaving entries pending
                            group.cancel_scope.cancel()
                            return
                        consumer.stop()

            group.start_soon(on_signals)
            try:
                await consumer.run()
            except Exception as exc:  # raised below, outside the task group, unwrapped
                failures.append(exc)
            finally:
                with anyio.CancelScope(shield=True):
                    await consumer.pipeline.aclose()
                group.cancel_scope.cancel()

    anyio.run(main)
    if failures:
        raise failures[0]
    return consumer.stats  # also after a second signal cut `run` short
