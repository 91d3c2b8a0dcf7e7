"""Inline assertions: `type: python`, a short expression or a function in a Python file next to the suite.

```yaml
assert:
  - {type: python, value: "'Paris' in reply and len(reply) < 200"}      # an expression: runs anywhere
  - {type: python, value: checks/capitals.py:names_the_capital}         # a file function: trusted only
```

* An **expression** runs in the sandbox worker processes of the `expression` check
  (`proctor.checks._sandbox`: no imports, no attribute walk, hard CPU-time and memory limits), with the
  names `reply` (the reply's text; the last reply for a conversation check), `tool_calls` (the reply's
  calls, or every call of the conversation), `transcript` (`[{role, content, toolCalls}]`), `turn`,
  `case`, `objectContext` and `evaluation`, as the `expression` check has them. It is allowed in any
  suite.
* A **file function** (`path.py:function`, the path relative to the suite file and inside the project
  root) is imported and called; it runs with Proctor's own rights, so only a trusted suite may name one
  (`--trust`, or `trusted: true` in `proctor.yaml`); an untrusted suite gets a located load error. It
  is called with the keyword arguments it declares among `reply` (str), `transcript`
  (`list[proctor.transcript.Message]`) and `context` (a dict: `case`, `turn`, `tool_calls`,
  `object_context`); sync functions run in a worker thread, async ones are awaited.

Either may return a bool (passed or failed), a score in 0..1 (passed at the assertion's
`options.threshold`, default 0.5), a `(bool or score, reason)` pair, or a `CheckResult` (a file function).
Anything else, or an exception, makes the check an `error` with the traceback kept: an error is never a
score.
"""

from __future__ import annotations

import hashlib
import importlib.util
import inspect
import sys
import threading
from collections.abc import Callable, Mapping
from pathlib import Path
from types import ModuleType
from typing import Annotated, Any

import anyio.to_thread
from pydantic import AfterValidator, TypeAdapter

from proctor.checks._expression import compile_expression, evaluation_data, to_data
from proctor.checks._registry import CheckContext, CheckType, registry
from proctor.checks._result import CheckResult
from proctor.checks._sandbox import ExpressionError, NotBool, evaluate_off_loop
from proctor.suite import PYTHON_FILE_REFERENCE, AssertionSpec
from proctor.transcript import Message

__all__ = ["DEFAULT_THRESHOLD", "FILE_REFERENCE", "is_file_reference"]

FILE_REFERENCE = PYTHON_FILE_REFERENCE
"""`path.py:function`: a function in a Python file (any other value is an expression)."""
DEFAULT_THRESHOLD = 0.5
"""The score at which a scored result passes when the assertion gives no `options.threshold`."""


def is_file_reference(value: str) -> bool:
    """Whether a `python` check's value names a file function (else it is an expression)."""
    return FILE_REFERENCE.match(value) is not None


def _valid(value: str) -> str:
    if not is_file_reference(value):
        compile_expression(value)  # ExpressionError is a ValueError: a located load-time error
    return value


_VALUE = TypeAdapter(Annotated[str, AfterValidator(_valid)])

_modules: dict[tuple[str, int], ModuleType] = {}
_modules_lock = threading.Lock()


def load_function(reference: str) -> Callable[..., Any]:
    """Import the file a `path.py:function` reference names (once per file version) and return the function.

    Raises:
        ImportError: The file cannot be imported.
        AttributeError: It has no such function.
        TypeError: The name is not a function.
    """
    match = FILE_REFERENCE.match(reference)
    if match is None:
        raise ValueError(f"not a file function: {reference!r} (expected path.py:function)")
    path = Path(match["path"]).resolve()
    key = (str(path), path.stat().st_mtime_ns)
    with _modules_lock:
        module = _modules.get(key)
        if module is None:
            name = "proctor_check_" + hashlib.sha256(key[0].encode()).hexdigest()[:16]
            spec = importlib.util.spec_from_file_location(name, path)
            if spec is None or spec.loader is None:
                raise ImportError(f"cannot import {path}")
            module = importlib.util.module_from_spec(spec)
            sys.modules[name] = module  # dataclasses and pickling look their module up
            spec.loader.exec_module(module)
            _modules[key] = module
    function = getattr(module, match["function"], None)
    if function is None:
        public = sorted(n for n, v in vars(module).items() if callable(v) and not n.startswith("_"))
        raise AttributeError(f"{path} has no function {match['function']!r}; it has: {', '.join(public) or 'none'}")
    if not callable(function):
        raise TypeError(f"{path}:{match['function']} is a {type(function).__name__}, not a function")
    return function  # type: ignore[no-any-return]


