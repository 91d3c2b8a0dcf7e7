"""The addresses `--cluster` takes (checked before Ray is imported)."""

from __future__ import annotations

import re

from proctor.errors import ConfigError

__all__ = ["check_address"]

_ADDRESS = re.compile(r"^(ray://)?[A-Za-z0-9_.\-\[\]:]+:\d{1,5}$")


def check_address(address: str) -> str:
    """`address` if it names a cluster (`auto`, `ray://HOST:PORT`, `HOST:PORT`).

    Raises:
        ConfigError: It does not.
    """
    if address == "auto" or _ADDRESS.match(address):
        return address
    raise ConfigError(f"--cluster: expected 'auto', 'ray://HOST:PORT' or 'HOST:PORT', found {address!r}")
