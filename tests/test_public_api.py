from __future__ import annotations

import importlib
import subprocess
import sys

import pytest

import proctor

PACKAGES = ["proctor", "proctor.suite", "proctor.checks", "proctor.targets", "proctor.results", "proctor.models"]


@pytest.mark.parametrize("name", PACKAGES)
def test_all_lists_exactly_the_public_names(name: str) -> None:
    module = importlib.import_module(name)
    for exported in module.__all__:  # every exported name resolves (lazily, for `proctor`)
        getattr(module, exported)
    public = {n for n in vars(module) if not n.startswith("_")}
    submodules = {n for n in public if type(getattr(module, n)).__name__ == "module"}
    exported = set(module.__all__) - {"__version__"}
    assert exported == (public - submodules - {"annotations", "importlib", "TYPE_CHECKING", "Any"}) | (
        exported & submodules
    )
    assert len(module.__all__) == len(exported | ({"__version__"} & set(module.__all__)))


def test_version_matches_package_metadata() -> None:
    from importlib.metadata import version

    assert proctor.__version__ == version("proctor-eval")


def test_cli_help_does_not_import_heavy_modules() -> None:
    code = (
        "import sys, proctor.cli; "
        "heavy = ('httpx', 'aiohttp', 'jinja2', 'jsonschema', 'starlette', 'uvicorn', 'tenacity', 'pydantic', "
        "'proctor.checks'); "
        "heavy = [m for m in heavy if m in sys.modules]; "
        "print(','.join(heavy))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    assert out == ""
