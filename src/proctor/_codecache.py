"""The code Python compiles for dataclasses and forward references, kept between runs of `proctor`.

Making a dataclass compiles generated source with `exec` (its `__init__`, `__repr__`, `__eq__`, ...:
Python 3.11 parses and compiles each one apart), and `typing.ForwardRef` compiles every string
annotation pydantic resolves. An empty `proctor run` compiles ~530 such functions and ~770 annotations,
for Proctor's classes and its dependencies' (pydantic, Typer, anyio, annotated_types): about a quarter
of its instructions (1,219 M in all, 921 M with the cache), and the same source every time.
`install_code_cache` keeps the code objects in one file of the user's cache directory and follows the
rules of Python's own `.pyc` files:

- kept in `$XDG_CACHE_HOME/proctor/` (else `~/.cache/proctor/`; `%LOCALAPPDATA%/proctor/` on Windows), or
  under `PYTHONPYCACHEPREFIX` when that is set: not in the installed package, which `pip uninstall` would
  then leave behind (and an empty `proctor/` directory imports as a namespace package);
- read whenever present, if the current user owns it and no one else may write it; written at exit only
  when something new was compiled and bytecode may be written (`sys.dont_write_bytecode`,
  `PYTHONDONTWRITEBYTECODE`), atomically (write, then rename), readable by the user alone;
- a file from another interpreter or version, or one that does not read, is ignored (and replaced);
- code is looked up by its whole source text, so what a hit returns is what `compile` would have made.
  A second class with the same generated source gets a copy of the code: as without the cache, no two
  functions share code (a forward reference's expression is shared).

Only the `proctor` command installs it (`proctor.cli.script`): importing `proctor` as a library changes
nothing in the interpreter. `PROCTOR_CODE_CACHE=off` turns it off; `PROCTOR_CODE_CACHE=<file>` keeps the
cache in that file instead.
"""

from __future__ import annotations

import atexit
import builtins
import contextlib
import marshal
import os
import sys
from types import CodeType
from typing import Any

__all__ = ["CodeCache", "default_cache_path", "install_code_cache"]

FORMAT = 1
"""The layout of the file: `(FORMAT, sys.hexversion, {(mode, source): code})`, marshalled."""
MAX_ENTRIES = 4096
"""Beyond this many entries, the file keeps only what the last process used or compiled (an empty `proctor run`
uses ~700; reading 4,096 would cost ~75 M instructions, a quarter of what the cache saves)."""
ENV = "PROCTOR_CODE_CACHE"

_Key = tuple[str, str]
_installed: CodeCache | None = None


class CodeCache:
    """Compiled code by source text, read from and written to one file.

    Args:
        path: The cache file.
    """

    def __init__(self, path: str) -> None:
        self.path = path
        self._stored = _read(path)
        self._given: dict[_Key, CodeType] = {}
        self._compiled: dict[_Key, CodeType] = {}

    @property
    def hits(self) -> int:
        """How many compilations this process took from the file."""
        return len(self._given) - len(self._compiled)

    @property
    def compiled(self) -> int:
        """How many sources this process compiled itself (and will add to the file)."""
        return len(self._compiled)

    def code(self, mode: str, source: str) -> CodeType:
        """What `compile(source, "<string>", mode)` returns in a module without `__future__` imports.

        A source asked for again in the same process gets, in `exec` mode, a copy of the code (no two
        functions share code, as without the cache); in `eval` mode (a forward reference) the same code.
        """
        key = (mode, source)
        given = self._given.get(key)
        if given is not None:
            return given if mode == "eval" else marshal.loads(marshal.dumps(given))
        code = self._stored.get(key)
        if type(code) is not CodeType:
            code = self._compiled[key] = builtins.compile(source, "<string>", mode, 0, True)
        self._given[key] = code
        return code

    def exec(self, source: Any, globals: Any = None, locals: Any = None, /, **kwargs: Any) -> None:
        """`exec` for `dataclasses`: a source string is compiled through the cache."""
        if type(source) is str:  # compiled here: `exec` of a string would take this module's `__future__` flags
            source = self.code("exec", source) if not kwargs else builtins.compile(source, "<string>", "exec", 0, True)
        builtins.exec(source, globals, locals, **kwargs)

    def compile(
        self, source: Any, filename: Any, mode: Any, flags: int = 0, dont_inherit: bool = False, optimize: int = -1
    ) -> Any:
        """`compile` for `typing`: a forward reference's expression is compiled through the cache."""
        if type(source) is str and filename == "<string>" and mode == "eval" and flags == 0 and optimize == -1:
            return self.code("eval", source)
        # `typing` has no `__future__` imports to pass on; this module's must not be
        return builtins.compile(source, filename, mode, flags, True, optimize)

    def save(self) -> None:
        """Write the file if this process compiled something new and bytecode may be written; never raises."""
        if not self._compiled or sys.dont_write_bytecode:
            return
        entries = {**self._stored, **self._compiled}
        if len(entries) > MAX_ENTRIES:  # what the last process used and compiled, no more
            entries = {key: code for key in self._given if type(code := entries.get(key)) is CodeType}
        temporary = f"{self.path}.{os.getpid()}.tmp"
        try:
            data = marshal.dumps((FORMAT, sys.hexversion, entries))
            directory = os.path.dirname(self.path)
            if directory:
                os.makedirs(directory, mode=0o700, exist_ok=True)
            # a new file (O_EXCL: nothing already there, a link included, is written through)
            descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0), 0o600)
            with open(descriptor, "wb") as file:
                file.write(data)
            os.replace(temporary, self.path)
        except (OSError, ValueError):  # read-only place, full disk, a stale temporary file: no cache this time
            with contextlib.suppress(OSError):
                os.unlink(temporary)


