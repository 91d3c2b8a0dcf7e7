"""The trust check a loaded suite goes through: code it names, and the files it names, per `Trust`."""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Collection, Iterator, Mapping
from importlib.metadata import entry_points
from pathlib import Path
from typing import Any

from proctor.suite._model import AssertionSpec, CheckCatalog, SuiteFileSpec
from proctor.suite._suite import Case
from proctor.suite._targets import McpTargetSpec, PythonTargetSpec
from proctor.suite._tools import ToolServerSpec
from proctor.suite._trust import HOW_TO_TRUST, FileRefError, Trust, read_named_file, read_named_text

__all__ = [
    "PYTHON_FILE_REFERENCE",
    "assertion_types",
    "code_problems",
    "judge_prompts",
    "python_files",
    "with_python_files",
]

Loc = tuple[str | int, ...]

PYTHON_FILE_REFERENCE = re.compile(r"^(?P<path>[^\s:][^:]*\.py):(?P<function>[A-Za-z_][A-Za-z0-9_]*)$")
"""A `python` check's value naming a function in a file (`path.py:function`); any other value is an expression."""


def code_problems(
    spec: SuiteFileSpec, trust: Trust | None, checks: CheckCatalog | None, types: Collection[str] | None = None
) -> list[tuple[Loc, str]]:
    """The code an untrusted suite names, each as `(location, message)`; nothing when trusted.

    Python targets (their `callable`, `object_context` and `seed` hooks), check types and model providers
    that come from plugin packages run code; a suite may name them only when the user trusts it. `types`:
    the file's `assertion_types`, when the caller has them.
    """
    if trust is None or trust.trusted:
        return []
    problems: list[tuple[Loc, str]] = []
    targets: list[tuple[Loc, Any]] = [(("target",), spec.target)]
    targets.extend((("cases", i, "target"), case.target) for i, case in enumerate(spec.cases or []))
    for where, target in targets:
        if isinstance(target, PythonTargetSpec) and not trust.target_from_command_line:
            for field in ("callable", "object_context", "seed"):
                reference = getattr(target, field)
                if reference is not None:
                    message = f"the suite names Python code to run ({reference}); {HOW_TO_TRUST}"
                    problems.append(((*where, field), message))
        if isinstance(target, McpTargetSpec) and target.command is not None and not trust.target_from_command_line:
            program = " ".join(target.command)
            message = f"the suite names a program to start as the agent ({program}); {HOW_TO_TRUST}"
            problems.append(((*where, "command"), message))
    for loc, command in _tool_commands(spec):
        message = f"the suite names a program to start as a tool server ({' '.join(command)}); {HOW_TO_TRUST}"
        problems.append((loc, message))
    for loc, model in _models(spec):
        plugin = _model_plugin(model)
        if plugin is not None:
            message = f"model {model!r} comes from the provider plugin {plugin}; {HOW_TO_TRUST}"
            problems.append((loc, message))
    types = assertion_types(spec) if types is None else types  # the walks below: only for such a check
    if "python" in types:
        for loc, assertion in _assertions(spec):
            if _python_file(assertion) is not None:
                message = f"the suite names Python code to run ({assertion.value}); {HOW_TO_TRUST}"
                problems.append(((*loc, "value"), message))
    plugin_of = getattr(checks, "plugin_of", None)
    if plugin_of is not None and any(plugin_of(name) is not None for name in types):
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


def assertion_types(spec: SuiteFileSpec) -> set[str]:
    """The `type` of every assertion in the file (what `_assertions` walks), without their locations."""
    types: set[str] = set()
    add = types.add
    for holder in (spec, *(spec.cases or ())):
        for assertion in holder.assert_:
            add(assertion.type)
        for assertion in holder.assertions:
            add(assertion.type)
        for turn in holder.turns or ():
            for assertion in turn.assert_:
                add(assertion.type)
        for step in holder.script or ():
            for assertion in (*step.assert_, *(step.check or ())):
                add(assertion.type)
    return types


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
        for step_index, step in enumerate(getattr(holder, "script", None) or []):
            for index, assertion in enumerate(step.assert_):
                yield (*loc, "script", step_index, "assert", index), assertion
            for index, assertion in enumerate(step.check or []):
                yield (*loc, "script", step_index, "check", index), assertion


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


def _python_file(assertion: AssertionSpec) -> re.Match[str] | None:
    if assertion.type != "python" or not isinstance(assertion.value, str):
        return None
    return PYTHON_FILE_REFERENCE.match(assertion.value)


def python_files(
    spec: SuiteFileSpec, base: Path, root: Path | None, types: Collection[str] | None = None
) -> tuple[dict[int, AssertionSpec], list[tuple[Loc, str]]]:
    """The `python` checks that name a file function, with the path made absolute (relative to `base`).

    The file must exist and lie inside `root` (`None`: anywhere); it is not imported here. `types`: the
    file's `assertion_types`, when the caller has them.

    Returns:
        Each such assertion (by `id`) with its resolved value, and the problems found.
    """
    resolved: dict[int, AssertionSpec] = {}
    problems: list[tuple[Loc, str]] = []
    if "python" not in (assertion_types(spec) if types is None else types):
        return resolved, problems  # no `python` check: nothing to walk for
    for loc, assertion in _assertions(spec):
        match = _python_file(assertion)
        if match is None:
            continue
        try:
            read_named_file(match["path"], base, root, "python check file")
        except FileRefError as exc:
            problems.append(((*loc, "value"), str(exc)))
            continue
        value = f"{(base / match['path']).resolve()}:{match['function']}"
        resolved[id(assertion)] = assertion.model_copy(update={"value": value})
    return resolved, problems


def with_python_files(case: Case, resolved: Mapping[int, AssertionSpec]) -> Case:
    """`case` with its `python` file checks replaced by their resolved twins (`python_files`)."""
    if not resolved:
        return case
    turns = tuple(
        turn.model_copy(update={"assert_": [resolved.get(id(a), a) for a in turn.assert_]}) for turn in case.turns
    )
    script = tuple(
        step.model_copy(
            update={
                "assert_": [resolved.get(id(a), a) for a in step.assert_],
                "check": None if step.check is None else [resolved.get(id(a), a) for a in step.check],
            }
        )
        for step in case.script
    )
    asserts = tuple(resolved.get(id(a), a) for a in case.assert_)
    return dataclasses.replace(case, turns=turns, assert_=asserts, script=script)
