"""`proctor._codecache`: dataclass methods and forward references compiled once, across processes.

Installing the cache changes two modules of the interpreter (`dataclasses`, `typing`), so every test that
installs it runs a fresh interpreter; the file's own rules are tested in process on a `CodeCache` alone.
"""

from __future__ import annotations

import json
import marshal
import os
import subprocess
import sys
from pathlib import Path

import pytest

from proctor import _codecache
from proctor._codecache import FORMAT, CodeCache

# Classes of every kind dataclasses generates code for, and what an observer can see of them.
PROBE = """\
import dataclasses, inspect, json, sys, typing
from proctor._codecache import install_code_cache

cache = install_code_cache()

@dataclasses.dataclass(frozen=True, slots=True, order=True)
class Point:
    x: int
    y: int = 0
    tags: list[str] = dataclasses.field(default_factory=list, compare=False)

@dataclasses.dataclass(kw_only=True)
class Options:
    name: str
    retries: int = 3
    hint: "typing.Optional[Point]" = None

@dataclasses.dataclass(eq=False)
class Twin:
    a: int

@dataclasses.dataclass(eq=False)
class OtherTwin:
    a: int

frozen_error = None
try:
    Point(1).x = 2
except dataclasses.FrozenInstanceError as exc:
    frozen_error = type(exc).__name__
seen = {
    "repr": [repr(Point(1, 2, ["t"])), repr(Options(name="n"))],
    "eq": [Point(1) == Point(1, tags=["other"]), Point(1) < Point(2), hash(Point(1)) == hash(Point(1))],
    "frozen": frozen_error,
    "signatures": [str(inspect.signature(Point)), str(inspect.signature(Options))],
    "annotations": sorted(f"{k}={v!r}" for k, v in Point.__init__.__annotations__.items()),
    "hints": str(typing.get_type_hints(Options)),
    "twins_share_code": Twin.__init__.__code__ is OtherTwin.__init__.__code__,
    "hits": cache.hits if cache else None,
    "compiled": cache.compiled if cache else None,
    "installed": "exec" in vars(dataclasses),
}
json.dump(seen, sys.stdout)
"""


@pytest.fixture(autouse=True)
def _bytecode_written(monkeypatch: pytest.MonkeyPatch) -> None:
    """In process, as in a plain `python`: the file is written (whatever PYTHONDONTWRITEBYTECODE this shell has)."""
    monkeypatch.setattr(sys, "dont_write_bytecode", False)


def _probe(environment: dict[str, str], cwd: Path) -> dict[str, object]:
    """Run PROBE in a fresh interpreter and return what it saw."""
    env = dict(os.environ)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env.update(environment)
    done = subprocess.run(
        [sys.executable, "-c", PROBE], env=env, cwd=cwd, capture_output=True, text=True, check=True, timeout=60
    )
    result: dict[str, object] = json.loads(done.stdout)
    return result


def _observable(seen: dict[str, object]) -> dict[str, object]:
    return {key: value for key, value in seen.items() if key not in ("hits", "compiled", "installed")}


def test_a_second_process_takes_its_code_from_the_file_and_sees_the_same_classes(tmp_path: Path) -> None:
    cache = tmp_path / "code.marshal"
    first = _probe({"PROCTOR_CODE_CACHE": str(cache)}, tmp_path)
    assert first["installed"] is True
    assert first["hits"] == 0 and isinstance(first["compiled"], int) and first["compiled"] > 10
    assert cache.is_file()
    second = _probe({"PROCTOR_CODE_CACHE": str(cache)}, tmp_path)
    assert second["compiled"] == 0
    assert second["hits"] == first["compiled"]
    without = _probe({"PROCTOR_CODE_CACHE": "off"}, tmp_path)
    assert without["installed"] is False
    # what the classes do, their signatures and their annotations (objects, not strings) are unchanged
    assert _observable(first) == _observable(second) == _observable(without)
    assert "<class 'int'>" in str(second["annotations"])


def test_two_classes_with_the_same_generated_source_keep_code_of_their_own(tmp_path: Path) -> None:
    cache = tmp_path / "code.marshal"
    _probe({"PROCTOR_CODE_CACHE": str(cache)}, tmp_path)
    assert _probe({"PROCTOR_CODE_CACHE": str(cache)}, tmp_path)["twins_share_code"] is False


