"""The architecture holds: packages import only downwards (DESIGN.md's table), no import cycles, and a
function-local import of Proctor's own code says why it is local (an optional extra, start-up time)."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1] / "src" / "proctor"

# What each part may import at run time (type-only imports under TYPE_CHECKING are not counted). The
# root's leaves (`errors`, `transcript`, `agent_data` and the private helpers) are open to everyone.
LEAVES = {
    "proctor.errors", "proctor.transcript", "proctor.agent_data", "proctor._tls", "proctor._retry_after",
    "proctor._redact", "proctor._lazy", "proctor._trace_context", "proctor._trace_records", "proctor._http",
    "proctor._slots", "proctor._json", "proctor._jinja",
}  # fmt: skip
ALLOWED: dict[str, set[str]] = {
    "proctor.suite": set(),
    "proctor.targets": {"proctor.suite"},
    "proctor.models": {"proctor.suite"},
    "proctor.state": {"proctor.suite"},
    "proctor.drivers": {"proctor.targets", "proctor.models", "proctor.suite"},
    "proctor.checks": {"proctor.models", "proctor.state", "proctor.suite"},
    "proctor.scoring": {"proctor.checks"},
    "proctor.results": {"proctor.suite", "proctor.scoring", "proctor.checks"},
    # the tool server reuses the journey's argument matchers (checks) for its mock tables, and runs Cypher
    # mocks on the trial's graph (state)
    "proctor.tools": {"proctor.suite", "proctor.models", "proctor.checks", "proctor.state"},
    "proctor.run": {
        "proctor.suite", "proctor.targets", "proctor.models", "proctor.state", "proctor.drivers",
        "proctor.checks", "proctor.scoring", "proctor.results", "proctor.traces", "proctor.tools",
    },
    "proctor.recorded": {
        "proctor.checks", "proctor.scoring", "proctor.models", "proctor.results", "proctor.run", "proctor.suite",
        "proctor.traces",
    },
    "proctor.service": {
        "proctor.checks", "proctor.scoring", "proctor.models", "proctor.results", "proctor.run", "proctor.suite",
        "proctor.traces",
    },
    "proctor.demo": {"proctor.targets"},
    "proctor.view": {"proctor.results"},
    "proctor.traces": set(),
    "proctor.testing": {"proctor.suite", "proctor.checks", "proctor.run"},
    "proctor.cluster": {"proctor.run", "proctor.results", "proctor.models"},
}  # fmt: skip


def _module(path: Path) -> str:
    parts = list(path.relative_to(ROOT.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {_module(path): path for path in ROOT.rglob("*.py")}


def _part(module: str) -> str:
    """The package (`proctor.checks`) or root module (`proctor.scoring`) a module belongs to."""
    parts = module.split(".")
    return ".".join(parts[:2]) if len(parts) > 1 else module


def _imports(path: Path) -> Iterator[tuple[str, int, bool]]:
    """(imported module, line, function-local) for every run-time import of Proctor's own code."""

    def visit(node: ast.AST, local: bool) -> Iterator[tuple[str, int, bool]]:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and "TYPE_CHECKING" in ast.unparse(child.test):
                continue
            inner = local or isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef)
            if isinstance(child, ast.ImportFrom) and child.module and child.module.startswith("proctor"):
                yield child.module, child.lineno, local
                for alias in child.names:
                    if f"{child.module}.{alias.name}" in MODULES:
                        yield f"{child.module}.{alias.name}", child.lineno, local
            elif isinstance(child, ast.Import):
                yield from ((a.name, child.lineno, local) for a in child.names if a.name.startswith("proctor"))
            yield from visit(child, inner)

    yield from visit(ast.parse(path.read_text(encoding="utf-8")), False)


def _graph(*, local: bool) -> dict[str, set[str]]:
    graph: dict[str, set[str]] = {}
    for name, path in MODULES.items():
        targets = {m for m, _, is_local in _imports(path) if m in MODULES and (local or not is_local)}
        graph[name] = {m for m in targets if m != name and not m.startswith(name + ".")}
    return graph


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one node (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for nxt in graph.get(node, ()):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                top = stack.pop()
                component.append(top)
                if top == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def test_packages_import_only_what_the_design_allows() -> None:
    wrong = []
    for name, path in MODULES.items():
        part = _part(name)
        if part not in ALLOWED:
            continue  # cli/ may import anything; the root's public face re-exports lazily
        for imported, line, _ in _imports(path):
            other = _part(imported)
            if other in (part, "proctor") or other in LEAVES or other in ALLOWED[part]:
                continue
            wrong.append(f"{path.relative_to(ROOT.parent)}:{line}: {part} imports {imported}")
    assert wrong == []


def test_no_import_cycles_between_modules_or_packages() -> None:
    modules = _graph(local=False)
    assert _cycles(modules) == []
    assert _cycles(_graph(local=True)) == []  # a function-local import is never a way around a cycle
    packages: dict[str, set[str]] = {}
    for name, targets in modules.items():
        packages.setdefault(_part(name), set()).update(_part(t) for t in targets if _part(t) != _part(name))
    assert _cycles(packages) == []


@pytest.mark.parametrize(
    "package",
    [
        "suite", "targets", "models", "state", "drivers", "checks", "scoring", "results", "run", "recorded", "service",
        "testing", "cluster", "view", "traces", "tools",
    ],
)  # fmt: skip
def test_a_function_local_import_of_proctor_says_why(package: str) -> None:
    unexplained = []
    for name, path in MODULES.items():
        if _part(name) != f"proctor.{package}":
            continue
        lines = path.read_text(encoding="utf-8").splitlines()
        for imported, line, local in _imports(path):
            above = " ".join(lines[max(0, line - 3) : line - 1])
            if local and "#" not in above and "#" not in lines[line - 1]:
                unexplained.append(f"{path.relative_to(ROOT.parent)}:{line}: {imported}")
    assert unexplained == []


def test_a_command_module_that_imports_proctor_in_its_body_says_why() -> None:
    """CLI modules defer Proctor's own imports so `proctor --help` stays fast; each says so once."""
    unexplained = []
    for name, path in MODULES.items():
        if _part(name) != "proctor.cli":
            continue
        local = [line for _, line, is_local in _imports(path) if is_local]
        if local and "must stay fast" not in path.read_text(encoding="utf-8"):
            unexplained.append(f"{path.relative_to(ROOT.parent)}:{local[0]}")
    assert unexplained == []
