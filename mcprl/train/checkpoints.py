"""Checkpoint layout: `<model dir>/checkpoints/<step:04d>/` holding the PEFT adapter,
`optimizer.pt` and `trainer_state.json`. A checkpoint is written to a temporary directory and
renamed into place, so a crash never leaves a half-written step behind."""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from mcprl.paths import replace_text

STATE_FILE = "trainer_state.json"


def step_dir(root: Path, step: int) -> Path:
    return root / f"{step:04d}"


def list_steps(root: Path) -> list[int]:
    """Complete checkpoints (those with a trainer state), oldest first."""
    if not root.exists():
        return []
    return sorted(int(d.name) for d in root.iterdir() if d.name.isdigit() and (d / STATE_FILE).exists())


def latest_step(root: Path) -> int | None:
    steps = list_steps(root)
    return steps[-1] if steps else None


def write_checkpoint(root: Path, step: int, write: Callable[[Path], None], state: dict[str, Any]) -> Path:
    """`write(tmp_dir)` fills the directory; it appears as `<step:04d>/` only once complete."""
    root.mkdir(parents=True, exist_ok=True)
    for stale in root.glob(".tmp-*"):  # left by a process killed mid-write
        shutil.rmtree(stale, ignore_errors=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".tmp-{step:04d}-", dir=root))
    try:
        write(tmp)
        (tmp / STATE_FILE).write_text(json.dumps({**state, "step": step}, indent=2))
        final = step_dir(root, step)
        if final.exists():
            shutil.rmtree(final)
        os.replace(tmp, final)
        _fsync_dir(root)
        return final
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def _fsync_dir(d: Path) -> None:
    fd = os.open(d, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def read_state(ckpt: Path) -> dict[str, Any]:
    return json.loads((ckpt / STATE_FILE).read_text())


def record_metrics(ckpt: Path, metrics: dict[str, float]) -> None:
    """Replace the metrics in a checkpoint's state with `metrics` (a step's, completed after it was written)."""
    state = read_state(ckpt)
    state["metrics"] = metrics
    replace_text(ckpt / STATE_FILE, json.dumps(state, indent=2))


def delete_checkpoints(root: Path, keep: int = 1, keep_steps: set[int] = frozenset()) -> list[int]:
    """Delete all but the `keep` newest checkpoints (and any in `keep_steps`); returns deleted steps."""
    steps = list_steps(root)
    doomed = [s for s in steps[: max(len(steps) - keep, 0)] if s not in keep_steps]
    for s in doomed:
        shutil.rmtree(step_dir(root, s))
    return doomed


def adapter_name(path: Path) -> str:
    """How a checkpoint directory is served: `NAME@STEP` from its trainer state, else its dir name."""
    path = Path(path)
    if (path / STATE_FILE).exists():
        st = read_state(path)
        if "name" in st:
            return f"{st['name']}@{st['step']}"
    return path.name
