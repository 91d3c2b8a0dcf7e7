"""A content-addressed on-disk cache of model calls.

The key is the sha256 of the canonical JSON of everything that decides the answer: provider, model,
endpoint, messages, the sampling parameters and the response schema. Each entry is one JSON file,
`<dir>/<key[:2]>/<key>.json`, written atomically (a temporary file, then a rename), so concurrent
runs sharing a directory never read a half-written entry. A hit costs nothing and is marked `cached`.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import threading
from contextlib import suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from proctor.models._base import GenerateConfig, ModelResponse
from proctor.transcript import Usage

__all__ = ["DEFAULT_CACHE_DIR", "ModelCache", "cache_key"]

logger = logging.getLogger("proctor.models")

DEFAULT_CACHE_DIR = ".proctor/cache"
"""Where the cache lives unless told otherwise (relative to the working directory)."""

_FORMAT = 1

_MADE_DIRS: set[Path] = set()
"""Cache shard directories this process has already created."""


def cache_key(
    *,
    provider: str,
    model: str,
    endpoint: str,
    messages: list[dict[str, str]],
    config: GenerateConfig,
    response_schema: dict[str, Any] | None,
) -> str:
    """Return the cache key of a call: sha256 hex of its canonical JSON.

    Args:
        provider: The provider name.
        model: The model id.
        endpoint: Where the request goes (base URL or region), so one name on two servers differs.
        messages: The messages sent.
        config: The call's parameters (the timeout is left out).
        response_schema: The JSON Schema asked for, if any.

    Returns:
        64 hex digits.
    """
    material = {
        "v": _FORMAT,
        "provider": provider,
        "model": model,
        "endpoint": endpoint,
        "messages": messages,
        "params": config.cache_params(),
        "schema": response_schema,
    }
    text = json.dumps(material, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


@dataclass(frozen=True, slots=True)
class ModelCache:
    """Where and when model calls are cached. Equal settings compare equal, so models built with them are shared.

    By default only deterministic judge calls are cached: role `judge` at temperature 0.
    """

    directory: Path | str = field(default=Path(DEFAULT_CACHE_DIR))
    """The cache directory (created on first write; kept as an absolute `Path`: a relative one is taken from
    the working directory when the cache is made, so a later `chdir` does not move it)."""
    enabled: bool = True
    """`False` bypasses the cache: nothing is read or written."""
    roles: tuple[str, ...] = ("judge",)
    """Roles whose calls are cached."""
    any_temperature: bool = False
    """Also cache calls at a temperature above 0 (their answers are then replayed, not re-sampled)."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "directory", Path(self.directory).absolute())
        object.__setattr__(self, "roles", tuple(self.roles))

    @property
    def root(self) -> Path:
        """The cache directory as a `Path`."""
        return Path(self.directory)

    def applies(self, role: str, config: GenerateConfig) -> bool:
        """Return whether a call with this role and configuration is looked up and stored."""
        if not self.enabled or role not in self.roles:
            return False
        return self.any_temperature or config.temperature == 0

    def path(self, key: str) -> Path:
        """Return the file an entry is stored in."""
        return self.root / key[:2] / f"{key}.json"

    def get(self, key: str) -> ModelResponse | None:
        """Return the stored response for `key`, or `None` (an unreadable entry counts as a miss).

        Args:
            key: A key from `cache_key`.

        Returns:
            The response, marked `cached`, with zero usage and cost; or `None`.
        """
        path = self.path(key)
        try:
            data = json.loads(path.read_bytes())
            response = ModelResponse.from_dict(data["response"])
        except FileNotFoundError:
            return None
        except (OSError, ValueError, KeyError, TypeError) as exc:
            logger.warning("ignoring unreadable model cache entry %s: %s", path, exc)
            return None
        response.cached = True
        response.usage = Usage()
        response.cost_usd = 0.0
        response.latency_ms = 0.0
        return response

    def put(self, key: str, response: ModelResponse, *, request: dict[str, Any] | None = None) -> None:
        """Store a response atomically (failures to write are logged, never raised).

        Args:
            key: A key from `cache_key`.
            response: The response to store (without its `raw` body).
            request: A short description of the request, kept in the entry for people reading it.
        """
        path = self.path(key)
        entry = {"format": _FORMAT, "key": key, "request": request or {}, "response": response.to_dict()}
        # Hot path (one write per judge cache miss, on the event loop): the C JSON encoder, directories
        # created once per process, and a temp name from the key and pid instead of mkstemp (~200 us -> ~60).
        data = json.dumps(entry, ensure_ascii=False).encode("utf-8")
        tmp = path.parent / f".{key[:16]}.{os.getpid()}.{threading.get_ident()}.tmp"
        try:
            if path.parent not in _MADE_DIRS:
                path.parent.mkdir(parents=True, exist_ok=True)
                _MADE_DIRS.add(path.parent)
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
            try:
                with os.fdopen(fd, "wb") as handle:
                    handle.write(data)
                os.replace(tmp, path)
            except BaseException:
                with suppress(OSError):
                    os.unlink(tmp)
                raise
        except OSError as exc:
            _MADE_DIRS.discard(path.parent)
            logger.warning("cannot write model cache entry %s: %s", path, exc)

    def clear(self) -> int:
        """Delete every entry; returns how many were deleted."""
        count = 0
        if not self.root.is_dir():
            return 0
        for entry in self.root.glob("*/*.json"):
            with suppress(OSError):
                entry.unlink()
                count += 1
        return count
