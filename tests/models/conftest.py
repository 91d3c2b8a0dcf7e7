from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from proctor.models import ModelCache, ModelSettings
from servers.model_server import Script

_PROVIDER_ENV = (
    "OPENAI_BASE_URL",
    "OLLAMA_HOST",
    "ANTHROPIC_API_KEY",
    "ANTHROPIC_BASE_URL",
    "GEMINI_API_KEY",
    "GOOGLE_API_KEY",
    "AWS_REGION",
    "AWS_DEFAULT_REGION",
)


@pytest.fixture(autouse=True)
def _isolated(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """No provider settings from the developer's shell; the default cache directory lands in tmp_path."""
    for name in _PROVIDER_ENV:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.chdir(tmp_path)


@pytest.fixture
def cache(tmp_path: Path) -> ModelCache:
    return ModelCache(tmp_path / "cache")


def fast_settings(script: Script, **overrides: Any) -> ModelSettings:
    """Settings pointing at a scripted server, with short back-offs and no cache unless given."""
    values: dict[str, Any] = {
        "base_url": script.base_url,
        "api_key": "test-key",
        "retry_initial_wait": 0.01,
        "retry_max_wait": 0.05,
        "cache": None,
    }
    values.update(overrides)
    return ModelSettings(**values)


@pytest.fixture
def make_settings() -> Callable[..., ModelSettings]:
    return fast_settings
