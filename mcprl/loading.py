"""Code loaded by name rather than imported at the top: a package's exports on first use (`exports`),
so that importing a package (for `mcprl --help`, or to read a run's settings) does not import the SDKs
behind its names; and a user's code named in a setting as `module:attribute` (`named_object`: an agent,
a loss, a strategy), imported with the working directory on the path, so a module beside the run file
is found, each way it can fail a one-line UserError naming the setting and the forms it takes."""

from __future__ import annotations

import importlib
import os
import sys
from collections.abc import Callable, Mapping
from typing import Any

from mcprl.errors import UserError


def exports(package: str, where: Mapping[str, str]) -> Callable[[str], Any]:
    """A module `__getattr__` for `package` that imports `name` from the module `where[name]`, or the
    attribute `where[name]` names as `module:attribute` (a name the package gives it)."""

    def __getattr__(name: str) -> Any:
        if name in where:
            module, _, attr = where[name].partition(":")
            return getattr(importlib.import_module(module), attr or name)
        raise AttributeError(f"module {package!r} has no attribute {name!r}")

    return __getattr__


def named_object(spec: str, setting: str, known: str, forms: str) -> Any:
    """The attribute `spec` (`module:attribute`) names; `setting` and `known` word the error of a spec
    that is neither one of the built-in names nor that form ("agent", "a known agent nor
    module:function"), `forms` the fix every error ends with."""
    module_name, colon, attr = spec.partition(":")
    if not colon or not module_name or not attr:
        raise UserError(f"{setting} {spec!r} is not {known}; give {forms}")
    if os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as e:
        if e.name is None or not (module_name == e.name or module_name.startswith(e.name + ".")):
            failed = f"importing {module_name} failed: {e}; install what it needs"  # a module it imports is missing
            raise UserError(f"{setting} {spec!r}: {failed}") from None
        missing = f"no module named {module_name} (from {os.getcwd()})"
        raise UserError(f"{setting} {spec!r}: {missing}; give {forms}") from None
    except ImportError as e:
        raise UserError(f"{setting} {spec!r}: importing {module_name} failed: {e}") from None
    obj = getattr(module, attr, None)
    if obj is None:
        raise UserError(f"{setting} {spec!r}: module {module_name} has no {attr!r}; give {forms}")
    return obj
