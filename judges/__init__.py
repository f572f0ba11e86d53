"""Judges score TrajectoryGroups: RULER (LLM, relative), verifiers (ground truth), and
combinations of them. See judges.base for the interface."""

from __future__ import annotations

from typing import Literal

from judges.base import Judge, JudgeError, score_groups
from judges.combine import GateJudge, ShapedJudge, WeightedJudge
from judges.ruler import DEFAULT_RUBRIC, RulerJudge, ruler_score_group
from judges.shaping import ToolUseShaping
from judges.verify import VerifyJudge, checker_for
from mcprl.errors import UserError

JudgeMode = Literal["ruler", "verify", "gate"]


def build_judge(mode: JudgeMode, ruler: RulerJudge | None = None, all_or_nothing: bool = False) -> Judge:
    """The judge a `--judge` option names: RULER alone, the scenarios' checks alone, or the
    gate (checks decide pass/fail, RULER ranks the passing ones). `all_or_nothing`: the checks
    give no partial credit (see VerifyJudge)."""
    if mode == "verify":
        return VerifyJudge(all_or_nothing=all_or_nothing)
    if ruler is None:
        raise UserError(f"judging with {mode!r} needs a judge model; pass --judge-model (e.g. openai/gpt-4.1 or local)")
    return ruler if mode == "ruler" else GateJudge(VerifyJudge(all_or_nothing=all_or_nothing), ruler)


__all__ = [
    "DEFAULT_RUBRIC",
    "GateJudge",
    "Judge",
    "JudgeError",
    "JudgeMode",
    "RulerJudge",
    "ShapedJudge",
    "ToolUseShaping",
    "VerifyJudge",
    "WeightedJudge",
    "build_judge",
    "checker_for",
    "ruler_score_group",
    "score_groups",
]
