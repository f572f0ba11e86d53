"""`mcprl train`: discover -> scenarios -> evaluate base -> [roll out -> judge -> GRPO step ->
checkpoint -> hot swap -> evaluate every E steps] -> report.

Everything a run writes lives in the model's directory `<MCPRL_HOME>/<project>/<name>/`:
config.json (secrets redacted), tools.json (tool list + hash), scenarios/{train,val}.jsonl,
trajectories/step_NNNN.jsonl, eval/step_NNNN.jsonl, metrics.jsonl, checkpoints/, report.html.
A step's lines are only appended after its checkpoint is committed, so a killed run resumes
(`--resume`) with no lost and no repeated steps.
"""

from __future__ import annotations

import json
import random
import signal
import time
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any, Callable

from mcprl import memory
from mcprl.errors import UserError
from mcprl.metrics import rollout_metrics
from mcprl.run_config import RunConfig
from mcprl.types import Scenario, TrajectoryGroup, dump_jsonl, load_jsonl


class Interrupt:
    """First Ctrl-C: finish the current step, then stop. Second: abandon the step now."""

    def __init__(self, say: Callable[[str], None]):
        self.requested = False
        self._say = say
        self._previous = None

    def __enter__(self) -> Interrupt:
        try:
            self._previous = signal.signal(signal.SIGINT, self._handle)
        except ValueError:  # not the main thread: leave Ctrl-C alone
            self._previous = None
        return self

    def _handle(self, *_: Any) -> None:
        if self.requested:
            raise KeyboardInterrupt
        self.requested = True
        self._say("Ctrl-C: finishing this step, then saving and stopping (Ctrl-C again abandons the step)")

    def __exit__(self, *exc: Any) -> None:
        if self._previous is not None:
            signal.signal(signal.SIGINT, self._previous)


def step_batch(train: list[Scenario], step: int, k: int, seed: int) -> list[Scenario]:
    """The scenarios of step `step` (0-based): epochs of seeded shuffles, sliced k at a time,
    so a resumed run sees exactly the scenarios it would have seen."""
    out: list[Scenario] = []
    start = step * k
    epoch = start // len(train)
    offset = start % len(train)
    while len(out) < k:
        order = list(train)
        random.Random(f"{seed}/epoch/{epoch}").shuffle(order)
        out += order[offset : offset + (k - len(out))]
        epoch, offset = epoch + 1, 0
    return out


def extra_scenarios(train: list[Scenario], batch: list[Scenario], step: int, k: int, seed: int) -> list[Scenario]:
    """At most k scenarios step `step` may draw besides its batch (dynamic sampling), in the
    order it draws them: like the batch, a pure function of (seed, step)."""
    rest = [s for s in train if all(s is not b for b in batch)]
    random.Random(f"{seed}/extra/{step}").shuffle(rest)
    return rest[:k]


def learnable(group: TrajectoryGroup) -> bool:
    """Whether GRPO can learn from the group: scored, and its rewards differ."""
    return not group.skipped and len({t.reward for t in group.valid}) > 1


class MetricsLog:
    """metrics.jsonl: one line per training step (`kind: train`) or evaluation (`kind: eval`)."""

    def __init__(self, path: Path):
        self.path = path

    def read(self) -> list[dict[str, Any]]:
        if not self.path.exists():
            return []
        return [json.loads(line) for line in self.path.read_text().splitlines() if line.strip()]

    def append(self, row: dict[str, Any]) -> None:
        with self.path.open("a") as f:
            f.write(json.dumps(row) + "\n")

    def truncate_after(self, step: int) -> None:
        """Drop lines of steps past the last checkpoint (written by a run killed mid-step)."""
        rows = [r for r in self.read() if r["step"] <= step]
        self.path.write_text("".join(json.dumps(r) + "\n" for r in rows))


