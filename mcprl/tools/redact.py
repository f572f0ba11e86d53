"""Keep secrets out of trajectories, logs and saved configs.

secrets = secret_values(spec)
clean = redact(record, secrets)   # every occurrence of a secret, anywhere, becomes ***
group = redact_model(group, secrets)  # the same, keeping the pydantic type
"""

from __future__ import annotations

import fnmatch
import os
import re
from collections.abc import Iterable, Mapping
from typing import Any, TypeVar
from urllib.parse import parse_qsl, urlsplit

from pydantic import BaseModel

from mcprl.tools.spec import ServerSpec

MASK = "***"
MIN_SECRET_CHARS = 6  # shorter values ("1", "true", "dev") would mask half of every text
SECRET_NAME = re.compile(r"token|key|secret|password|passwd|credential|auth|cookie", re.IGNORECASE)
SECRET_ENV_PATTERNS = ("*_KEY", "*_TOKEN", "*SECRET*", "*PASSWORD*")
M = TypeVar("M", bound=BaseModel)


def secret_values(spec: ServerSpec | None = None, environ: Mapping[str, str] | None = None) -> list[str]:
    """Values to mask: the spec's secret-looking headers (Authorization, X-API-Key, Cookie, ...),
    env entries and URL query parameters (`?api_key=...`, `&token=...`) and the URL's password,
    and this process's secret-looking environment variables (`environ`, default `os.environ`:
    *_KEY, *_TOKEN, *SECRET*, *PASSWORD*). Longest first; short values are ignored."""
    found: set[str] = set()
    named = list((spec.headers | spec.env).items()) if spec is not None else []
    if spec is not None and spec.transport != "stdio":
        url = urlsplit(spec.target)
        named += parse_qsl(url.query, keep_blank_values=False)
        if url.password:
            found.add(url.password)
    for name, value in named:
        if SECRET_NAME.search(name):
            found.add(value)
            scheme, _, credential = value.partition(" ")  # "Bearer abc...": the token alone too
            if credential and scheme.isalpha():
                found.add(credential.strip())
    for name, value in (os.environ if environ is None else environ).items():
        if any(fnmatch.fnmatchcase(name.upper(), pattern) for pattern in SECRET_ENV_PATTERNS):
            found.add(value)
    return sorted((v for v in found if len(v) >= MIN_SECRET_CHARS), key=lambda v: (-len(v), v))


def redact(obj: Any, secrets: Iterable[str]) -> Any:
    """A copy of `obj` (str, dict, list, tuple, pydantic model -> dict) with every secret replaced by ***."""
    ordered = sorted({s for s in secrets if s}, key=len, reverse=True)
    if not ordered:
        return obj
    pattern = re.compile("|".join(re.escape(s) for s in ordered))
    return _redact(obj, pattern)


def redact_model(model: M, secrets: Iterable[str]) -> M:
    """A copy of `model` with every secret masked, as the same type (e.g. a trajectory group about to be written)."""
    secrets = list(secrets)
    return type(model).model_validate(redact(model.model_dump(mode="json"), secrets)) if secrets else model


def _redact(obj: Any, pattern: re.Pattern[str]) -> Any:
    if isinstance(obj, str):
        return pattern.sub(MASK, obj)
    if isinstance(obj, BaseModel):
        return _redact(obj.model_dump(mode="json"), pattern)
    if isinstance(obj, Mapping):
        return {_redact(k, pattern): _redact(v, pattern) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return type(obj)(_redact(v, pattern) for v in obj)
    return obj
