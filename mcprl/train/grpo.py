"""The GRPO trainer: LoRA on a causal LM, trained on the exact sampled tokens.

Each group's shared prompt runs once (see `packing`). Memory stays bounded as groups and lengths
grow: rows are packed into micro-batches of at most `micro_batch_tokens` padded tokens with
gradient accumulation, the decoder runs with gradient checkpointing where the activations would not fit
with room to spare (`checkpointing`), and log-probabilities come
from the LM head only at the sampled (loss-carrying) positions, `logprob_chunk` positions at a
time in forward and backward (see `logprobs`), so the [tokens x vocab] logits never exist at once.
"""

from __future__ import annotations

import time
from contextlib import nullcontext
from pathlib import Path

import torch
from peft import LoraConfig, PeftModel, get_peft_model
from peft.helpers import disable_input_dtype_casting

from mcprl.model import memory
from mcprl.serving.logits import output_head
from mcprl.train import packing
from mcprl.train.config import LoraSettings, TrainConfig
from mcprl.train.logprobs import token_logprobs
from mcprl.train.loss import LossInputs, Objective, objective, split_advantages
from mcprl.train.sequences import Sequence, trajectory_sequences, written_generations
from mcprl.types import TrajectoryGroup

# Bytes a micro-batch keeps for the backward pass, a token, a layer and a unit of width (hidden + MLP), with gradient
# checkpointing off: measured on SmolLM2-135M, bfloat16 base and float32 LoRA on the CPU (docs/benchmarks.md)
ACTIVATION_BYTES = 14


