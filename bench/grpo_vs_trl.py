"""One GRPO step of mcprl against TRL's `GRPOTrainer` on identical work, on CPU.

A step, for both systems: sample 8 prompts x 4 completions of at most 32 new tokens from the
current policy (SmolLM2-135M + LoRA r=8 on every linear projection, base weights in the same
dtype for both: `--dtype auto` is what mcprl picks on this machine), score them with the same
deterministic reward, and make one AdamW update on the clipped GRPO loss (beta=0, eps=0.2,
token-level normalisation, group-std advantage scaling, grad-norm clip 1.0, constant lr).
Each system trains with its own default micro-batching otherwise (see below), as its users get it.

  mcprl: `mcprl.serving.sampler.sample` (the endpoint's sampler) + `mcprl.train.grpo.GRPOTrainer.step`
  TRL:   `trl.GRPOTrainer` (its own `model.generate`) with one generation batch per optimizer step

Each system runs in its own child process, so peak RSS is its own. Both children stay alive and
take turns step by step (mcprl, TRL, TRL, mcprl, ...): only one computes at any time and changes
in machine load hit both alike; neither exits before the other's last step. The first step of
each is warm-up. Usage:

    python bench/grpo_vs_trl.py --steps 6 [--dtype auto|float32|bfloat16] [--micro-batch-tokens N]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from mcprl.model import memory

MODEL = "smollm2-135m"
PROMPTS = [
    "Write a short story about a dragon who is afraid of fire.",
    "Explain how a bicycle works to a ten-year-old.",
    "Describe your ideal weekend in detail.",
    "List some tips for learning a new language and explain each one.",
    "Write a letter to a friend about a trip to the mountains.",
    "Explain why the sky is blue.",
    "Describe how to cook a simple pasta dinner step by step.",
    "Write a poem about the ocean at night.",
]
NUM_GENERATIONS = 4
MAX_NEW_TOKENS = 32
LORA_RANK, LORA_ALPHA = 8, 16
LEARNING_RATE = 1e-5
GRADIENT_CHECKPOINTING = True  # both systems; TRL's default and ours
# Micro-batches: each system's default. TRL trains the 32 completions as 4 micro-batches of its
# default per_device_train_batch_size=8; mcprl packs them into micro-batches of its default
# micro_batch_tokens (2048: all 8 groups in one), each group's prompt once (a row is ~150 tokens:
# prompt + 4 completions).
SEED = 0
TARGET_TIME_RATIO = 0.5
TARGET_RSS_RATIO = 0.5
RESULTS = Path(__file__).resolve().parent / "results" / "grpo_vs_trl.json"


def reward(text: str) -> float:
    """Deterministic score of a completion: distinct words, ties broken by length. It varies within
    (almost) every group, so mcprl, which skips zero-variance groups, does not train on less than TRL."""
    return len(set(text.lower().split())) / MAX_NEW_TOKENS + len(text) / 10_000


# ---- the children ------------------------------------------------------------------------------
# A child waits for "go" on stdin before each step and reports on stdout lines starting with MARK
# (TRL prints its own logs there too).
MARK = "@@bench "


def wait_turn() -> None:
    if sys.stdin.readline().strip() != "go":
        raise SystemExit("the benchmark parent went away")


def report(**fields: Any) -> None:
    print(MARK + json.dumps(fields), flush=True)


def run_mcprl(args: argparse.Namespace) -> None:
    import torch

    from mcprl.model import weights
    from mcprl.serving.sampler import SampleRequest, sample
    from mcprl.train.config import LoraSettings, TrainConfig
    from mcprl.train.grpo import GRPOTrainer
    from mcprl.types import Generation, Trajectory, TrajectoryGroup

    torch.manual_seed(SEED)
    tok = weights.load_tokenizer(MODEL)
    trainer = GRPOTrainer(
        weights.load_model(MODEL, dtype=args.dtype),
        tok,
        LoraSettings(rank=LORA_RANK, alpha=LORA_ALPHA, target_modules="all-linear"),
    )
    config = TrainConfig(
        learning_rate=LEARNING_RATE,
        gradient_checkpointing=GRADIENT_CHECKPOINTING,
        micro_batch_tokens=args.micro_batch_tokens,
    )
    gen_eos = trainer.model.generation_config.eos_token_id
    eos_ids = {tok.eos_token_id, *(gen_eos if isinstance(gen_eos, list) else [gen_eos])} - {None}
    prompts = [
        tok.apply_chat_template(
            [{"role": "user", "content": p}], add_generation_prompt=True, tokenize=True, return_dict=False
        )
        for p in PROMPTS
    ]
    report(ready=True)
    for step in range(args.steps):
        wait_turn()
        t0 = time.perf_counter()
        rows = [
            SampleRequest(p, MAX_NEW_TOKENS, seed=SEED + 1000 * step + 10 * i + k)
            for i, p in enumerate(prompts)
            for k in range(NUM_GENERATIONS)
        ]
        out = sample(trainer.model, rows, pad_id=trainer.pad_id, eos_ids=eos_ids)
        generation = time.perf_counter() - t0
        groups = []
        for i, p in enumerate(prompts):
            groups.append(
                TrajectoryGroup(
                    trajectories=[
                        Trajectory(
                            generations=[
                                Generation(prompt_token_ids=p, completion_token_ids=s.token_ids, logprobs=s.logprobs)
                            ],
                            reward=reward(tok.decode(s.token_ids, skip_special_tokens=True)),
                        )
                        for s in out[i * NUM_GENERATIONS : (i + 1) * NUM_GENERATIONS]
                    ]
                )
            )
        metrics = trainer.step(groups, config)
        report(
            step_seconds=time.perf_counter() - t0,
            generation_seconds=generation,
            completion_tokens=sum(len(s.token_ids) for s in out),
            trained_sequences=metrics["sequences"],
        )
    report(peak_rss_mb=memory.peak_rss_mb())
    wait_turn()  # exit only when the other system is done: no teardown during its timed steps


def run_trl(args: argparse.Namespace) -> None:
    import torch
    from datasets import Dataset
    from peft import LoraConfig
    from transformers import AutoModelForCausalLM, TrainerCallback
    from trl import GRPOConfig, GRPOTrainer

    from mcprl.model import weights

    class TurnTaking(TrainerCallback):
        """Wait for the turn before each optimizer step (generation, scoring, 4 forward/backward
        passes, update) and report its wall time; `generate` below adds the generation time."""

        def __init__(self) -> None:
            self.t0, self.generation, self.tokens = 0.0, 0.0, 0

        def on_train_begin(self, *args: Any, **kwargs: Any) -> None:
            report(ready=True)

        def on_step_begin(self, *args: Any, **kwargs: Any) -> None:
            wait_turn()
            self.t0, self.generation, self.tokens = time.perf_counter(), 0.0, 0

        def on_step_end(self, *args: Any, **kwargs: Any) -> None:
            report(
                step_seconds=time.perf_counter() - self.t0,
                generation_seconds=self.generation,
                completion_tokens=self.tokens,
                trained_sequences=len(PROMPTS) * NUM_GENERATIONS,
            )

    def trl_reward(completions: list[Any], **_: Any) -> list[float]:
        return [reward(c[-1]["content"] if isinstance(c, list) else c) for c in completions]

    torch.manual_seed(SEED)
    tok = weights.load_tokenizer(MODEL)
    # As a TRL user loads it: plain transformers (sdpa), not mcprl's loader and its attention choice.
    model = AutoModelForCausalLM.from_pretrained(
        weights.model_path(MODEL, args.dtype), dtype=getattr(torch, args.dtype), attn_implementation="sdpa"
    ).eval()
    dataset = Dataset.from_list([{"prompt": [{"role": "user", "content": p}]} for p in PROMPTS])
    turns = TurnTaking()
    with tempfile.TemporaryDirectory() as out_dir:
        config = GRPOConfig(
            # bf16: TRL's own bfloat16 mode (autocast) when the weights are bfloat16, its best setting for them.
            output_dir=out_dir,
            use_cpu=True,
            bf16=args.dtype == "bfloat16",
            fp16=False,
            report_to=[],
            logging_steps=1,
            save_strategy="no",
            disable_tqdm=True,
            seed=SEED,
            max_steps=args.steps,
            learning_rate=LEARNING_RATE,
            lr_scheduler_type="constant",
            weight_decay=0.0,
            max_grad_norm=1.0,
            gradient_checkpointing=GRADIENT_CHECKPOINTING,
            # One optimizer step = one generation batch of 8 prompts x 4 completions, trained as 4 micro-batches of 8.
            per_device_train_batch_size=8,
            gradient_accumulation_steps=4,
            steps_per_generation=4,
            num_generations=NUM_GENERATIONS,
            max_completion_length=MAX_NEW_TOKENS,
            temperature=1.0,
            top_p=1.0,
            top_k=0,
            beta=0.0,
            epsilon=0.2,
            loss_type="dapo",
            scale_rewards="group",
        )
        lora = LoraConfig(
            r=LORA_RANK, lora_alpha=LORA_ALPHA, lora_dropout=0.0, target_modules="all-linear", task_type="CAUSAL_LM"
        )
        trainer = GRPOTrainer(
            model=model,
            reward_funcs=trl_reward,
            args=config,
            train_dataset=dataset,
            processing_class=tok,
            peft_config=lora,
            callbacks=[turns],
        )
        generate = trainer._generate_single_turn

        def timed_generate(*a: Any, **kw: Any) -> Any:  # called once per optimizer step (steps_per_generation = 4)
            t0 = time.perf_counter()
            completion_ids, logprobs = generate(*a, **kw)
            turns.generation += time.perf_counter() - t0
            turns.tokens += sum(len(c) for c in completion_ids)
            return completion_ids, logprobs

        trainer._generate_single_turn = timed_generate
        trainer.train()
    report(peak_rss_mb=memory.peak_rss_mb())
    wait_turn()  # exit only when the other system is done: no teardown during its timed steps


CHILDREN = {"mcprl": run_mcprl, "trl": run_trl}


# ---- the parent --------------------------------------------------------------------------------
class Child:
    """One system in its own process, driven one step at a time."""

    def __init__(self, system: str, args: argparse.Namespace) -> None:
        self.system = system
        self.stderr = tempfile.TemporaryFile(mode="w+")
        cmd = [
            sys.executable,
            __file__,
            "--child",
            system,
            "--steps",
            str(args.steps),
            "--threads",
            str(args.threads),
            "--dtype",
            args.dtype,
            "--micro-batch-tokens",
            str(args.micro_batch_tokens),
        ]
        self.proc = subprocess.Popen(
            cmd,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self.stderr,
            text=True,
            env={**os.environ, "TOKENIZERS_PARALLELISM": "false"},
        )
        self.lines: Iterator[str] = iter(self.proc.stdout)  # type: ignore[arg-type]

    def receive(self) -> dict[str, Any]:
        for line in self.lines:
            if line.startswith(MARK):
                return json.loads(line[len(MARK) :])
        self.proc.wait()
        self.stderr.seek(0)
        raise SystemExit(f"{self.system} child exited ({self.proc.returncode}):\n{self.stderr.read()[-4000:]}")

    def go(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write("go\n")
        self.proc.stdin.flush()

    def step(self) -> dict[str, Any]:
        self.go()
        return self.receive()


def summarize(steps: list[dict[str, Any]], peak_rss: float) -> dict[str, Any]:
    steady = steps[1:]  # the first step is warm-up
    return {
        "median_step_seconds": statistics.median(s["step_seconds"] for s in steady),
        "median_generation_seconds": statistics.median(s["generation_seconds"] for s in steady),
        "peak_rss_mb": peak_rss,
        "steps": steps,
    }


def machine(threads: int) -> dict[str, Any]:
    import torch
    import transformers
    import trl

    return {
        "cpus": os.cpu_count(),
        "torch_threads": threads or torch.get_num_threads(),
        "platform": platform.platform(),
        "python": platform.python_version(),
        "torch": torch.__version__,
        "transformers": transformers.__version__,
        "trl": trl.__version__,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--steps", type=int, default=6, help="optimizer steps per system (the first is warm-up)")
    ap.add_argument("--threads", type=int, default=0, help="torch threads in both children (0: torch's default)")
    ap.add_argument("--dtype", default="auto", help="base weights of both systems (auto: mcprl's choice for this CPU)")
    ap.add_argument(
        "--micro-batch-tokens",
        type=int,
        default=None,
        help="mcprl's TrainConfig.micro_batch_tokens (default: its default; TRL keeps its 8 sequences)",
    )
    ap.add_argument("--out", type=Path, default=RESULTS)
    ap.add_argument("--child", choices=sorted(CHILDREN), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        if args.threads:
            import torch

            torch.set_num_threads(args.threads)
        CHILDREN[args.child](args)
        return

    from mcprl.model.weights import resolve_dtype
    from mcprl.train.grpo import GRPOTrainer

    args.dtype = resolve_dtype(args.dtype)
    args.micro_batch_tokens = args.micro_batch_tokens or GRPOTrainer.default_micro_batch_tokens

    children = {name: Child(name, args) for name in CHILDREN}
    for child in children.values():
        child.receive()  # loaded and ready
    steps: dict[str, list[dict[str, Any]]] = {name: [] for name in children}
    peaks: dict[str, float] = {}
    for i in range(args.steps):
        for name in ("mcprl", "trl") if i % 2 == 0 else ("trl", "mcprl"):
            s = children[name].step()
            steps[name].append(s)
            print(
                f"step {i + 1} {name:5s}: {s['step_seconds']:6.1f} s (generation {s['generation_seconds']:5.1f} s, "
                f"{s['completion_tokens']} completion tokens, {s['trained_sequences']:.0f} sequences trained)",
                flush=True,
            )
            if i == args.steps - 1:  # its wrap-up (TRL's end of train()) finishes before the other's last step
                peaks[name] = children[name].receive()["peak_rss_mb"]
    for child in children.values():
        child.go()  # and exit
        child.proc.wait()
    ours, peer = summarize(steps["mcprl"], peaks["mcprl"]), summarize(steps["trl"], peaks["trl"])
    time_ratio = ours["median_step_seconds"] / peer["median_step_seconds"]
    rss_ratio = ours["peak_rss_mb"] / peer["peak_rss_mb"]
    print(f"\n{'':8s}{'s/step (median)':>16s}{'of which generation':>21s}{'peak RSS MB':>13s}")
    for name, r in (("mcprl", ours), ("TRL", peer)):
        print(
            f"{name:8s}{r['median_step_seconds']:>16.2f}{r['median_generation_seconds']:>21.2f}{r['peak_rss_mb']:>13.0f}"
        )
    print(
        f"{'ratio':8s}{time_ratio:>16.2f}{'':>21s}{rss_ratio:>13.2f}   (targets: <= {TARGET_TIME_RATIO} and <= "
        f"{TARGET_RSS_RATIO})"
    )

    result = {
        "benchmark": "grpo_vs_trl",
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "command": "python bench/grpo_vs_trl.py " + " ".join(sys.argv[1:]),
        "machine": machine(args.threads),
        "work": {
            "model": MODEL,
            "prompts": len(PROMPTS),
            "num_generations": NUM_GENERATIONS,
            "max_new_tokens": MAX_NEW_TOKENS,
            "lora_rank": LORA_RANK,
            "lora_alpha": LORA_ALPHA,
            "target_modules": "all-linear",
            "learning_rate": LEARNING_RATE,
            "gradient_checkpointing": GRADIENT_CHECKPOINTING,
            "mcprl_micro_batch_tokens": args.micro_batch_tokens,
            "trl_micro_batch_sequences": 8,
            "dtype": args.dtype,
            "steps": args.steps,
        },
        "mcprl": ours,
        "trl": peer,
        "time_ratio": time_ratio,
        "rss_ratio": rss_ratio,
        "targets": {
            "time_ratio_max": TARGET_TIME_RATIO,
            "rss_ratio_max": TARGET_RSS_RATIO,
            "time_met": time_ratio <= TARGET_TIME_RATIO,
            "rss_met": rss_ratio <= TARGET_RSS_RATIO,
        },
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
