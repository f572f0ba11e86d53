"""A deterministic train/val split."""

from __future__ import annotations

from collections.abc import Sequence

from mcprl.errors import UserError
from mcprl.types import Scenario, content_hash


def check_val_fraction(val_fraction: float) -> None:
    if not 0 <= val_fraction < 1:
        raise UserError(f"--val-fraction must be in [0, 1), got {val_fraction}")


def split_train_val(scenarios: Sequence[Scenario], val_fraction: float = 0.2, seed: int = 0) -> list[Scenario]:
    """Copies of `scenarios`, in order, with `split` set. The val set is the round(n * fraction)
    tasks whose hash with `seed` sorts first, so the split depends only on the seed and the task
    texts, not on their order; with a nonzero fraction and two or more tasks, each side gets one."""
    check_val_fraction(val_fraction)
    n = len(scenarios)
    n_val = round(n * val_fraction)
    if val_fraction > 0 and n >= 2:
        n_val = min(max(n_val, 1), n - 1)
    ranked = sorted(range(n), key=lambda i: content_hash([seed, scenarios[i].task]))
    val = set(ranked[:n_val])
    return [s.model_copy(update={"split": "val" if i in val else "train"}) for i, s in enumerate(scenarios)]