class TrainingRun:
    def __init__(self, cfg: RunConfig, *, resume: bool = False, say: Callable[[str], None] = print, progress=None):
        from mcprl.model import TrainableModel

        self.cfg = cfg
        self.resume = resume
        self.say = say
        self.progress = progress  # a rich Progress, or None
        self.model = TrainableModel(name=cfg.name, project=cfg.project, base_model=cfg.model)
        self.dir = self.model.dir
        self.metrics = MetricsLog(self.dir / "metrics.jsonl")
        self.secrets: list[str] = []

    # ---- the run ----------------------------------------------------------------------------
    async def run(self) -> dict[str, Any]:
        from judges.verify import build_checks
        from mcprl.backends.local import LocalBackend
        from mcprl.train import checkpoints

        cfg = self.cfg
        done = checkpoints.latest_step(self.model.checkpoints_dir)
        if done and not self.resume:
            raise UserError(f"{self.dir} already has {done} trained step(s); pass --resume to continue it, or --name NEW for a new run")
        self.dir.mkdir(parents=True, exist_ok=True)
        async with AsyncExitStack() as stack:
            pool = await self._tools(stack)
            train, val = await self._scenarios(pool)
            build_checks(train + val, cfg.scenarios or "the scenarios")
            train = await self._demonstration(pool, train)
            judge = self._judge(shaped=pool is not None)
            backend = await stack.enter_async_context(LocalBackend(dtype=cfg.dtype))
            self.say(f"loading {cfg.model} and serving {cfg.name} ({'GPU: vLLM + Unsloth' if backend.device == 'cuda' else 'CPU'})...")
            await self.model.register(backend)
            step = self.model.get_step()
            self.metrics.truncate_after(step)
            self._write_config()
            if not any(r["kind"] == "eval" and r["step"] == step for r in self.metrics.read()):
                await self._evaluate(pool, val, step)
            budget_s = cfg.time_budget_minutes * 60 if cfg.time_budget_minutes else float("inf")
            spent = 0.0
            with Interrupt(self.say) as interrupt:
                while step < cfg.steps and not interrupt.requested and spent < budget_s:
                    t0 = time.monotonic()
                    await self._train_step(pool, judge, train, step)
                    spent += time.monotonic() - t0
                    step = self.model.get_step()
                    if step < cfg.steps and cfg.eval_every and step % cfg.eval_every == 0:
                        await self._evaluate(pool, val, step)
            interrupted = interrupt.requested and step < cfg.steps
            if spent >= budget_s:
                self.say(f"time budget of {cfg.time_budget_minutes:g} min used after {step} steps")
            if not interrupted and not any(r["kind"] == "eval" and r["step"] == step for r in self.metrics.read()):
                await self._evaluate(pool, val, step)
        return self.summary(interrupted=interrupted)

    async def _tools(self, stack: AsyncExitStack):
        from mcprl.tools import ServerSpec, ToolPool, hash_change_warning, secret_values

        cfg = self.cfg
        if cfg.server is None:
            return None
        spec = ServerSpec.parse(cfg.server, transport=cfg.transport, headers=cfg.headers, env=cfg.env,
                                cwd=cfg.cwd, allow=cfg.allow, deny=cfg.deny)
        self.secrets = secret_values(spec)
        self.say(f"discovering tools of {cfg.server} ...")
        pool = await stack.enter_async_context(ToolPool(spec, workdir=self._server_workdir(spec)))
        toolset = pool.toolset
        if not toolset.tools:
            raise UserError(f"{cfg.server} offers no tools (after --allow/--deny); nothing to train on")
        tools_file = self.dir / "tools.json"
        previous = json.loads(tools_file.read_text())["hash"] if tools_file.exists() else None
        if warning := hash_change_warning(previous, toolset.hash, cfg.server):
            self.say(f"warning: {warning}")
        tools_file.write_text(json.dumps({"server": self._redact(cfg.server), "hash": toolset.hash, "tools": toolset.tools}, indent=2))
        self.say(f"{len(toolset.tools)} tools: {', '.join(t['function']['name'] for t in toolset.tools)}")
        return pool

    def _server_workdir(self, spec) -> Path | None:
        if spec.transport != "stdio" or spec.cwd is not None:
            return None
        d = self.dir / "server-workdir"
        d.mkdir(parents=True, exist_ok=True)
        return d

    async def _scenarios(self, pool) -> tuple[list[Scenario], list[Scenario]]:
        cfg = self.cfg
        sdir = self.dir / "scenarios"
        if (sdir / "train.jsonl").exists() and (sdir / "val.jsonl").exists() and self.resume:
            return load_jsonl(sdir / "train.jsonl", Scenario), load_jsonl(sdir / "val.jsonl", Scenario)
        if cfg.scenarios:
            scenarios = load_jsonl(Path(cfg.scenarios), Scenario)
            source = cfg.scenarios
        elif cfg.tasks:
            from servers import registry

            scenarios = registry.get(cfg.tasks).generate(cfg.n, seed=cfg.seed, difficulties=cfg.difficulties)
            source = f"servers.{cfg.tasks} generator"
        else:
            from scenarios import synthesize

            if pool is None:
                raise UserError("no scenarios: pass --scenarios FILE, --tasks NAME, or --server to synthesize from")
            self.say(f"synthesizing {cfg.n} scenarios with {cfg.judge_model} (one line per generator call) ...")
            result = await synthesize(pool.toolset.tools, cfg.n, cfg.judge_model, api_base=cfg.judge_api_base,
                                      task_hint=cfg.task_hint, seed=cfg.seed, say=self.say,
                                      resources=pool.toolset.resources, prompts=pool.toolset.prompts)
            scenarios, source = result.scenarios, "synthesized"
            if len(scenarios) < 2:
                raise UserError(f"{result.report.failure(cfg.judge_model, '--judge-model')}, or pass --scenarios FILE")
            if result.report.shortfall:
                self.say(f"warning: {result.report.failure(cfg.judge_model, '--judge-model')}; training on those")
        if len(scenarios) < 2:
            raise UserError(f"need at least 2 scenarios, got {len(scenarios)} from {source}")
        train, val = self._split(scenarios)
        dump_jsonl(train, sdir / "train.jsonl")
        dump_jsonl(val, sdir / "val.jsonl")
        self.say(f"{len(train)} train / {len(val)} val scenarios ({source})")
        return train, val

    def _split(self, scenarios: list[Scenario]) -> tuple[list[Scenario], list[Scenario]]:
        cfg = self.cfg
        if any(s.split for s in scenarios):
            train = [s for s in scenarios if s.split != "val"]
            val = [s for s in scenarios if s.split == "val"]
        else:
            order = list(scenarios)
            random.Random(f"{cfg.seed}/split").shuffle(order)
            n_val = max(1, round(len(order) * cfg.val_fraction))
            val, train = order[:n_val], order[n_val:]
        if cfg.val_size is not None:
            val = val[: cfg.val_size]
        if not train or not val:
            raise UserError("the split left no train or no val scenarios; use more scenarios or another --val-fraction")
        return train, val

    async def _demonstration(self, pool, train: list[Scenario]) -> list[Scenario]:
        """Settle the example exchange the policy sees (mcprl.demonstration) and record it in the
        config; a scenario it was built from leaves the training set. A resumed run keeps its own."""
        from mcprl import demonstration

        cfg = self.cfg
        previous = self.dir / "config.json"
        if self.resume and previous.exists():
            old = json.loads(previous.read_text())
            self.cfg = cfg.model_copy(update={k: old.get(k) for k in ("example_messages", "example_source")})
            return train
        shipped = None
        if cfg.tasks and cfg.task_help:
            from servers import registry

            shipped = registry.get(cfg.tasks).example
        if not cfg.demonstration:
            demo = demonstration.Demonstration(messages=None, source="none")
        elif cfg.example:
            demo = demonstration.Demonstration(messages=demonstration.load_example(Path(cfg.example)), source="file")
        elif shipped is not None:
            demo = demonstration.Demonstration(messages=shipped, source="task-module")
        elif pool is not None:
            self.say(f"building the demonstration from a training scenario with {cfg.judge_model} ...")
            demo, train = await demonstration.build(train, pool, model=cfg.judge_model, api_base=cfg.judge_api_base,
                                                    seed=cfg.seed, say=self.say)
            dump_jsonl(train, self.dir / "scenarios" / "train.jsonl")
        else:
            demo = demonstration.Demonstration(messages=None, source="generic")
        self.say(f"demonstration: {demo.source}")
        self.cfg = cfg.model_copy(update={"example_messages": demo.messages, "example_source": demo.source})
        return train

    def _judge(self, shaped: bool = False):
        """The run's judge; `shaped` (training against tools) adds the capped tool-use shaping."""
        from judges import RulerJudge, ShapedJudge, ToolUseShaping, build_judge

        cfg = self.cfg
        mode = {"both": "gate"}.get(cfg.judge, cfg.judge)
        ruler = None
        if mode != "verify":
            rubric = Path(cfg.rubric).read_text() if cfg.rubric else None
            ruler = RulerJudge(cfg.judge_model, rubric=rubric, api_base=cfg.judge_api_base, cache_dir=self.dir / "judge-cache")
        judge = build_judge(mode, ruler, all_or_nothing=not cfg.task_help)
        return ShapedJudge(judge, ToolUseShaping(), cfg.shaping) if shaped and cfg.shaping > 0 else judge

    async def _rollouts(self, pool, scenarios: list[Scenario], per: int, label: str) -> list[TrajectoryGroup]:
        from mcprl.gather import gather_trajectory_groups
        from mcprl.rollout import rollout

        rc = self.cfg.rollout_config()
        total = len(scenarios) * per
        task = self.progress.add_task(label, total=total) if self.progress else None

        def tick(done: int, _total: int) -> None:
            if self.progress is not None:
                self.progress.update(task, completed=done)

        groups = await gather_trajectory_groups(
            [[rollout(self.model, s, pool, rc) for _ in range(per)] for s in scenarios],
            max_concurrency=self.cfg.max_concurrency, progress=tick,
        )
        if self.progress is not None:
            self.progress.remove_task(task)
        for g, s in zip(groups, scenarios):
            g.scenario = s
        return groups

    async def _train_step(self, pool, judge, train: list[Scenario], step: int) -> None:
        from judges import score_groups
        from mcprl.train.config import TrainConfig

        cfg = self.cfg
        warmup = step < cfg.sft_warmup_steps  # reinforce successes only, before GRPO takes over
        batch = step_batch(train, step, cfg.groups_per_step, cfg.seed)
        label = f"step {step + 1}: rollouts"
        groups = await score_groups(judge, await self._rollouts(pool, batch, cfg.group_size, label))
        # Dynamic sampling (DAPO): a group whose rewards are all equal teaches GRPO nothing, so draw
        # more scenarios, a bounded number, until the step has groups_per_step groups to learn from.
        # Warm-up steps learn from rewards, not differences: they need no more.
        extra = [] if warmup else extra_scenarios(train, batch, step, cfg.extra_groups, cfg.seed)
        while extra and (need := cfg.groups_per_step - sum(map(learnable, groups))) > 0:
            more, extra = extra[:need], extra[need:]
            groups += await score_groups(judge, await self._rollouts(pool, more, cfg.group_size, f"{label}, {len(more)} more"))
        dump_jsonl([self._redact_group(g) for g in groups], self.dir / "trajectories" / f"step_{step + 1:04d}.jsonl")
        tc = TrainConfig(learning_rate=cfg.learning_rate, beta=cfg.beta, scale_rewards=cfg.scale_rewards,
                         advantage="reward" if warmup else "group")
        train_metrics = await self.model.train(groups, tc)
        sampling = {"groups_drawn": len(groups) - len(batch), "groups_dropped": 0 if warmup else sum(not learnable(g) for g in groups)}
        row = {"kind": "train", "step": self.model.get_step(), "sft_warmup": warmup, **rollout_metrics(groups), **sampling,
               **{f"train/{k}": v for k, v in train_metrics.items()}, "peak_rss_mb": memory.peak_rss_mb()}
        self.metrics.append(row)
        self._log_wandb(row)
        self.say(
            f"step {row['step']}/{cfg.steps}: reward {row['reward_mean']:.3f}, tool calls {row['tool_call_rate']:.0%}, "
            f"success {row.get('success_rate', float('nan')):.0%}, trained groups "
            f"{int(train_metrics.get('groups_trained', 0))}/{int(row['groups'])}"
        )

    async def _evaluate(self, pool, val: list[Scenario], step: int) -> None:
        from judges import VerifyJudge, score_groups

        verifiable = all(s.check is not None for s in val)
        per = self.cfg.eval_samples if verifiable else max(self.cfg.eval_samples, 2)
        groups = await self._rollouts(pool, val, per, f"eval at step {step}")
        judge = VerifyJudge(all_or_nothing=not self.cfg.task_help) if verifiable else self._judge()
        groups = await score_groups(judge, groups)
        dump_jsonl([self._redact_group(g) for g in groups], self.dir / "eval" / f"step_{step:04d}.jsonl")
        row = {"kind": "eval", "step": step, **rollout_metrics(groups)}
        self.metrics.append(row)
        self._log_wandb(row)
        what = f"success {row['success_rate']:.0%}" if "success_rate" in row else f"mean judge score {row['reward_mean']:.3f}"
        self.say(f"eval at step {step}: {what} on {len(val)} held-out scenarios")

    # ---- output -------------------------------------------------------------------------------
    def _redact(self, obj: Any) -> Any:
        from mcprl.tools import redact

        return redact(obj, self.secrets) if self.secrets else obj

    def _redact_group(self, g: TrajectoryGroup) -> TrajectoryGroup:
        return TrajectoryGroup.model_validate(self._redact(g.model_dump(mode="json"))) if self.secrets else g

    def _write_config(self) -> None:
        from mcprl.tools import redact, secret_values

        data = self.cfg.model_dump(mode="json")
        secrets = self.secrets + secret_values()
        data["headers"] = {k: "***" for k in data["headers"]}
        (self.dir / "config.json").write_text(json.dumps(redact(data, secrets), indent=2))

    def _log_wandb(self, row: dict[str, Any]) -> None:
        if not self.cfg.wandb:
            return
        try:
            import wandb
        except ImportError:
            return
        if wandb.run is None:
            wandb.init(project=self.cfg.project, name=self.cfg.name, config=self.cfg.model_dump(mode="json"))
        wandb.log({f"{row['kind']}/{k}": v for k, v in row.items() if isinstance(v, (int, float))}, step=row["step"])

    def summary(self, interrupted: bool = False) -> dict[str, Any]:
        rows = self.metrics.read()
        evals = [r for r in rows if r["kind"] == "eval"]
        return {"dir": str(self.dir), "interrupted": interrupted, "step": self.model.get_step(),
                "first_eval": evals[0] if evals else None, "last_eval": evals[-1] if evals else None,
                "train_steps": [r for r in rows if r["kind"] == "train"]}