def default_cache_path() -> str:
    """`proctor/code.<tag>.marshal` in the user's cache directory, or under `sys.pycache_prefix` when set.

    One file serves every installation of Proctor on one Python version: an entry is keyed by its source,
    so it is right for any process that asks for that source. The optimization level is in the name
    (`-O`: `.opt-1`), as in a `.pyc`'s.
    """
    optimized = f".opt-{sys.flags.optimize}" if sys.flags.optimize else ""
    name = f"code.{sys.implementation.cache_tag or 'unknown'}{optimized}.marshal"
    if sys.pycache_prefix:
        return os.path.join(sys.pycache_prefix, "proctor", name)
    if os.name == "nt" and os.environ.get("LOCALAPPDATA"):
        return os.path.join(os.environ["LOCALAPPDATA"], "proctor", name)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "proctor", name)


def install_code_cache() -> CodeCache | None:
    """Compile dataclass methods and forward references through the cache file, for this process.

    Idempotent. Does nothing on an interpreter other than CPython, or when `PROCTOR_CODE_CACHE` is `off`
    (or `0`, `false`, `no`). Imports `dataclasses` and `typing` (every command imports both anyway).

    Returns:
        The cache installed, or `None` when it is off.
    """
    global _installed
    setting = os.environ.get(ENV, "").strip()
    if _installed is not None or setting.lower() in ("off", "0", "false", "no") or sys.implementation.name != "cpython":
        return _installed
    import dataclasses
    import typing

    cache = _installed = CodeCache(setting or default_cache_path())
    dataclasses.exec = cache.exec  # type: ignore[attr-defined]  # a module global: found before the builtin
    typing.compile = cache.compile  # type: ignore[attr-defined]
    atexit.register(cache.save)
    return cache


def _read(path: str) -> dict[_Key, Any]:
    """The entries of the file at `path`; none when it is missing, unreadable or from another interpreter."""
    try:
        with open(path, "rb") as file:
            if not _private(os.fstat(file.fileno())):
                return {}
            content = marshal.loads(file.read())  # `marshal.load(file)` reads object by object: 10x the instructions
    except (OSError, EOFError, ValueError, TypeError):
        return {}
    if not (isinstance(content, tuple) and len(content) == 3 and content[:2] == (FORMAT, sys.hexversion)):
        return {}
    entries = content[2]
    return entries if isinstance(entries, dict) else {}


def _private(status: os.stat_result) -> bool:
    """Whether a file is the current user's and no one else may write it (always, where there are no owners)."""
    getuid = getattr(os, "getuid", None)
    return getuid is None or (status.st_uid == getuid() and not status.st_mode & 0o022)
