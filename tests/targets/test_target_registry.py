from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from proctor.errors import ConfigError
from proctor.suite import HttpTargetSpec, LobuTargetSpec, OpenAITargetSpec, PythonTargetSpec
from proctor.targets import (
    HttpTarget,
    LobuTarget,
    OpenAITarget,
    PythonTarget,
    Session,
    SessionContext,
    Target,
    _registry,
    build_target,
    register_target,
    target_types,
)

pytestmark = pytest.mark.anyio


@pytest.fixture(autouse=True)
def isolated_registry(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_registry, "_factories", dict(_registry._factories))


class EchoTarget:
    def __init__(self, spec: Any, max_connections: int = 0) -> None:
        self.spec = spec
        self.max_connections = max_connections
        self.name = "echo"

    async def open_session(self, context: SessionContext) -> Session:
        raise AssertionError("the registry tests build targets; they never open sessions")

    async def aclose(self) -> None:
        return None


def test_builtins_are_registered() -> None:
    assert target_types() == ["a2a", "embabel", "http", "lobu", "mcp", "openai", "python"]


async def test_build_builtin_specs(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LOBU_AGENT", "bot")
    specs = [
        (OpenAITargetSpec.model_validate({"base_url": "http://127.0.0.1:1/v1"}), OpenAITarget),
        (HttpTargetSpec.model_validate({"request": {"url": "http://127.0.0.1:1/"}}), HttpTarget),
        (LobuTargetSpec(gateway="http://127.0.0.1:1"), LobuTarget),
        (PythonTargetSpec(callable="servers.pyagents:echo"), PythonTarget),
    ]
    for spec, cls in specs:
        target = build_target(spec, max_connections=3)
        assert type(target) is cls
        assert isinstance(target, Target)
        session = await target.open_session(SessionContext(case="c", trial=1)) if cls is PythonTarget else None
        assert session is None or isinstance(session, Session)
        await target.aclose()
    openai = build_target(specs[0][0], max_connections=3)
    assert openai._client.max_connections == 3  # type: ignore[attr-defined]
    await openai.aclose()


async def test_build_from_mapping_validates() -> None:
    target = build_target({"type": "openai", "base_url": "http://127.0.0.1:1/v1", "model": "m"})
    assert isinstance(target, OpenAITarget) and target.spec.model == "m"
    await target.aclose()
    with pytest.raises(ConfigError, match=r"^invalid openai target: base_url: Field required$"):
        build_target({"type": "openai"})


def test_unknown_type_lists_known_types() -> None:
    with pytest.raises(
        ConfigError,
        match=r"unknown target type 'carrier-pigeon'; known types: a2a, embabel, http, lobu, mcp, openai, python",
    ):
        build_target({"type": "carrier-pigeon"})
    with pytest.raises(ConfigError, match="has no 'type'"):
        build_target({"url": "x"})


def test_register_custom_factory() -> None:
    register_target("echo", EchoTarget)
    target = build_target({"type": "echo", "x": 1}, max_connections=5)
    assert isinstance(target, EchoTarget)
    assert target.spec == {"type": "echo", "x": 1} and target.max_connections == 5
    register_target("plain", lambda spec: EchoTarget(spec))
    plain = build_target({"type": "plain"})
    assert isinstance(plain, EchoTarget) and plain.max_connections == 0
    assert "echo" in target_types() and "plain" in target_types()
    with pytest.raises(ValueError, match="already registered"):
        register_target("echo", EchoTarget)
    register_target("echo", lambda spec: EchoTarget(spec, 9), replace=True)
    assert build_target({"type": "echo"}).max_connections == 9  # type: ignore[attr-defined]


def test_plugin_entry_point_is_loaded_lazily(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "proctor_fake_plugin.py").write_text(
        "class FakeTarget:\n"
        "    def __init__(self, spec, **options):\n"
        "        self.name = 'fake'\n"
        "        self.spec = spec\n"
        "        self.options = options\n"
        "def broken(spec):\n"
        "    raise AssertionError\n"
    )
    dist = tmp_path / "proctor_fake_plugin-1.0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: proctor-fake-plugin\nVersion: 1.0\n")
    (dist / "entry_points.txt").write_text(
        "[proctor.targets]\nfake = proctor_fake_plugin:FakeTarget\nmissing = proctor_fake_plugin:Nope\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    assert "fake" not in target_types()
    target: Any = build_target({"type": "fake"}, max_connections=4)
    assert target.name == "fake" and target.options == {"max_connections": 4}
    assert "fake" in target_types()
    with pytest.raises(ConfigError, match=r"cannot load target plugin 'missing' \(proctor_fake_plugin:Nope\)"):
        build_target({"type": "missing"})
    monkeypatch.delitem(__import__("sys").modules, "proctor_fake_plugin", raising=False)