def test_no_file_is_written_where_bytecode_is_not_but_one_present_is_read(tmp_path: Path) -> None:
    cache = tmp_path / "code.marshal"
    _probe({"PROCTOR_CODE_CACHE": str(cache), "PYTHONDONTWRITEBYTECODE": "1"}, tmp_path)
    assert not cache.exists()
    _probe({"PROCTOR_CODE_CACHE": str(cache)}, tmp_path)
    written = cache.read_bytes()
    seen = _probe({"PROCTOR_CODE_CACHE": str(cache), "PYTHONDONTWRITEBYTECODE": "1"}, tmp_path)
    assert seen["compiled"] == 0 and isinstance(seen["hits"], int) and seen["hits"] > 10
    assert cache.read_bytes() == written


@pytest.mark.parametrize(
    "content",
    [
        b"not marshal at all",
        b"",
        marshal.dumps((FORMAT, sys.hexversion - 1, {("exec", "x = 1"): compile("x = 1", "<string>", "exec")})),
        marshal.dumps((FORMAT + 1, sys.hexversion, {})),
        marshal.dumps(["a", "list"]),
    ],
    ids=["garbage", "empty", "other-python", "other-format", "other-shape"],
)
def test_a_file_that_does_not_read_as_ours_is_ignored_and_replaced(tmp_path: Path, content: bytes) -> None:
    cache = tmp_path / "code.marshal"
    cache.write_bytes(content)
    seen = _probe({"PROCTOR_CODE_CACHE": str(cache)}, tmp_path)
    assert seen["hits"] == 0
    assert _probe({"PROCTOR_CODE_CACHE": str(cache)}, tmp_path)["compiled"] == 0  # replaced by a good one


def test_a_stored_value_that_is_not_code_is_compiled_again(tmp_path: Path) -> None:
    path = tmp_path / "code.marshal"
    path.write_bytes(marshal.dumps((FORMAT, sys.hexversion, {("exec", "x = 1"): "not code"})))
    cache = CodeCache(str(path))
    namespace: dict[str, object] = {}
    cache.exec("x = 1", namespace)
    assert namespace["x"] == 1
    assert (cache.hits, cache.compiled) == (0, 1)


def test_a_functions_code_is_copied_for_a_second_use_an_expressions_is_shared(tmp_path: Path) -> None:
    path = str(tmp_path / "code.marshal")
    first = CodeCache(path)
    made = first.code("exec", "def f():\n    return 3")
    first.code("eval", "1 + 2")
    first.save()
    second = CodeCache(path)
    stored = second.code("exec", "def f():\n    return 3")
    again = second.code("exec", "def f():\n    return 3")
    assert stored is not again and stored.co_consts[0] is not again.co_consts[0]  # the function's own code too
    assert stored == again == made
    assert second.code("eval", "1 + 2") is second.code("eval", "1 + 2")
    assert eval(second.code("eval", "1 + 2")) == 3  # code compiled by the test itself
    assert (second.hits, second.compiled) == (2, 0)


