"""Cassettes: the calls a real tool server answered, recorded once and replayed deterministically.

A cassette is a JSON file:

```json
{"proctor_cassette": 1,
 "tools": [{"name": "get_weather", "description": "...", "inputSchema": {...}}],
 "calls": [{"tool": "get_weather", "arguments": {"city": "Oslo"},
            "results": [{"content": [{"type": "text", "text": "Rain"}], "isError": false}]}]}
```

A call is looked up by its tool and its arguments (as canonical JSON). The n-th identical call of a
trial gets the n-th recorded result (the last one repeats), so a tool that answered differently the
second time replays the same way; recording adds a result only when a trial makes that call more often
than the cassette holds. Files are written atomically (a temporary file renamed over the old one).
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any

from proctor.errors import ConfigError
from proctor.tools._answer import ToolAnswer, call_key

__all__ = ["CASSETTE_VERSION", "Cassette"]

CASSETTE_VERSION = 1
"""The cassette format's version (`proctor_cassette`)."""


class Cassette:
    """One cassette file in memory; shared by every trial of a run that names it."""

    def __init__(self, path: Path) -> None:
        """Read the file when it exists (a missing file is an empty cassette, to record into).

        Raises:
            ConfigError: The file exists but is not a cassette.
        """
        self.path = path
        self.tools: dict[str, dict[str, Any]] = {}
        """Tool definitions as the server listed them (`name`, `description`, `inputSchema`)."""
        self._calls: dict[str, dict[str, Any]] = {}
        self.dirty = False
        """Something was recorded since the file was last written."""
        if path.exists():
            self._read()

    @property
    def exists(self) -> bool:
        """Whether the file exists (replaying from a missing file is an error)."""
        return self.path.exists()

    def _read(self) -> None:
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise ConfigError(f"cannot read cassette {self.path}: {exc}") from None
        if not isinstance(data, dict) or data.get("proctor_cassette") != CASSETTE_VERSION:
            raise ConfigError(
                f"{self.path} is not a Proctor cassette (expected 'proctor_cassette: {CASSETTE_VERSION}')"
            )
        for tool in data.get("tools") or []:
            self.tools[str(tool["name"])] = dict(tool)
        for call in data.get("calls") or []:
            key = call_key(str(call["tool"]), dict(call.get("arguments") or {}))
            self._calls[key] = {"tool": call["tool"], "arguments": call.get("arguments") or {}, "results": []}
            self._calls[key]["results"] = list(call.get("results") or [])

    def lookup(self, name: str, arguments: dict[str, Any], occurrence: int) -> ToolAnswer | None:
        """The recorded answer to the `occurrence`-th (0-based) identical call, or `None` when not recorded."""
        call = self._calls.get(call_key(name, arguments))
        if call is None or not call["results"]:
            return None
        results = call["results"]
        return ToolAnswer.from_mcp(results[min(occurrence, len(results) - 1)])

    def holds(self, name: str, arguments: dict[str, Any], occurrence: int) -> bool:
        """Whether the `occurrence`-th (0-based) identical call has its own recorded result."""
        call = self._calls.get(call_key(name, arguments))
        return call is not None and len(call["results"]) > occurrence

    def record(self, name: str, arguments: dict[str, Any], occurrence: int, answer: ToolAnswer) -> None:
        """Keep the answer to the `occurrence`-th identical call, unless the cassette already holds one."""
        key = call_key(name, arguments)
        call = self._calls.setdefault(key, {"tool": name, "arguments": arguments, "results": []})
        if len(call["results"]) <= occurrence:
            call["results"].append(answer.to_mcp())
            self.dirty = True

    def record_tool(self, definition: dict[str, Any]) -> None:
        """Keep a tool's definition (as the server lists it), for replays without the server."""
        name = str(definition["name"])
        if self.tools.get(name) != definition:
            self.tools[name] = definition
            self.dirty = True

    def save(self) -> None:
        """Write the file atomically when something was recorded.

        Raises:
            ConfigError: The file cannot be written.
        """
        if not self.dirty:
            return
        data = {
            "proctor_cassette": CASSETTE_VERSION,
            "tools": [self.tools[name] for name in sorted(self.tools)],
            "calls": sorted(self._calls.values(), key=lambda c: call_key(c["tool"], c["arguments"])),
        }
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            fd, temporary = tempfile.mkstemp(prefix=f".{self.path.name}.", dir=self.path.parent)
            with os.fdopen(fd, "w", encoding="utf-8") as out:
                json.dump(data, out, indent=1, ensure_ascii=False)
                out.write("\n")
            os.replace(temporary, self.path)
        except OSError as exc:
            raise ConfigError(f"cannot write cassette {self.path}: {exc}") from None
        self.dirty = False
