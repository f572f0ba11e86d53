"""Deterministic train/val splits."""

from __future__ import annotations

import random
from collections import Counter
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


def split_for_run(
    scenarios: Sequence[Scenario], val_fraction: float, val_size: int | None, seed: int
) -> tuple[list[Scenario], list[Scenario]]:
    """A training run's (train, val): the scenarios' own `split` when any has one, else a seeded
    shuffle of the distinct tasks with about round(n * val_fraction) scenarios (at least 1) held
    out; then val capped at `val_size`. A task text is held out whole, once: its copies (task
    generators repeat tasks) never land on both sides, where held-out success would count tasks
    the policy trained on."""
    if any(s.split for s in scenarios):
        train = [s for s in scenarios if s.split != "val"]
        val = [s for s in scenarios if s.split == "val"]
    else:
        copies = Counter(s.task for s in scenarios)
        first = {s.task: s for s in reversed(scenarios)}
        tasks = list(copies)
        random.Random(f"{seed}/split").shuffle(tasks)
        n_val, held, val = max(1, round(len(scenarios) * val_fraction)), 0, []
        for task in tasks:
            if held >= n_val:
                break
            val.append(first[task])
            held += copies[task]
        held_out = {v.task for v in val}
        train = [s for s in scenarios if s.task not in held_out]
    if val_size is not None:
        val = val[:val_size]
    if not train or not val:
        raise UserError(
            "the split left no train or no val scenarios (tasks repeated count once); use more, "
            "or more distinct, scenarios or another --val-fraction"
        )
    return train, val