def test_over_the_limit_the_file_keeps_what_the_last_process_used(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = str(tmp_path / "code.marshal")
    monkeypatch.setattr(_codecache, "MAX_ENTRIES", 3)
    first = CodeCache(path)
    for number in range(3):
        first.code("eval", f"{number} + 1")
    first.save()
    second = CodeCache(path)
    second.code("eval", "0 + 1")
    second.code("eval", "9 + 1")  # new: four entries in all, over the limit
    second.save()
    with open(path, "rb") as file:
        _, _, entries = marshal.load(file)
    assert sorted(source for _, source in entries) == ["0 + 1", "9 + 1"]


def test_nothing_is_written_when_nothing_new_was_compiled(tmp_path: Path) -> None:
    path = tmp_path / "code.marshal"
    CodeCache(str(path)).save()
    assert not path.exists()


def test_a_file_already_at_the_temporary_name_is_not_written_through(tmp_path: Path) -> None:
    path = tmp_path / "code.marshal"
    elsewhere = tmp_path / "elsewhere"
    elsewhere.write_text("untouched")
    Path(f"{path}.{os.getpid()}.tmp").symlink_to(elsewhere)
    cache = CodeCache(str(path))
    cache.code("eval", "1")
    cache.save()  # gives up this time, and clears the name
    assert (elsewhere.read_text(), path.exists(), Path(f"{path}.{os.getpid()}.tmp").exists()) == (
        "untouched",
        False,
        False,
    )
    cache.save()
    assert path.exists()


def test_an_unwritable_place_leaves_no_file_and_raises_nothing(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("a file where the directory would be")
    cache = CodeCache(str(blocker / "sub" / "code.marshal"))
    cache.code("eval", "1")
    cache.save()  # does not raise
    assert blocker.read_text().startswith("a file")


def test_the_default_file_is_in_the_users_cache_directory_not_in_the_package(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setattr(sys, "pycache_prefix", None)
    tag = sys.implementation.cache_tag
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert Path(_codecache.default_cache_path()) == tmp_path / "xdg" / "proctor" / f"code.{tag}.marshal"
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert Path(_codecache.default_cache_path()) == tmp_path / "home" / ".cache" / "proctor" / f"code.{tag}.marshal"
    monkeypatch.setattr(sys, "pycache_prefix", str(tmp_path / "prefix"))  # PYTHONPYCACHEPREFIX wins
    assert Path(_codecache.default_cache_path()) == tmp_path / "prefix" / "proctor" / f"code.{tag}.marshal"
    package = Path(_codecache.__file__).resolve().parent
    assert not Path(_codecache.default_cache_path()).is_relative_to(package)  # `pip uninstall` leaves nothing


def test_the_optimization_level_is_in_the_name(tmp_path: Path) -> None:
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path)}
    done = subprocess.run(
        [sys.executable, "-O", "-c", "from proctor._codecache import default_cache_path; print(default_cache_path())"],
        env=env, capture_output=True, text=True, check=True, timeout=60,
    )  # fmt: skip
    assert done.stdout.strip().endswith(f"code.{sys.implementation.cache_tag}.opt-1.marshal")


def test_the_file_and_its_directory_are_the_users_alone(tmp_path: Path) -> None:
    path = tmp_path / "new" / "code.marshal"
    cache = CodeCache(str(path))
    cache.code("eval", "1")
    cache.save()
    assert path.stat().st_mode & 0o777 == 0o600
    assert path.parent.stat().st_mode & 0o777 == 0o700


@pytest.mark.skipif(not hasattr(os, "getuid"), reason="no file owners on this system")
def test_a_file_others_may_write_or_another_user_owns_is_not_read(tmp_path: Path) -> None:
    path = tmp_path / "code.marshal"
    first = CodeCache(str(path))
    first.code("eval", "1 + 1")
    first.save()
    path.chmod(0o666)
    assert _hits_after_asking(path) == 0
    path.chmod(0o600)
    assert _hits_after_asking(path) == 1
    if os.getuid() == 0:  # root can give the file away
        os.chown(path, 65534, -1)
        assert _hits_after_asking(path) == 0


def _hits_after_asking(path: Path) -> int:
    cache = CodeCache(str(path))
    cache.code("eval", "1 + 1")
    return cache.hits


def test_the_proctor_command_fills_the_cache_once_and_then_only_reads_it(tmp_path: Path) -> None:
    (tmp_path / "startup_echo_cc.py").write_text("async def respond(messages):\n    return messages[-1]['content']\n")
    suite = tmp_path / "suite.yaml"
    suite.write_text(
        "name: one\ntrials: 1\ntarget: python:startup_echo_cc:respond\ncases:\n"
        "  - name: echoes\n    turns:\n      - content: 'Echo case-0'\n        assert:\n"
        "          - {type: contains, value: case-0}\n"
    )
    cache = tmp_path / "code.marshal"
    env = {**os.environ, "PROCTOR_CODE_CACHE": str(cache), "PYTHONPATH": str(tmp_path)}
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    command = [sys.executable, "-m", "proctor", "run", str(suite), "--trust", "--quiet", "--results-dir", "results"]
    for _ in range(2):
        subprocess.run(command, env=env, cwd=tmp_path, check=True, capture_output=True, timeout=120)
        if _ == 0:
            written = cache.read_bytes()
            with open(cache, "rb") as file:
                _, version, entries = marshal.load(file)
            assert version == sys.hexversion
            assert any(mode == "exec" and "def __init__" in source for mode, source in entries)
            assert any(mode == "eval" for mode, _source in entries)  # forward references
    assert cache.read_bytes() == written  # the second run compiled nothing new


@pytest.mark.parametrize("arguments", [["--version"], ["--help"], []], ids=["version", "help", "nothing"])
def test_the_commands_answered_without_typer_install_no_cache(tmp_path: Path, arguments: list[str]) -> None:
    probe = (
        "import atexit, json, sys\n"
        "atexit.register(lambda: print(json.dumps(sorted(sys.modules)), file=sys.stderr))\n"
        f"sys.argv = ['proctor', *{arguments!r}]\n"
        "from proctor.cli import script\n"
        "script()\n"
    )
    env = {**os.environ, "PROCTOR_CODE_CACHE": str(tmp_path / "code.marshal"), "COLUMNS": "100"}
    done = subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True, text=True, timeout=60)
    modules = json.loads(done.stderr.strip().splitlines()[-1])
    assert "proctor._codecache" not in modules
    assert not (tmp_path / "code.marshal").exists()
