"""`mcprl train`: discover -> scenarios -> evaluate base -> [roll out -> judge -> GRPO step ->
checkpoint -> hot swap -> evaluate every E steps] -> report.

Everything a run writes lives in the model's directory `<MCPRL_HOME>/<project>/<name>/`:
config.json (secrets redacted), tools.json (tool list + hash), scenarios/{train,val}.jsonl,
trajectories/step_NNNN.jsonl, eval/step_NNNN.jsonl, metrics.jsonl, checkpoints/, report.html.
A step's lines are only appended after its checkpoint is committed, and its train line is set
aside (step.pending.json) before the commit, so a killed run resumes (`--resume`) with no lost and
no repeated steps.
"""

from __future__ import annotations

import json
import math
import random
import signal
import time
from collections.abc import Callable
from contextlib import AsyncExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from mcprl import tasks
from mcprl.backends.local import LocalBackend
from mcprl.cluster import open_rollouts
from mcprl.errors import UserError, clip
from mcprl.judges import score_groups
from mcprl.judges.verify import build_checks
from mcprl.model import memory
from mcprl.model.trainable import TrainableModel
from mcprl.model.weights import load_tokenizer
from mcprl.paths import replace_text
from mcprl.rollout import agents
from mcprl.rollout.gather import LocalRollouts, Rollouts, untrainable
from mcprl.rollout.loop import COMPLETE_TASK, initial_messages
from mcprl.run import demonstration
from mcprl.run.config import RunConfig, load_saved
from mcprl.run.metrics import MetricsLog, rollout_metrics
from mcprl.run.pipeline import Pipeline, policy_version, split_stale
from mcprl.run.references import reference_turn_tokens, written_chain
from mcprl.run.unsolved import Step, Strategy, learnable, solved, strategy
from mcprl.scenarios.isolation import OUTSIDE, by_reason, unsafe_writers
from mcprl.scenarios.source import run_scenarios
from mcprl.tools import ToolPool, open_tools, secret_values, write_tools
from mcprl.tools.redact import redact, redact_model
from mcprl.tools.tape import read_cache
from mcprl.train import checkpoints
from mcprl.train.loss import objective
from mcprl.types import Scenario, TrajectoryGroup, dump_jsonl, load_jsonl
from mcprl.usage import run_tools, step_metrics

PENDING_LINE = "step.pending.json"
TURN_SPARE = 16  # tokens a turn budget raised to fit the reference turns (`_fit_turns`) leaves to spare


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


T = TypeVar("T")


def step_batch(train: list[T], step: int, k: int, seed: int) -> list[T]:
    """The scenarios (or anything drawn like them) of step `step` (0-based): epochs of seeded
    shuffles, sliced k at a time, so a resumed run sees exactly the scenarios it would have seen."""
    out: list[T] = []
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


@dataclass
class Collected:
    """A step's groups as collected (rolled out, scored, topped up, retried), before training."""

    step: int  # 0-based: the policy version it trains
    groups: list[TrajectoryGroup]
    batch_size: int  # groups of its batch (the rest were drawn by dynamic sampling)
    warmup: bool
    references: bool = False  # a reference step: the groups are written reference chains, nothing was rolled out
    read_cache: dict[str, float] = field(default_factory=dict)  # --cache-reads: calls saved, server time saved


