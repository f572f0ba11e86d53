"""Package exports imported on first use, so that importing a package (for `mcprl --help`, or
to read a run's settings) does not import the SDKs behind its names."""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any


def exports(package: str, where: Mapping[str, str]) -> Callable[[str], Any]:
    """A module `__getattr__` for `package` that imports `name` from the module `where[name]`, or the
    attribute `where[name]` names as `module:attribute` (a name the package gives it)."""

    def __getattr__(name: str) -> Any:
        if name in where:
            module, _, attr = where[name].partition(":")
            return getattr(importlib.import_module(module), attr or name)
        raise AttributeError(f"module {package!r} has no attribute {name!r}")

    return __getattr__
