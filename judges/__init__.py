"""Judges score TrajectoryGroups: RULER (LLM, relative), verifiers (ground truth), and
combinations of them. See mcprl.judges.base for the interface.

`JudgeConfig` is a run's judging (`[judge]` in a run file) and builds its judge. The other names
are imported on first use, so reading a run's settings loads no judge."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Literal

from pydantic import BaseModel, ConfigDict, Field

from mcprl.errors import UserError
from mcprl.loading import exports
from mcprl.types import SUCCESS_THRESHOLD

if TYPE_CHECKING:
    from mcprl.judges.base import Judge, JudgeError, score_groups
    from mcprl.judges.combine import ByCheckJudge, GateJudge, ShapedJudge, WeightedJudge
    from mcprl.judges.ruler import DEFAULT_RUBRIC, RulerJudge, ruler_score_group
    from mcprl.judges.shaping import ToolUseShaping
    from mcprl.judges.verify import VerifyJudge, checker_for

_EXPORTS = {
    "Judge": "mcprl.judges.base",
    "JudgeError": "mcprl.judges.base",
    "score_groups": "mcprl.judges.base",
    "ByCheckJudge": "mcprl.judges.combine",
    "GateJudge": "mcprl.judges.combine",
    "ShapedJudge": "mcprl.judges.combine",
    "WeightedJudge": "mcprl.judges.combine",
    "DEFAULT_RUBRIC": "mcprl.judges.ruler",
    "RulerJudge": "mcprl.judges.ruler",
    "ruler_score_group": "mcprl.judges.ruler",
    "ToolUseShaping": "mcprl.judges.shaping",
    "VerifyJudge": "mcprl.judges.verify",
    "checker_for": "mcprl.judges.verify",
}

JudgeMode = Literal["ruler", "verify", "gate"]

__getattr__ = exports(__name__, _EXPORTS)


def build_judge(
    mode: JudgeMode,
    ruler: RulerJudge | None = None,
    all_or_nothing: bool = False,
    success_threshold: float = SUCCESS_THRESHOLD,
) -> Judge:
    """The judge a `--judge` option names: RULER alone, the scenarios' checks alone, or the
    gate (checks decide pass/fail, RULER ranks the passing ones). `all_or_nothing`: the checks
    give no partial credit (see VerifyJudge); `success_threshold` (the run's `--success-threshold`):
    the check's score that solves a task, for all-or-nothing and for the gate's pass."""
    # Lazy: the judges load when one is built, not with the settings (`mcprl --help` reads those)
    from mcprl.judges.combine import GateJudge
    from mcprl.judges.verify import VerifyJudge

    verify = VerifyJudge(all_or_nothing=all_or_nothing, success_threshold=success_threshold)
    if mode == "verify":
        return verify
    if ruler is None:
        raise UserError(f"judging with {mode!r} needs a judge model; pass --judge-model (e.g. openai/gpt-4.1 or local)")
    return ruler if mode == "ruler" else GateJudge(verify, ruler, pass_threshold=success_threshold)


class JudgeConfig(BaseModel):
    """How a run judges its rollouts; `model` (and `api_base`) also write the scenarios and the
    demonstration when those are generated."""

    model_config = ConfigDict(extra="forbid")

    mode: Literal["ruler", "verify", "both"] = Field(
        default="verify", description="the scenarios' checks, RULER, or both (checks gate, RULER ranks)"
    )
    model: str = Field(default="local", description="litellm model for RULER/synthesis, or 'local'")
    api_base: str | None = Field(default=None, description="OpenAI-compatible base URL for the judge model")
    rubric: str | None = Field(default=None, description="RULER rubric file")
    # Tool-use shaping (mcprl.judges.shaping), when training against tools; 0 turns it off. Default: docs/benchmarks.md.
    shaping: float = Field(
        default=0.1,
        ge=0,
        lt=1,
        description="tool-use shaping weight W in [0, 1): a failed task earns up to W for well-formed calls",
    )

    def build(
        self,
        *,
        all_or_nothing: bool = False,
        success_threshold: float = SUCCESS_THRESHOLD,
        shaped: bool = False,
        cache_dir: Path | None = None,
        unchecked: bool = False,
    ) -> Judge:
        """The judge these settings name; `shaped` (training against tools) adds the capped tool-use
        shaping; RULER's verdicts are cached in `cache_dir`; `success_threshold`: see `build_judge`.
        `unchecked`: some scenarios have no check (synthesized tasks among grounded ones): with the
        checks' modes, those are judged by RULER (ByCheckJudge), the others by their checks."""
        # Lazy, as in build_judge
        from mcprl.judges.combine import ByCheckJudge, ShapedJudge
        from mcprl.judges.ruler import RulerJudge
        from mcprl.judges.shaping import ToolUseShaping

        mode: JudgeMode = "gate" if self.mode == "both" else self.mode
        ruler = None
        if mode != "verify" or unchecked:
            if self.rubric and not Path(self.rubric).is_file():
                raise UserError(f"--rubric {self.rubric}: no such file; give a text file with the judging criteria")
            rubric = Path(self.rubric).read_text() if self.rubric else None
            ruler = RulerJudge(self.model, rubric=rubric, api_base=self.api_base, cache_dir=cache_dir)
        judge = build_judge(mode, ruler, all_or_nothing=all_or_nothing, success_threshold=success_threshold)
        if unchecked and mode != "ruler" and ruler is not None:
            judge = ByCheckJudge(judge, ruler)
        return ShapedJudge(judge, ToolUseShaping(), self.shaping) if shaped and self.shaping > 0 else judge

    def held_out(
        self,
        verifiable: bool,
        *,
        all_or_nothing: bool = False,
        success_threshold: float = SUCCESS_THRESHOLD,
        cache_dir: Path | None = None,
    ) -> Judge:
        """How held-out scenarios are scored, by a run's evaluations and by `mcprl eval` alike: by
        their checks when every one has one (`verifiable`), else each scenario without a check by RULER
        and each with one by its check (gating RULER where the mode is both); never shaped, so a score
        is the task's alone."""
        # Lazy, as in build_judge
        from mcprl.judges.verify import VerifyJudge

        if verifiable:
            return VerifyJudge(all_or_nothing=all_or_nothing, success_threshold=success_threshold)
        # without checks only RULER can judge: a scenario without one by RULER, one with one by its check
        return self.build(
            all_or_nothing=all_or_nothing, success_threshold=success_threshold, cache_dir=cache_dir, unchecked=True
        )


__all__ = sorted([*_EXPORTS, "JudgeConfig", "JudgeMode", "build_judge"])
