"""Where mcprl keeps things: `$MCPRL_HOME` (default ~/.cache/mcprl)."""

from __future__ import annotations

import os
import re
import tempfile
from pathlib import Path
from typing import Annotated

from pydantic import AfterValidator

from mcprl.errors import UserError

_NAME = re.compile(r"[A-Za-z0-9._-]{1,128}")


def replace_text(path: Path, text: str) -> None:
    """Write `path` whole or not at all (a temporary file of its own beside it, then renamed): a
    process killed mid-write leaves the old file, never half of the new one, and concurrent
    writers never share a temporary file."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    with os.fdopen(fd, "w") as f:
        f.write(text)
    os.replace(tmp, path)


def home() -> Path:
    return Path(os.environ.get("MCPRL_HOME") or Path.home() / ".cache" / "mcprl").expanduser()


def name_problem(value: str) -> str | None:
    """Why `value` cannot be a project or model name, or None: each becomes one directory under
    home(), so it is one path component (no separator, not `.` or `..`, which would step out)."""
    if not _NAME.fullmatch(value) or set(value) == {"."}:
        return (
            f"{value!r} is not a usable name: give 1-128 letters, digits, '.', '_' or '-' "
            "(one directory name, not '.' or '..')"
        )
    return None


def _checked_name(value: str) -> str:
    if problem := name_problem(value):
        raise ValueError(problem)
    return value


DirName = Annotated[str, AfterValidator(_checked_name)]  # a project or model name (see name_problem)


def model_dir(project: str, name: str) -> Path:
    """A trainable model's directory: checkpoints, trajectories, metrics and reports live here.
    Always inside home(): a name that would leave it is a UserError."""
    for what, value in (("--project", project), ("--name", name)):
        if problem := name_problem(value):
            raise UserError(f"{what}: {problem}")
    return home() / project / name


def checkpoints_dir(project: str, name: str) -> Path:
    return model_dir(project, name) / "checkpoints"
