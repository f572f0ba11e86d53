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
    the policy trained on. Nor is a tool's last task held out (the tools a task names, and those
    of its reference chain): a tool no training task uses is one the policy never learns to call,
    and val would measure that, not how it does on tasks like those it trained on (one task of
    `git_branch` among 46 grounded ones went to val, and no training task asked about branches);
    nor the last task asking a thing of a tool (the field its last call is asked for: the current
    branch, beside the branches listed)."""
    if any(s.split for s in scenarios):
        train = [s for s in scenarios if s.split != "val"]
        val = [s for s in scenarios if s.split == "val"]
    else:
        copies = Counter(s.task for s in scenarios)
        first = {s.task: s for s in reversed(scenarios)}
        tasks = list(copies)
        random.Random(f"{seed}/split").shuffle(tasks)
        uses = {task: _asks(first[task]) for task in tasks}
        trained = Counter(tool for task in tasks for tool in uses[task])  # the tasks of each tool left to train
        n_val, held, val = max(1, round(len(scenarios) * val_fraction)), 0, []
        for task in tasks:
            if held >= n_val:
                break
            if any(trained[tool] == 1 for tool in uses[task]):
                continue
            trained.subtract(uses[task])
            val.append(first[task])
            held += copies[task]
        val = val or [first[tasks[0]]]  # each task its tool's last: one is held out all the same
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


def _asks(scenario: Scenario) -> set[str | tuple[str, str]]:
    """The tools a task uses (those it names and those of its reference chain) and, for a grounded task, what it
    asks of its last call: that tool and the field (else the kind of task: a listing, a count), as
    `selection.asks` says it; read here, since importing selection loads grounding's modules for every
    command (`mcprl --help` 0.24 s -> 1.2 s)."""
    uses: set[str | tuple[str, str]] = {*scenario.tools, *(c.tool for c in scenario.reference)}
    if scenario.reference and (asked := scenario.metadata.get("field") or scenario.metadata.get("kind")):
        uses.add((scenario.reference[-1].tool, str(asked)))
    return uses
