"""Whether a run exports traces, and the exporter it uses: decided without importing the SDK when off."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from proctor.errors import ConfigError

if TYPE_CHECKING:
    from proctor.traces._export import TraceExport

__all__ = ["ENDPOINT_VARIABLES", "export_wanted", "open_export"]

ENDPOINT_VARIABLES = ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_ENDPOINT")
"""The environment variables that name a collector (and turn exporting on, as in every OTel tool)."""


def export_wanted(enabled: bool, endpoint: str | None) -> bool:
    """Whether to export: asked for (`--otel`, an endpoint), or a collector named in the environment.

    `OTEL_SDK_DISABLED=true` turns it off, as the SDK specifies, unless asked for on the command line.
    """
    if enabled or endpoint:
        return True
    if os.environ.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
        return False
    return any(os.environ.get(name, "").strip() for name in ENDPOINT_VARIABLES)


def open_export(
    *,
    enabled: bool,
    endpoint: str | None,
    url_template: str | None = None,
    target: str = "agent",
    run_id: str | None = None,
) -> TraceExport | None:
    """The run's trace exporter, or `None` when the run exports nothing (then no SDK is imported).

    Args:
        enabled: `--otel`.
        endpoint: `--otel-endpoint` (a collector's base URL); default from `OTEL_EXPORTER_OTLP_*`.
        url_template: A trace link template naming `{trace_id}`.
        target: The agent's name for the turn spans.
        run_id: The run's id (a resource attribute).

    Raises:
        ConfigError: The `otel` extra is not installed, or the endpoint or protocol is wrong.
    """
    if url_template is not None and not url_template.startswith(("http://", "https://")):
        raise ConfigError(f"--trace-url {url_template!r}: expected an http(s) URL naming {{trace_id}}")
    if url_template is not None and "{trace_id}" not in url_template:
        raise ConfigError(
            f"--trace-url {url_template!r} must name {{trace_id}}, e.g. http://localhost:16686/trace/{{trace_id}}"
        )
    if not export_wanted(enabled, endpoint):
        return None
    try:
        # optional extra: the SDK loads only for a run that exports traces
        from proctor.traces._export import TraceExport, build_exporter
    except ImportError as exc:
        raise ConfigError(
            f"exporting traces needs the OpenTelemetry SDK: pip install 'proctor-eval[otel]' ({exc})"
        ) from None
    return TraceExport(build_exporter(endpoint), target=target, run_id=run_id, url_template=url_template)
