"""The trust check a loaded suite goes through: code it names, and the files it names, per `Trust`."""

from __future__ import annotations

from collections.abc import Iterator
from importlib.metadata import entry_points
from pathlib import Path
from typing import Any

from proctor.suite._model import AssertionSpec, CheckCatalog, SuiteFileSpec
from proctor.suite._targets import McpTargetSpec, PythonTargetSpec
from proctor.suite._tools import ToolServerSpec
from proctor.suite._trust import HOW_TO_TRUST, FileRefError, Trust, read_named_text

__all__ = ["code_problems", "judge_prompts"]

Loc = tuple[str | int, ...]


def code_problems(spec: SuiteFileSpec, trust: Trust | None, checks: CheckCatalog | None) -> list[tuple[Loc, str]]:
    """The code an untrusted suite names, each as `(location, message)`; nothing when trusted.

    Python targets (their `callable`, `object_context` and `seed` hooks), check types and model providers
    that come from plugin packages run code; a suite may name them only when the user trusts it.
    """
    if trust is None or trust.trusted:
        return []
    problems: list[tuple[Loc, str]] = []
    target = spec.target
    if isinstance(target, PythonTargetSpec) and not trust.target_from_command_line:
        for field in ("callable", "object_context", "seed"):
            reference = getattr(target, field)
            if reference is not None:
                message = f"the suite names Python code to run ({reference}); {HOW_TO_TRUST}"
                problems.append((("target", field), message))
    if isinstance(target, McpTargetSpec) and target.command is not None and not trust.target_from_command_line:
        message = f"the suite names a program to start as the agent ({' '.join(target.command)}); {HOW_TO_TRUST}"
        problems.append((("target", "command"), message))
    for loc, command in _tool_commands(spec):
        message = f"the suite names a program to start as a tool server ({' '.join(command)}); {HOW_TO_TRUST}"
        problems.append((loc, message))
    for loc, model in _models(spec):
        plugin = _model_plugin(model)
        if plugin is not None:
            message = f"model {model!r} comes from the provider plugin {plugin}; {HOW_TO_TRUST}"
            problems.append((loc, message))
    plugin_of = getattr(checks, "plugin_of", None)
    if plugin_of is not None:
        for loc, assertion in _assertions(spec):
            plugin = plugin_of(assertion.type)
            if plugin is not None:
                message = f"check type {assertion.type!r} runs code from the plugin {plugin}; {HOW_TO_TRUST}"
                problems.append(((*loc, "type"), message))
    return problems


MODEL_PLUGINS = "proctor.models"
"""The entry-point group of model provider plugins (`proctor.models._registry.ENTRY_POINT_GROUP`)."""


def _tool_commands(spec: SuiteFileSpec) -> Iterator[tuple[Loc, list[str]]]:
    """The stdio tool servers (`tools.<name>.proxy.command`) of the file and its cases."""
    blocks: list[tuple[Loc, dict[str, Any]]] = [((), spec.tools)]
    blocks.extend((("cases", i), case.tools) for i, case in enumerate(spec.cases or []))
    for loc, tools in blocks:
        for name, tool in tools.items():
            if tool.proxy is not None and tool.proxy.command is not None:
                yield (*loc, "tools", name, "proxy", "command"), tool.proxy.command
            source = tool.schema_from
            if isinstance(source, ToolServerSpec) and source.command is not None:
                yield (*loc, "tools", name, "schema_from", "command"), source.command


def _models(spec: SuiteFileSpec) -> Iterator[tuple[Loc, str]]:
    if spec.judge is not None:
        yield ("judge", "model"), spec.judge.model
    if spec.simulator is not None:
        yield ("simulator",), spec.simulator


def _model_plugin(model: str) -> str | None:
    """The plugin (entry point) a `provider/model`'s provider comes from; built-ins are no entry point."""
    provider = model.partition("/")[0]
    entry = next((e for e in entry_points(group=MODEL_PLUGINS) if e.name == provider), None)
    return None if entry is None else f"{entry.value} (entry point {entry.name!r})"


def _assertions(spec: SuiteFileSpec) -> Iterator[tuple[Loc, AssertionSpec]]:
    holders: list[tuple[Loc, Any]] = [((), spec)]
    holders.extend((("cases", index), case) for index, case in enumerate(spec.cases or []))
    for loc, holder in holders:
        for field, alias in (("assert_", "assert"), ("assertions", "assertions")):
            for index, assertion in enumerate(getattr(holder, field, []) or []):
                yield (*loc, alias, index), assertion
        for turn_index, turn in enumerate(getattr(holder, "turns", None) or []):
            for index, assertion in enumerate(turn.assert_):
                yield (*loc, "turns", turn_index, "assert", index), assertion


def judge_prompts(spec: SuiteFileSpec, base: Path, trust: Trust | None) -> tuple[dict[str, str], list[tuple[Loc, str]]]:
    """The judge's prompt overrides with the files they name read, confined to the project root.

    Returns:
        The prompts (a file's text in place of its name) and the problems found.
    """
    prompts = dict(spec.judge.prompts) if spec.judge is not None else {}
    problems: list[tuple[Loc, str]] = []
    if trust is None:
        return prompts, problems
    for name, value in prompts.items():
        if "\n" in value or not (base / value).exists():
            continue  # the template text itself
        try:
            prompts[name] = read_named_text(value, base, trust.root, "prompt template")
        except FileRefError as exc:
            problems.append((("judge", "prompts", name), str(exc)))
    return prompts, problems