def _calls(context: CheckContext) -> list[Any]:
    if context.reply is not None:
        return list(context.reply.tool_calls)
    return [call for message in context.transcript for call in message.tool_calls]


def _reply_text(context: CheckContext) -> str | None:
    if context.reply is not None:
        return context.reply.text
    replies = [message.content for message in context.transcript if message.role == "assistant"]
    return replies[-1] if replies else None


async def _check_python(spec: AssertionSpec, context: CheckContext) -> CheckResult:
    value = spec.value
    if not isinstance(value, str):
        raise TypeError(f"a python check needs a string; found {type(value).__name__}")
    if is_file_reference(value):
        produced = await _call_function(value, context)
        kind = "function"
    else:
        produced = await _evaluate(value, context)
        kind = "expression"
    return _result(spec, context, produced, kind)


async def _call_function(reference: str, context: CheckContext) -> Any:
    function = load_function(reference)
    arguments = {
        "reply": _reply_text(context),
        "transcript": list(context.transcript),
        "context": {
            "case": context.case,
            "turn": context.turn,
            "tool_calls": _calls(context),
            "object_context": context.object_context,
        },
    }
    parameters = inspect.signature(function).parameters
    takes_all = any(p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters.values())
    chosen = {name: item for name, item in arguments.items() if takes_all or name in parameters}
    if inspect.iscoroutinefunction(function):
        return await function(**chosen)
    return await anyio.to_thread.run_sync(lambda: function(**chosen))


async def _evaluate(expression: str, context: CheckContext) -> Any:
    compile_expression(expression)  # a malformed one fails here, without a process round trip
    names = {
        "reply": _reply_text(context),
        "tool_calls": [call.to_dict() for call in _calls(context)],
        "transcript": _transcript_data(context.transcript),
        "turn": context.turn,
        "case": context.case,
    }
    result = await evaluate_off_loop(
        expression, to_data(context.object_context), evaluation_data(context.transcript, context.case), "", names
    )
    if isinstance(result, NotBool):
        if result.type_name in ("int", "float"):
            return float(result.text)
        raise ExpressionError(expression, None, f"gave {result.text} ({result.type_name}), not a bool or a score")
    return result


def _transcript_data(transcript: list[Message]) -> list[dict[str, Any]]:
    return [
        {"role": m.role, "content": m.content, "toolCalls": [c.to_dict() for c in m.tool_calls]} for m in transcript
    ]


def _result(spec: AssertionSpec, context: CheckContext, produced: Any, kind: str) -> CheckResult:
    """The `CheckResult` of what the expression or function returned."""
    if isinstance(produced, CheckResult):
        produced.name = produced.name or spec.display_name()
        produced.type = spec.type
        produced.weight = spec.weight
        produced.turn = context.turn
        return produced
    reason = ""
    if isinstance(produced, tuple) and len(produced) == 2 and isinstance(produced[1], str):
        produced, reason = produced
    threshold = spec.options.threshold if spec.options.threshold is not None else DEFAULT_THRESHOLD
    details: Mapping[str, Any]
    if isinstance(produced, bool):
        ok, score = produced, 1.0 if produced else 0.0
        details = {kind: spec.value}
        reason = reason or f"expected {spec.value} to be true; it is {'true' if ok else 'false'}"
    elif isinstance(produced, int | float) and 0.0 <= produced <= 1.0:
        score = float(produced)
        ok = score >= threshold
        details = {kind: spec.value, "threshold": threshold}
        reason = reason or f"{spec.value} scored {score:.3g} ({'at or above' if ok else 'below'} {threshold:g})"
    else:
        found = f"{type(produced).__name__} {produced!r}"[:120]
        raise TypeError(f"{spec.value} returned {found}; expected a bool, a score in 0..1, or a CheckResult")
    return CheckResult(
        name=spec.display_name(),
        type=spec.type,
        status="passed" if ok else "failed",
        score=score,
        weight=spec.weight,
        reason=reason,
        turn=context.turn,
        details=dict(details),
    )


registry.register(
    CheckType(
        "python",
        "python",
        "An inline assertion: a short Python expression over reply, tool_calls, transcript (sandboxed), or "
        "path.py:function in a trusted suite; returns a bool, a score in 0..1 or a CheckResult.",
        _check_python,
        value=_VALUE,
        negatable=False,
        scope="any",
    )
)
