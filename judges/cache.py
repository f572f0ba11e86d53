"""Judge verdicts on disk, keyed by a content hash of everything that determines them, so
re-scoring the same trajectories with the same judge and rubric costs nothing."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from mcprl.paths import replace_text


class VerdictCache:
    def __init__(self, directory: str | Path):
        self.directory = Path(directory)

    def _path(self, key: str) -> Path:
        return self.directory / key[:2] / f"{key}.json"

    def get(self, key: str) -> dict[str, Any] | None:
        """The stored verdict, or None when absent or unreadable (a torn write is a miss)."""
        try:
            value = json.loads(self._path(key).read_text())
        except (OSError, ValueError):
            return None
        return value if isinstance(value, dict) else None

    def put(self, key: str, verdict: dict[str, Any]) -> None:
        """Write atomically, so concurrent judges and crashes never leave half a file."""
        path = self._path(key)
        path.parent.mkdir(parents=True, exist_ok=True)
        replace_text(path, json.dumps(verdict))
