"""`mcprl judge`: re-score saved TrajectoryGroups (JSONL, one group per line)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Literal, cast

import anyio
import typer

from mcprl import paths
from mcprl.errors import UserError
from mcprl.types import TrajectoryGroup, dump_jsonl, load_jsonl

if TYPE_CHECKING:
    from mcprl.judges import JudgeMode


def summarize(groups: Sequence[TrajectoryGroup]) -> str:
    scored = [g for g in groups if not g.skipped]
    rewards = [r for g in scored for r in g.rewards()]

    def total(key: str) -> float:
        return sum(g.metrics.get(key, 0.0) for g in groups)

    lines = [
        f"judged {len(groups)} groups: {len(scored)} scored, {len(groups) - len(scored)} skipped",
        (
            f"mean reward {sum(rewards) / len(rewards):.3f} over {len(rewards)} trajectories"
            if rewards
            else "no trajectory scored"
        ),
        (
            f"judge cost ${total('judge_cost_usd'):.4f} "
            f"({total('judge_prompt_tokens'):.0f}+{total('judge_completion_tokens'):.0f} tokens, "
            f"{total('judge_retries'):.0f} retries, {total('judge_cache_hit'):.0f} groups from cache)"
        ),
    ]
    reasons = [f"skipped: {g.skipped}" for g in groups if g.skipped]
    lines += reasons[:5] + ([f"... and {len(reasons) - 5} more skipped"] if len(reasons) > 5 else [])
    return "\n".join(lines)


def judge(
    groups_file: Path = typer.Argument(..., help="TrajectoryGroups as JSONL, one group per line"),
    output: Path = typer.Option(..., "-o", "--output", help="where to write the re-scored groups (JSONL)"),
    judge_model: str | None = typer.Option(
        None, "--judge-model", help="RULER judge: any litellm model string, or 'local'"
    ),
    mode: str = typer.Option(
        "ruler",
        "--mode",
        help="ruler (LLM ranks), verify (scenario checks) or gate (checks decide, RULER ranks the passing)",
    ),
    api_base: str | None = typer.Option(None, "--api-base", help="OpenAI-compatible base URL for --judge-model"),
    api_key: str | None = typer.Option(None, "--api-key", envvar="MCPRL_JUDGE_API_KEY", help="key for --api-base"),
    rubric: Path | None = typer.Option(None, "--rubric", help="text file replacing RULER's default rubric"),
    on_failure: str = typer.Option(
        "skip", "--on-failure", help="skip: record why a group could not be judged and go on; raise: stop"
    ),
    concurrency: int = typer.Option(4, "--concurrency", help="groups judged at once"),
    seed: int = typer.Option(0, "--seed", help="seeds the order trajectories are shown to the judge"),
    cache_dir: Path | None = typer.Option(None, "--cache-dir", help="verdict cache (default: $MCPRL_HOME/judge-cache)"),
    no_cache: bool = typer.Option(False, "--no-cache", help="always ask the judge"),
) -> None:
    """Re-score saved trajectory groups with RULER and/or the scenarios' checks."""
    # Lazy: loaded when the command runs, so that `mcprl --help` stays fast
    from mcprl.judges import JudgeError, RulerJudge, build_judge, score_groups

    if mode not in ("ruler", "verify", "gate"):
        raise UserError(f"--mode must be ruler, verify or gate, got {mode!r}")
    if on_failure not in ("skip", "raise"):
        raise UserError(f"--on-failure must be skip or raise, got {on_failure!r}")
    if rubric is not None and not rubric.is_file():
        raise UserError(f"--rubric {rubric}: no such file")
    failure: Literal["skip", "raise"] = "raise" if on_failure == "raise" else "skip"
    ruler = None
    if judge_model is not None:
        ruler = RulerJudge(
            judge_model,
            api_base=api_base,
            api_key=api_key,
            on_failure=failure,
            cache_dir=None if no_cache else (cache_dir or paths.home() / "judge-cache"),
            seed=seed,
            rubric=rubric.read_text() if rubric else None,
        )
    judge_ = build_judge(cast("JudgeMode", mode), ruler)

    groups = load_jsonl(groups_file, TrajectoryGroup)
    for g in groups:
        g.skipped = None  # a re-score decides afresh
    try:
        anyio.run(score_groups, judge_, groups, concurrency)
    except JudgeError as e:
        raise UserError(f"{e}; nothing written (use --on-failure skip to record such groups and go on)") from None
    dump_jsonl(groups, output)
    print(f"{summarize(groups)}\nwrote {output}")