class GRPOTrainer:
    """Owns the trainable PEFT model and its optimizer; `step(groups)` is one GRPO update."""

    share_prefix = True  # needs attention that honours a [B, 1, T, T] mask (HF's sdpa/eager do)
    mixed_precision = True  # LoRA under autocast with a half-precision base (see _lora_compute_dtype)
    default_micro_batch_tokens = 2048  # when TrainConfig.micro_batch_tokens is None (see there)

    def __init__(self, model, tokenizer, lora: LoraSettings | None = None, adapter_dir: Path | None = None):
        self.tokenizer = tokenizer
        self.lora = lora or LoraSettings()
        if isinstance(model, PeftModel):  # already wrapped, e.g. by Unsloth's get_peft_model
            self.model = model
        elif adapter_dir is not None:
            self.model = PeftModel.from_pretrained(model, str(adapter_dir), is_trainable=True)
        else:
            cfg = LoraConfig(
                r=self.lora.rank,
                lora_alpha=self.lora.alpha,
                lora_dropout=self.lora.dropout,
                target_modules=self.lora.target_modules,
                task_type="CAUSAL_LM",
            )
            self.model = get_peft_model(model, cfg)
        # Refuse, at load, a model whose forward processes its logits in a way the trainer does not reproduce.
        output_head(self.model.get_base_model())
        self.optimizer: torch.optim.Optimizer | None = None
        self._auto_checkpointing: bool | None = None  # "auto"'s choice, made at the first step
        self.pad_id = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else tokenizer.eos_token_id

    def checkpointing(self, config: TrainConfig) -> bool:
        """Whether a step recomputes activations in its backward pass: as set, or with "auto" where a micro-batch's
        activations kept whole would take more than a quarter of the memory free at the first step (chosen once:
        every step of a trainer alike). A small model on a large machine trains a fifth faster without it."""
        if config.gradient_checkpointing != "auto":
            return config.gradient_checkpointing
        if self._auto_checkpointing is None:
            c = self.model.get_base_model().config.get_text_config()
            width = c.hidden_size + (getattr(c, "intermediate_size", None) or 4 * c.hidden_size)
            tokens = config.micro_batch_tokens or self.default_micro_batch_tokens
            kept = ACTIVATION_BYTES * tokens * c.num_hidden_layers * width
            self._auto_checkpointing = kept > memory.free_bytes(next(self.model.parameters()).device) / 4
        return self._auto_checkpointing

    def _lora_compute_dtype(self) -> torch.dtype | None:
        """With a bfloat16/float16 base, the dtype the float32 LoRA weights compute in (autocast; their
        gradients and the optimizer stay float32), so LoRA's matmuls run in the base's half precision,
        not float32 (faster on CPUs that compute it natively). None: no autocast."""
        if not self.mixed_precision:
            return None
        base = next(p for p in self.model.parameters() if not p.requires_grad)
        return None if base.dtype == torch.float32 else base.dtype

    def _optimizer(self, config: TrainConfig) -> torch.optim.Optimizer:
        if self.optimizer is None:
            params = [p for p in self.model.parameters() if p.requires_grad]
            self.optimizer = torch.optim.AdamW(params, lr=config.learning_rate, weight_decay=config.weight_decay)
        for g in self.optimizer.param_groups:  # the learning rate may change between steps
            g["lr"], g["weight_decay"] = config.learning_rate, config.weight_decay
        return self.optimizer

    def load_optimizer(self, path: Path, config: TrainConfig) -> None:
        self._optimizer(config).load_state_dict(torch.load(path, map_location="cpu", weights_only=True))

    def build_sequences(
        self, groups: list[TrajectoryGroup], config: TrainConfig, loss: Objective | None = None
    ) -> tuple[list[list[Sequence]], dict[str, float]]:
        """Each trainable group's loss-carrying sequences (a list per group), and counts of what was skipped.
        Each trajectory's advantage is the objective's (`loss`, default: `config.loss`'s)."""
        advantages = (loss or objective(config.loss)).advantages
        seqs: list[list[Sequence]] = []
        counts = {
            "groups": 0.0,
            "groups_skipped_zero_variance": 0.0,
            "groups_skipped_judge": 0.0,
            "groups_skipped_too_small": 0.0,
            "groups_skipped_no_success": 0.0,
            "trajectories": 0.0,
            "trajectories_trained": 0.0,
        }
        for g in groups:
            counts["groups"] += 1
            if g.skipped:
                counts["groups_skipped_judge"] += 1
                continue
            # A trajectory the run wrote (Generation.written) gets its tokens here, from the policy's own template.
            valid = [
                t.model_copy(update={"generations": written_generations(t, self.tokenizer)})
                if t.written_from is not None and not t.generations
                else t
                for t in g.valid
            ]
            valid = [t for t in valid if t.generations]
            adv = split_advantages(
                advantages, [t.reward for t in valid], [t.written_from is not None for t in valid], config
            )
            if isinstance(adv, str):
                counts[f"groups_skipped_{adv}"] = counts.get(f"groups_skipped_{adv}", 0.0) + 1
                continue
            group_seqs = []
            for t, a in zip(valid, adv):
                if a is None:  # left out of the step, its token count included
                    continue
                counts["trajectories"] += 1
                t_seqs = trajectory_sequences(t, a)
                counts["trajectories_trained"] += bool(t_seqs)
                group_seqs += t_seqs
            if group_seqs:
                seqs.append(group_seqs)
        counts["groups_trained"] = float(len(seqs))
        return seqs, counts

    def step(
        self,
        groups: list[TrajectoryGroup],
        config: TrainConfig,
        rescore_constrained: bool = False,
        loss: str | None = None,
    ) -> dict[str, float]:
        """One optimizer step over all trainable groups. Returns metrics (always, even with nothing to train).

        `loss`: the objective this step optimises (mcprl.train.loss.objective), default `config.loss`;
        the run's warm-up steps name theirs (`RunConfig.warmup_loss`).

        `rescore_constrained`: the sampler recorded grammar-masked logprobs for constrained turns
        (vLLM does), so the old-policy logprobs of those tokens are the trainer's own, as are those
        of turns no sampler drew (`Generation.written`), computed before the update: the one update
        of a step follows every micro-batch's forward, so each forward is still the policy that
        sampled, and its logprobs, detached, are that no-grad pass for free.

        `logprob_mismatch` (and `_max`): mean (max) |trainer - sampler logprob| over the completion
        tokens whose sampler logprobs the loss uses, on this pre-update pass: about 0 where sampler
        and trainer compute the same distribution; a broken path or an unsupported model shows here."""
        t0 = time.perf_counter()
        obj = objective(loss or config.loss)
        groups_seqs, metrics = self.build_sequences(groups, config, obj)
        seqs = [s for g in groups_seqs for s in g]
        metrics["sequences"] = float(len(seqs))
        if not seqs:
            metrics["trained"] = 0.0
            return metrics
        total_tokens = sum(s.n_loss_tokens for s in seqs)
        model = self.model
        model.train()
        if self.checkpointing(config):
            model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
        opt = self._optimizer(config)
        opt.zero_grad(set_to_none=True)
        sums: dict[str, float] = {
            "loss": 0.0,
            "clip_frac": 0.0,
            "ratio": 0.0,
            "kl": 0.0,
            "entropy": 0.0,
            "tokens": 0.0,
            "mismatch": 0.0,
            "mismatch_max": 0.0,
            "sampler_tokens": 0.0,
            "rescored_tokens": 0.0,
        }
        known = set(sums)
        budget = config.micro_batch_tokens or self.default_micro_batch_tokens
        rows = packing.pack_rows(groups_seqs, budget, share=self.share_prefix)
        low = self._lora_compute_dtype()
        device = next(model.parameters()).device.type
        # Under autocast, PEFT's cast of every LoRA input up to the weights' float32 (which autocast
        # undoes at once) is two copies per LoRA layer, forward and backward, for nothing.
        with disable_input_dtype_casting(model, active=low is not None):
            for mb in packing.micro_batches(rows, budget):
                batch = self._collate(mb, total_tokens, int(metrics["trajectories_trained"]), config)
                inputs = (batch["input_ids"], batch["attention_mask"], config.logprob_chunk)
                # Which tokens to score and how: the packed layout's positions, and for each sampled token
                # the distribution it was drawn from (the reference is scored under it too).
                scoring = {
                    "scored": batch["weights"] > 0,  # the LM head runs only where the loss needs a logprob
                    "position_ids": batch["position_ids"],
                    "pred_index": batch["pred_index"],
                    **{k: batch[k] for k in ("temperature", "top_p", "top_k", "min_p", "attention_spans")},
                }
                with torch.autocast(device, dtype=low) if low else nullcontext():
                    lp, ent = token_logprobs(model, *inputs, **scoring)
                    ref = None
                    if config.beta > 0:
                        with torch.no_grad(), model.disable_adapter():
                            ref, _ = token_logprobs(model, *inputs, **scoring)
                on = batch["weights"] > 0
                rescored = on & (batch["written"] | batch["constrained"] if rescore_constrained else batch["written"])
                old = torch.where(rescored, lp.detach(), batch["old_logprobs"])
                gap = (lp.detach() - old).abs()[on & ~rescored]
                sums["mismatch"] += float(gap.sum())
                sums["mismatch_max"] = max(sums["mismatch_max"], float(gap.max()) if gap.numel() else 0.0)
                sums["sampler_tokens"] += gap.numel()
                sums["rescored_tokens"] += float(rescored.sum())
                value, stats = obj.loss(LossInputs(lp, old, batch["advantages"], batch["weights"], ref), config)
                memory.release()  # what the forward freed (HF allocates and drops per-layer temporaries)
                value.backward()
                sums["loss"] += float(value.detach())
                sums["entropy"] += float((ent.detach() * (batch["weights"] > 0)).sum())
                for k, v in stats.items():
                    sums[k] = sums.get(k, 0.0) + float(v)
                del value, lp, ent, ref, batch, inputs, scoring, old
                memory.release()  # the micro-batch's activations, before the next one allocates its own
        grad_norm = torch.nn.utils.clip_grad_norm_(
            [p for p in model.parameters() if p.requires_grad], config.max_grad_norm or float("inf")
        )
        opt.step()
        opt.zero_grad(set_to_none=True)
        model.eval()
        n = max(sums["tokens"], 1.0)
        metrics.update(
            trained=1.0,
            loss=sums["loss"],
            grad_norm=float(grad_norm),
            loss_tokens=float(total_tokens),
            clip_frac=sums["clip_frac"] / n,
            ratio_mean=sums["ratio"] / n,
            entropy=sums["entropy"] / n,
            train_seconds=time.perf_counter() - t0,
        )
        if config.beta > 0:
            metrics["kl"] = sums["kl"] / n
        if sums["sampler_tokens"]:
            metrics.update(
                logprob_mismatch=sums["mismatch"] / sums["sampler_tokens"], logprob_mismatch_max=sums["mismatch_max"]
            )
        if sums["rescored_tokens"]:
            metrics["rescored_tokens"] = sums["rescored_tokens"]
        # a loss's own sums (mcprl.train.loss.Loss), per loss token
        metrics.update({f"loss/{k}": v / n for k, v in sums.items() if k not in known})
        return metrics

    def _collate(
        self, rows: list[packing.PrefixBranches], total_tokens: int, n_trajectories: int, config: TrainConfig
    ) -> dict[str, torch.Tensor]:
        return packing.collate(rows, self.pad_id, total_tokens, n_trajectories, config.loss_normalization)

    def save(self, out: Path) -> None:
        """Write the adapter and optimizer into `out` (a fresh directory)."""
        self.model.save_pretrained(str(out))
        if self.optimizer is not None:
            torch.save(self.optimizer.state_dict(), out / "optimizer.pt")