class TrainingRun:
    """The loop: evaluate the base model, then train steps (evaluating every `eval_every`), then
    the final evaluation; each stage's work is its own module's (see mcprl.run.config)."""

    def __init__(self, cfg: RunConfig, *, resume: bool = False, say: Callable[[str], None] = print, progress=None):
        self.cfg = cfg
        self.resume = resume
        self.say = say
        self.progress = progress  # a rich Progress, or None
        self.model = TrainableModel(name=cfg.name, project=cfg.project, base_model=cfg.model, lora=cfg.lora)
        self.dir = self.model.dir
        self.metrics = MetricsLog(self.dir / "metrics.jsonl")
        self.secrets: list[str] = []
        self.rollouts: Rollouts | None = None  # where rollouts run: this process, or Ray workers (mcprl.cluster)
        self.references: list[TrajectoryGroup] = []  # the reference steps' chains, a group each (`_reference_chains`)

    async def run(self) -> dict[str, Any]:
        cfg = self.cfg
        done = checkpoints.latest_step(self.model.checkpoints_dir)
        if done and not self.resume:
            raise UserError(
                f"{self.dir} already has {done} trained step(s); pass --resume to continue it, or --name NEW for a new "
                "run"
            )
        self.agent = agents.load(cfg.rollout.agent)  # a bad agent spec stops the run before any work
        for spec in {cfg.train.loss, cfg.warmup_loss}:  # and so does a bad loss
            objective(spec)
        self.unsolved = strategy(cfg.unsolved)  # and a bad strategy for unsolved groups
        if cfg.scenarios.file and not self.resume:  # and a check in the user's file that cannot be built
            build_checks(load_jsonl(Path(cfg.scenarios.file), Scenario), cfg.scenarios.file)
        self.dir.mkdir(parents=True, exist_ok=True)
        shipped = tasks.get(cfg.scenarios.tasks) if cfg.scenarios.tasks else None
        async with AsyncExitStack() as stack:
            grounding = not (cfg.scenarios.file or shipped) and cfg.scenarios.source in ("grounded", "mixed")
            if cfg.server.connects and grounding:
                await self._hide_unsafe_writers()
            on_ray = await stack.enter_async_context(
                open_rollouts(cfg.cluster, cfg.server, cfg.rollout.agent, say=self.say)
            )  # (started and checked before any work: None for the local engine)
            pool = await stack.enter_async_context(open_tools(cfg.server, self.dir, say=self.say))
            self.rollouts = on_ray or LocalRollouts(self.agent, pool)
            self.secrets = secret_values(pool.spec if pool is not None else None)
            train, val = await run_scenarios(
                cfg.scenarios,
                self.dir / "scenarios",
                seed=cfg.seed,
                resume=self.resume,
                pool=pool,
                generate=shipped.generate if shipped else None,
                model=cfg.judge.model,
                api_base=cfg.judge.api_base,
                explore=cfg.explore,
                secrets=self.secrets,
                max_calls=cfg.rollout.calls_per_episode,
                say=self.say,
            )
            hidden = [n for n in pool.spec.deny if n not in cfg.server.deny] if pool is not None else []
            if pool is not None and (hidden or pool.spec.private_home != cfg.server.private_home):
                # what grounding found unsafe (a write that stays in the server's state, the user's home written):
                # the tools hidden and the homes given on resume too, and by the Ray workers
                update = {"deny": [*cfg.server.deny, *hidden], "private_home": pool.spec.private_home}
                cfg.server = cfg.server.model_copy(update=update)
                write_tools(pool, self.dir)
                if on_ray is not None:  # its workers opened their pools before grounding
                    on_ray.server = cfg.server
            build_checks(train + val, cfg.scenarios.file or "the scenarios")  # a task set's or grounding's, too
            train = await self._demonstration(
                pool, train, shipped.demonstration if shipped and cfg.scenarios.task_help else None
            )
            self._fit_turns(train + val)
            self._reference_chains(pool, train)
            judge = cfg.judge.build(
                all_or_nothing=not cfg.scenarios.task_help,
                success_threshold=cfg.train.success_threshold,
                shaped=pool is not None,
                cache_dir=self.dir / "judge-cache",
                unchecked=any(s.check is None for s in train),  # synthesized tasks among grounded ones: RULER
            )
            # where the policy is served and trained: where the rollouts put it (None: in this process)
            where = self.rollouts.placement(self.model, cfg.runtime.dtype)
            backend = await stack.enter_async_context(LocalBackend.from_config(cfg.runtime, where))
            self.say(
                f"loading {cfg.model} and serving {cfg.name} "
                f"({'GPU: vLLM + Unsloth' if backend.device == 'cuda' else 'CPU'})..."
            )
            await self.model.register(backend)
            step = self.model.get_step()
            self.metrics.truncate_after(step)
            self._recover_line(step)
            replace_text(
                self.dir / "config.json", json.dumps(self.cfg.redacted(self.secrets), indent=2)
            )  # what --resume reads
            if self.cfg.wandb:
                self.metrics.wandb = {
                    "project": cfg.project,
                    "name": cfg.name,
                    "config": self.cfg.redacted(self.secrets),
                }
            if not any(r["kind"] == "eval" and r["step"] == step for r in self.metrics.read()):
                await self._evaluate(val, step)
            budget_s = cfg.time_budget_minutes * 60 if cfg.time_budget_minutes else float("inf")
            spent = 0.0
            with Interrupt(self.say) as interrupt:
                async with Pipeline(
                    lambda s: self._collect(pool, judge, train, s), step, cfg.steps, cfg.train.max_off_policy_steps
                ) as pipeline:
                    while step < cfg.steps and not interrupt.requested and spent < budget_s:
                        t0 = time.monotonic()
                        await self._learn(await pipeline.next())
                        pipeline.trained()
                        spent += time.monotonic() - t0
                        step = self.model.get_step()
                        if step < cfg.steps and cfg.eval_every and step % cfg.eval_every == 0:
                            await self._evaluate(val, step)
            interrupted = interrupt.requested and step < cfg.steps
            if spent >= budget_s:
                self.say(f"time budget of {cfg.time_budget_minutes:g} min used after {step} steps")
            if not interrupted and not any(r["kind"] == "eval" and r["step"] == step for r in self.metrics.read()):
                await self._evaluate(val, step)
        return self.summary(interrupted=interrupted)

    async def _hide_unsafe_writers(self) -> None:
        """Tasks grounded without writing are answered by the server as it is; on a server whose state
        outlives its sessions (the user's repository, database, files) a rollout's write would change
        it and the answers with it, and a tool acting outside the server (a process, a command) would act on
        the user's machine, so the tools exploring would not call are not offered either."""
        cfg = self.cfg
        async with ToolPool(cfg.server.spec()) as probe:
            unsafe = unsafe_writers(probe, cfg.explore, say=lambda _: None)
        for why, tools in by_reason(unsafe).items():
            self.say(
                f"not offering {', '.join(tools)} to the policy: {'it' if len(tools) == 1 else 'each'} {why} ("
                + ("" if why == OUTSIDE else "--isolated if each session starts fresh, ")
                + "--explore-writes to allow them)"
            )
        if unsafe:
            cfg.server = cfg.server.model_copy(update={"deny": [*cfg.server.deny, *unsafe]})

    async def _demonstration(self, pool, train: list[Scenario], shipped: list[dict[str, Any]] | None) -> list[Scenario]:
        """Settle the demonstration the policy sees (mcprl.run.demonstration) into the run's rollout
        settings; a scenario it was built from leaves the training set. A resumed run keeps its own."""
        cfg = self.cfg
        previous = self.dir / "config.json"
        if self.resume and previous.exists():
            old = load_saved(previous)
            shown, source = old.rollout.demonstrations, old.demonstration_source
        else:
            context = demonstration.Context(
                train=train,
                pool=pool,
                enabled=cfg.rollout.demonstration,
                given=cfg.rollout.demonstrations,
                file=cfg.demonstration_file,
                shipped=shipped,
                model=cfg.judge.model,
                api_base=cfg.judge.api_base,
                seed=cfg.seed,
                per_tool=cfg.demonstration_per_tool,
                say=self.say,
            )
            demo, kept = await demonstration.settle(context)
            if kept is not train:
                dump_jsonl(kept, self.dir / "scenarios" / "train.jsonl")
            train, shown, source = kept, demo.exchanges, demo.source
            self.say(f"demonstration: {source}")
        self.cfg = cfg.model_copy(
            update={
                "rollout": cfg.rollout.model_copy(update={"demonstrations": shown}),
                "demonstration_source": source,
            }
        )
        return train

    def _fit_turns(self, scenarios: list[Scenario]) -> None:
        """A turn budget under what a task's reference chain takes (a call carrying a 40-digit commit
        hash is 80 tokens) leaves that task unsolvable and its rollouts cut mid-call. A run not given
        `--max-tokens` raises it to fit the longest reference turn, TURN_SPARE tokens to spare; one
        given it is told which tasks cannot fit."""
        cfg, budget = self.cfg, self.cfg.rollout.max_tokens
        known = [s for s in scenarios if s.reference]
        if not known:
            return
        tokenizer = load_tokenizer(cfg.model)
        need = [(reference_turn_tokens(s, tokenizer, cfg.rollout.finish), s) for s in known]
        over = [(n, s) for n, s in need if n > budget]
        if not over:
            return
        most, longest = max(over, key=lambda pair: pair[0])
        fit = most + TURN_SPARE
        example = f"{most} tokens, {'/'.join(dict.fromkeys(c.tool for c in longest.reference))}"
        if "max_tokens" in cfg.rollout.model_fields_set:
            self.say(
                f"--max-tokens {budget} leaves {len(over)} of {len(known)} tasks unsolvable: their reference turns "
                f"take up to {example}; --max-tokens {fit} fits them"
            )
            return
        self.say(
            f"tokens per turn: {budget} -> {fit}, to fit {len(over)} of {len(known)} tasks' reference turns "
            f"(the longest {example}); --max-tokens sets it"
        )
        self.cfg = cfg.model_copy(update={"rollout": cfg.rollout.model_copy(update={"max_tokens": fit})})

    async def _rollouts(self, scenarios: list[Scenario], per: int, label: str, configs=None) -> list[TrajectoryGroup]:
        """`per` rollouts of each scenario, under the run's rollout settings or each scenario's own (`configs`)."""
        configs = configs or [self.cfg.rollout] * len(scenarios)
        # Every rollout of this call samples the step served now, however long it waits for a slot
        # and whatever steps are trained meanwhile (the asynchronous pipeline), and says which.
        policy, version = self.model.pinned(), self.model.get_step()
        total = len(scenarios) * per
        task = self.progress.add_task(label, total=total) if self.progress else None

        def tick(done: int, _total: int) -> None:
            if self.progress is not None:
                self.progress.update(task, completed=done)

        groups = await self.rollouts.run(
            policy, scenarios, per, configs, max_concurrency=self.cfg.max_concurrency, progress=tick
        )
        if self.progress is not None:
            self.progress.remove_task(task)
        for g, s in zip(groups, scenarios):
            g.scenario = s
            for t in g.trajectories:
                t.policy_version = version
        if (bad := untrainable(groups)) is not None:
            count, total, reason = bad
            raise UserError(
                f"{label}: {count} of {total} rollouts failed or sampled nothing, so the run would train nothing; "
                f"most common: {clip(redact(reason, self.secrets), 300)}"
            )
        return groups

    async def _collect(self, pool, judge, train: list[Scenario], step: int) -> Collected:
        """Step `step`'s groups, its rollouts sharing read-only answers with --cache-reads (mcprl.tools.tape)."""
        with read_cache(pool, step) as figures:
            collected = await self._collect_groups(judge, train, step)
        collected.read_cache = figures
        return collected

    async def _collect_groups(self, judge, train: list[Scenario], step: int) -> Collected:
        """Step `step`'s groups: its batch rolled out and scored, topped up and retried (a reference step's
        written chains instead, `_reference_step`)."""
        cfg = self.cfg
        if step < self.reference_steps:
            return await self._reference_step(judge, step)
        warmup = step < self.reference_steps + cfg.sft_warmup_steps  # reinforce successes only, before GRPO
        batch = step_batch(train, step, cfg.groups_per_step, cfg.seed)
        label = f"step {step + 1}: rollouts"
        # what is done with unsolved groups (mcprl.run.unsolved); nothing in warm-up steps, which reinforce successes
        unsolved, context = Strategy() if warmup else self.unsolved, self._step(judge, label)

        async def scored(scenarios: list[Scenario], what: str) -> list[TrajectoryGroup]:
            groups = await score_groups(judge, await self._rollouts(scenarios, cfg.group_size, what))
            await unsolved.scored(context, groups)
            return groups

        groups = await scored(batch, label)
        # Dynamic sampling (DAPO): a group whose rewards are all equal teaches GRPO nothing, so draw
        # more scenarios, a bounded number, until the step has groups_per_step groups to learn from.
        # Warm-up steps learn from rewards, not differences: they need no more.
        extra = [] if warmup else extra_scenarios(train, batch, step, cfg.extra_groups, cfg.seed)
        while extra and (need := cfg.groups_per_step - sum(map(learnable, groups))) > 0:
            more, extra = extra[:need], extra[need:]
            groups += await scored(more, f"{label}, {len(more)} more")
        await unsolved.collected(context, groups)
        return Collected(step, groups, len(batch), warmup)

    @property
    def reference_steps(self) -> int:
        """The steps `reference_epochs` passes over the reference chains take, `groups_per_step x group_size` a step."""
        cfg = self.cfg
        return math.ceil(cfg.reference_epochs * len(self.references) / (cfg.groups_per_step * cfg.group_size))

    def _reference_chains(self, pool, train: list[Scenario]) -> None:
        """The reference steps' material: each training task's reference chain written after the prompt
        its rollouts get (`initial_messages`: system prompt, demonstration, task; a custom agent's own
        prompt may differ) with the tools they are offered; the run says how many steps they take."""
        cfg = self.cfg
        if not cfg.reference_epochs or pool is None:
            return
        tools = pool.toolset.tools + ([COMPLETE_TASK] if cfg.rollout.finish == "tool" else [])
        for s in train:
            if (t := written_chain(s, initial_messages(s, tools, cfg.rollout), tools, cfg.rollout.finish)) is not None:
                self.references.append(TrajectoryGroup(scenario=s, trajectories=[t]))
        if not self.references:
            self.say(
                f"--reference-epochs: none of the {len(train)} training tasks has a reference chain; no reference steps"
            )
        else:
            self.say(
                f"reference steps: {self.reference_steps}, {cfg.groups_per_step * cfg.group_size} of "
                f"{len(self.references)} tasks' reference chains "
                f"each ({cfg.reference_epochs:g} pass{'' if cfg.reference_epochs == 1 else 'es'} over them), before "
                "any rollout; --reference-epochs sets it"
            )

    async def _reference_step(self, judge, step: int) -> Collected:
        """Reference step `step`: its chains scored by the run's judge, those it scores as solved kept (as
        the `reference` strategy keeps them), nothing rolled out."""
        cfg = self.cfg
        batch = step_batch(self.references, step, cfg.groups_per_step * cfg.group_size, cfg.seed)
        groups = await score_groups(judge, [g.model_copy(deep=True) for g in batch])
        for g in groups:
            for t in g.trajectories:
                t.policy_version = step
        kept = [g for g in groups if all(solved(t, cfg.train.success_threshold) for t in g.valid)]
        if len(kept) < len(groups):
            self.say(f"step {step + 1}: {len(groups) - len(kept)} reference chain(s) the judge does not score solved")
        return Collected(step, kept, len(batch), warmup=True, references=True)

    def _step(self, judge, label: str) -> Step:
        """What a strategy for unsolved groups may use of the step labelled `label` (mcprl.run.unsolved)."""
        return Step(
            judge=judge,
            rollout=self.cfg.rollout,
            threshold=self.cfg.train.success_threshold,
            label=label,
            roll_out=lambda scenarios, configs, what: self._rollouts(
                scenarios, self.cfg.group_size, what, configs=configs
            ),
            say=self.say,
        )

    def _recover_line(self, step: int) -> None:
        """A run killed after committing step `step`'s checkpoint but before appending its line: the
        line is the one set aside before the step plus the trainer's figures kept in the checkpoint."""
        pending = self.dir / PENDING_LINE
        if not pending.exists():
            return
        row = json.loads(pending.read_text())
        if row["step"] == step and not any(r["kind"] == "train" and r["step"] == step for r in self.metrics.read()):
            state = checkpoints.read_state(checkpoints.step_dir(self.model.checkpoints_dir, step))
            self.metrics.append({**row, **{f"train/{k}": v for k, v in state.get("metrics", {}).items()}})
        pending.unlink()

    async def _learn(self, c: Collected) -> None:
        """Train step `c.step` on its groups, but those sampled more than max_off_policy_steps
        versions ago (dropped, counted in `stale_dropped`); record the step."""
        cfg, groups, warmup = self.cfg, c.groups, c.warmup
        assert self.model.get_step() == c.step, (self.model.get_step(), c.step)
        fresh, stale = split_stale(groups, c.step, cfg.train.max_off_policy_steps)
        for g in stale:
            g.metadata["stale"] = True
        dump_jsonl(
            [redact_model(g, self.secrets) for g in groups], self.dir / "trajectories" / f"step_{c.step + 1:04d}.jsonl"
        )
        sampling = {
            "groups_drawn": len(groups) - c.batch_size,
            "groups_dropped": 0 if warmup else sum(not learnable(g) for g in groups),
            "groups_helped": sum(bool(g.metadata.get("helped")) for g in groups),
        }  # cfg.unsolved's help
        # How many versions behind the trained policy its groups were sampled (0 in the synchronous loop)
        ages = [c.step - v for g in fresh if (v := policy_version(g)) is not None]
        staleness = {
            "staleness_mean": sum(ages) / len(ages) if ages else 0.0,
            "staleness_max": max(ages, default=0),
            "stale_dropped": len(stale),
        }
        row = {
            "kind": "train",
            "step": c.step + 1,
            "sft_warmup": warmup,
            "reference_step": c.references,
            **rollout_metrics(groups, cfg.train.success_threshold),
            **sampling,
            **staleness,
            **self.rollouts.metrics(groups),
            **c.read_cache,
            **step_metrics(groups, run_tools(self.dir), success_threshold=cfg.train.success_threshold),
        }
        pending = self.dir / PENDING_LINE
        replace_text(pending, json.dumps(row))  # what a kill between the checkpoint and the line would lose
        train_metrics = await self.model.train(fresh, cfg.train, loss=cfg.warmup_loss if warmup else cfg.train.loss)
        row.update({f"train/{k}": v for k, v in train_metrics.items()}, peak_rss_mb=memory.peak_rss_mb())
        self.metrics.append(row)
        pending.unlink()
        if c.references:
            self.say(
                f"step {row['step']}/{cfg.steps}: trained on {int(train_metrics.get('groups_trained', 0))} reference "
                f"chains, {int(train_metrics.get('loss_tokens', 0))} tokens (a reference step, nothing rolled out)"
            )
            return
        self.say(
            f"step {row['step']}/{cfg.steps}: reward {row['reward_mean']:.3f}, tool calls {row['tool_call_rate']:.0%}, "
            f"success {row.get('success_rate', float('nan')):.0%}, trained groups "
            f"{int(train_metrics.get('groups_trained', 0))}/{int(row['groups'])}"
            # trainer vs sampler logprobs before the update: about 0 unless the two compute different
            # distributions, or (the asynchronous pipeline) the sampler's policy was an older step's
            + (
                f", logprob mismatch {train_metrics['logprob_mismatch']:.2g} (max "
                f"{train_metrics['logprob_mismatch_max']:.2g})"
                if "logprob_mismatch" in train_metrics
                else ""
            )
            + (
                f", staleness {staleness['staleness_mean']:.2g} (max {staleness['staleness_max']}), {len(stale)} stale "
                "group(s) dropped"
                if cfg.train.max_off_policy_steps
                else ""
            )
        )

    async def _evaluate(self, val: list[Scenario], step: int) -> None:
        cfg = self.cfg
        verifiable = all(s.check is not None for s in val)
        per = cfg.eval_samples if verifiable else max(cfg.eval_samples, 2)
        groups = await self._rollouts(val, per, f"eval at step {step}")
        judge = cfg.judge.held_out(
            verifiable,
            all_or_nothing=not cfg.scenarios.task_help,
            success_threshold=cfg.train.success_threshold,
            cache_dir=self.dir / "judge-cache",
        )
        groups = await score_groups(judge, groups)
        dump_jsonl([redact_model(g, self.secrets) for g in groups], self.dir / "eval" / f"step_{step:04d}.jsonl")
        row = {
            "kind": "eval",
            "step": step,
            **rollout_metrics(groups, cfg.train.success_threshold),
            **self.rollouts.metrics(groups),
            **step_metrics(groups, run_tools(self.dir), success_threshold=cfg.train.success_threshold),
        }
        self.metrics.append(row)
        what = (
            f"success {row['success_rate']:.0%}"
            if "success_rate" in row
            else f"mean judge score {row['reward_mean']:.3f}"
        )
        self.say(f"eval at step {step}: {what} on {len(val)} held-out scenarios")

    def summary(self, interrupted: bool = False) -> dict[str, Any]:
        rows = self.metrics.read()
        evals = [r for r in rows if r["kind"] == "eval"]
        return {
            "dir": str(self.dir),
            "interrupted": interrupted,
            "step": self.model.get_step(),
            "first_eval": evals[0] if evals else None,
            "last_eval": evals[-1] if evals else None,
            "train_steps": [r for r in rows if r["kind"] == "train"],
        }
