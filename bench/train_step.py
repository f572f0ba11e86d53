"""Seconds and peak memory of one GRPO step on the CPU trainer, replaying a run's saved step (its groups
as they were sampled and scored) on the run's model and LoRA settings, so two versions of the trainer,
or two settings, are timed on the same work. Run it pinned, one at a time:

    taskset -c 0 env OMP_NUM_THREADS=1 python bench/train_step.py RUN_DIR --step 7 [--repeat 2]
        [--no-gradient-checkpointing] [--micro-batch-tokens N]
"""

from __future__ import annotations

import argparse
import resource
import time
from pathlib import Path

from mcprl.model import weights
from mcprl.run.config import load_config
from mcprl.train.grpo import GRPOTrainer
from mcprl.types import TrajectoryGroup, load_jsonl


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("run_dir", type=Path)
    ap.add_argument("--step", type=int, required=True, help="the saved step replayed (RUN_DIR/trajectories)")
    ap.add_argument("--repeat", type=int, default=2, help="steps timed, each from the same adapter")
    ap.add_argument("--no-gradient-checkpointing", action="store_true")
    ap.add_argument("--micro-batch-tokens", type=int, default=None)
    args = ap.parse_args()
    cfg = load_config(args.run_dir / "config.json", {})
    groups = list(load_jsonl(args.run_dir / "trajectories" / f"step_{args.step:04d}.jsonl", TrajectoryGroup))
    train = cfg.train.model_copy(
        update={
            "gradient_checkpointing": not args.no_gradient_checkpointing,
            "micro_batch_tokens": args.micro_batch_tokens,
        }
    )
    tokenizer = weights.load_tokenizer(cfg.model)
    seconds = []
    for _ in range(args.repeat):
        trainer = GRPOTrainer(weights.load_model(cfg.model, dtype=cfg.runtime.dtype), tokenizer, cfg.lora)
        t0 = time.perf_counter()
        metrics = trainer.step(groups, train)  # (our engine records unmasked logprobs: nothing to rescore)
        seconds.append(time.perf_counter() - t0)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(
        f"{args.run_dir.name} step {args.step}: {int(metrics['sequences'])} sequences, "
        f"{int(metrics['loss_tokens'])} loss tokens; seconds {', '.join(f'{s:.1f}' for s in seconds)}; "
        f"peak RSS {peak:.0f} MB"
    )


if __name__ == "__main__":
    main()
