"""mcprl's GPU step against TRL's `GRPOTrainer` with vLLM in colocate mode, on identical work on one GPU.

A step, for both systems: sample PROMPTS x --group-size completions of at most --max-new-tokens
tokens with vLLM from the current policy (the model + LoRA r=8 on every linear projection), score
them with the same deterministic reward (bench/grpo_vs_trl.py's), and make one AdamW update on
the clipped GRPO loss (beta=0, eps=0.2, constant lr). Each system as its users get it:

  mcprl: `LocalBackend(device="cuda")`: vLLM in a subprocess serves the LoRA step over HTTP
         (concurrent chat completions), Unsloth + our GRPOTrainer train it while vLLM sleeps,
         then the new adapter is swapped in (`model.train`).
  TRL:   `trl.GRPOTrainer(use_vllm=True, vllm_mode="colocate", vllm_enable_sleep_mode=True)` on the
         plain transformers model: vLLM in-process, merged LoRA weights pushed to it every step.

Both vLLMs get the same --gpu-memory-utilization and --max-model-len. Each system runs in its own
child process, one after the other; the first --warmup steps are not timed. Peak GPU memory is the
device's (nvidia-smi, every 0.2 s) while a system runs, so mcprl's two processes count together.
The mcprl child then measures vLLM's decoding throughput with the LoRA step against the base
model at --concurrency concurrent requests (--throughput-tokens new tokens each, ignore_eos).

    python bench/gpu_grpo_vs_trl.py --model MODEL_DIR [--steps 3 --warmup 1 --out DIR]
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from grpo_vs_trl import LORA_ALPHA, LORA_RANK, PROMPTS, SEED, reward  # noqa: E402  (the CPU bench's work)

LEARNING_RATE = 1e-5
TARGET_TIME_RATIO = 0.5
MARK = "@@bench "
SYSTEMS = ("mcprl", "trl")


def report(**fields: Any) -> None:
    print(MARK + json.dumps(fields), flush=True)


# ---- the children ------------------------------------------------------------------------------
async def run_mcprl(args: argparse.Namespace) -> None:
    import anyio

    from mcprl import LocalBackend, TrainableModel, TrainConfig
    from mcprl.types import Generation, Trajectory, TrajectoryGroup

    os.environ["MCPRL_HOME"] = tempfile.mkdtemp(prefix="mcprl-gpu-bench-")  # a fresh model: no checkpoints to resume
    model = TrainableModel(name="bench", project="gpu-bench", base_model=args.model)
    backend = LocalBackend(
        device="cuda",
        vllm={"gpu_memory_utilization": args.gpu_memory_utilization, "max_model_len": args.max_model_len},
        unsloth={"max_seq_length": args.max_model_len},
    )
    config = TrainConfig(learning_rate=LEARNING_RATE)
    async with backend:
        t = time.perf_counter()
        await model.register(backend)
        report(startup_seconds=time.perf_counter() - t)
        async with model.openai_client() as client:

            async def sample(prompt: str, out: list) -> None:
                r = await client.chat.completions.create(
                    model=model.get_inference_name(),
                    messages=[{"role": "user", "content": prompt}],
                    n=args.group_size,
                    max_tokens=args.max_new_tokens,
                    temperature=1.0,
                    logprobs=True,
                    extra_body={"return_token_ids": True},
                )
                out.append(
                    TrajectoryGroup(
                        trajectories=[
                            Trajectory(
                                generations=[
                                    Generation(
                                        prompt_token_ids=r.model_extra["prompt_token_ids"],
                                        completion_token_ids=c.model_extra["token_ids"],
                                        logprobs=[x.logprob for x in c.logprobs.content],
                                        model=r.model,
                                    )
                                ],
                                reward=reward(c.message.content or ""),
                            )
                            for c in r.choices
                        ]
                    )
                )

            for step in range(args.warmup + args.steps):
                t0 = time.perf_counter()
                groups: list[TrajectoryGroup] = []
                async with anyio.create_task_group() as tg:
                    for p in PROMPTS:
                        tg.start_soon(sample, p, groups)
                generation = time.perf_counter() - t0
                metrics = await model.train(groups, config)
                report(
                    step=step,
                    warmup=step < args.warmup,
                    step_seconds=time.perf_counter() - t0,
                    generation_seconds=generation,
                    train_seconds=metrics.get("train_seconds", 0.0),
                    swap_seconds=metrics["swap_seconds"],
                    sleep_wake_seconds=metrics.get("sleep_seconds", 0.0) + metrics.get("wake_seconds", 0.0),
                    completion_tokens=sum(
                        len(g.completion_token_ids) for gr in groups for t in gr.trajectories for g in t.generations
                    ),
                )
            if args.concurrency:
                for name, served in (("base", args.model), ("lora", model.get_inference_name())):
                    for _ in range(2):  # the first round warms up
                        tokens, seconds = await throughput(client, served, args)
                    report(throughput=name, tokens=tokens, seconds=seconds, tokens_per_second=tokens / seconds)


async def throughput(client, served: str, args: argparse.Namespace) -> tuple[int, float]:
    """New tokens and wall seconds of --concurrency concurrent requests, each decoding exactly --throughput-tokens."""
    import anyio

    counts: list[int] = []

    async def one(i: int) -> None:
        r = await client.completions.create(
            model=served,
            prompt=PROMPTS[i % len(PROMPTS)],
            max_tokens=args.throughput_tokens,
            temperature=1.0,
            extra_body={"ignore_eos": True},
        )
        counts.append(r.usage.completion_tokens)

    t = time.perf_counter()
    async with anyio.create_task_group() as tg:
        for i in range(args.concurrency):
            tg.start_soon(one, i)
    return sum(counts), time.perf_counter() - t


def run_trl(args: argparse.Namespace) -> None:
    import torch
    from datasets import Dataset
    from peft import LoraConfig
    from transformers import AutoModelForCausalLM, AutoTokenizer, TrainerCallback
    from trl import GRPOConfig, GRPOTrainer

    class Timing(TrainerCallback):
        """Wall time of each optimizer step: generation (vLLM), scoring, forward/backward, update, weight sync."""

        def on_step_begin(self, *a: Any, **kw: Any) -> None:
            torch.cuda.synchronize()
            self.t0 = time.perf_counter()

        def on_step_end(self, state_args: Any, state: Any, *a: Any, **kw: Any) -> None:
            torch.cuda.synchronize()
            step = state.global_step - 1
            report(step=step, warmup=step < args.warmup, step_seconds=time.perf_counter() - self.t0)

    def trl_reward(completions: list[Any], **_: Any) -> list[float]:
        return [reward(c[-1]["content"] if isinstance(c, list) else c) for c in completions]

    torch.manual_seed(SEED)
    t = time.perf_counter()
    tok = AutoTokenizer.from_pretrained(args.model)
    model = AutoModelForCausalLM.from_pretrained(args.model, dtype=torch.bfloat16)
    dataset = Dataset.from_list([{"prompt": [{"role": "user", "content": p}]} for p in PROMPTS])
    per_step = len(PROMPTS) * args.group_size
    with tempfile.TemporaryDirectory() as out_dir:
        config = GRPOConfig(
            output_dir=out_dir,
            bf16=True,
            report_to=[],
            logging_steps=1,
            save_strategy="no",
            disable_tqdm=True,
            seed=SEED,
            max_steps=args.warmup + args.steps,
            learning_rate=LEARNING_RATE,
            lr_scheduler_type="constant",
            weight_decay=0.0,
            max_grad_norm=1.0,
            # One optimizer step = one generation batch of all prompts x group size, in 4 micro-batches.
            per_device_train_batch_size=per_step // 4,
            gradient_accumulation_steps=4,
            steps_per_generation=4,
            num_generations=args.group_size,
            max_completion_length=args.max_new_tokens,
            temperature=1.0,
            top_p=1.0,
            top_k=0,
            beta=0.0,
            epsilon=0.2,
            loss_type="dapo",
            scale_rewards="group",
            use_vllm=True,
            vllm_mode="colocate",
            vllm_gpu_memory_utilization=args.gpu_memory_utilization,
            vllm_enable_sleep_mode=True,
            vllm_max_model_length=args.max_model_len,
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
            callbacks=[Timing()],
        )
        report(startup_seconds=time.perf_counter() - t)
        trainer.train()


# ---- the parent --------------------------------------------------------------------------------
class GpuMemoryPeak:
    """The device's peak memory in use (nvidia-smi, MiB) between start() and stop()."""

    def __init__(self, gpu: int = 0) -> None:
        self.gpu, self.peak_mib, self._stop = gpu, 0, threading.Event()
        self._thread = threading.Thread(target=self._poll, daemon=True)

    def _poll(self) -> None:
        while not self._stop.wait(0.2):
            r = subprocess.run(
                ["nvidia-smi", f"--id={self.gpu}", "--query-gpu=memory.used", "--format=csv,noheader,nounits"],
                capture_output=True,
                text=True,
            )
            if r.returncode == 0 and r.stdout.strip().isdigit():
                self.peak_mib = max(self.peak_mib, int(r.stdout.strip()))

    def __enter__(self) -> GpuMemoryPeak:
        self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._stop.set()
        self._thread.join()


def run_child(system: str, args: argparse.Namespace, log_path: Path) -> tuple[list[dict[str, Any]], float, int]:
    """Run one system's child; its reports, the device's peak GiB while it ran, its exit code."""
    cmd = [sys.executable, __file__, "--child", system, *args.child_argv]
    rows: list[dict[str, Any]] = []
    with log_path.open("w") as log, GpuMemoryPeak() as mem:
        proc = subprocess.Popen(
            cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, stdin=subprocess.DEVNULL
        )
        for line in proc.stdout:
            log.write(line)
            if line.startswith(MARK):
                rows.append(json.loads(line[len(MARK) :]))
                print(f"  {system}: {line[len(MARK) :].strip()}", flush=True)
        rc = proc.wait()
    return rows, mem.peak_mib / 1024, rc


def summarize(results: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """Per system: median timed step seconds and peak GPU GiB; mcprl/TRL ratios; LoRA/base throughput."""
    out: dict[str, Any] = {"systems": {}}
    for system, r in results.items():
        timed = [x for x in r["rows"] if "step_seconds" in x and not x["warmup"]]
        s: dict[str, Any] = {
            "timed_steps": len(timed),
            "peak_gpu_gib": round(r["peak_gpu_gib"], 2),
            "exit_code": r["exit_code"],
        }
        if timed:
            s["step_seconds"] = round(statistics.median(x["step_seconds"] for x in timed), 3)
            for k in ("generation_seconds", "train_seconds", "swap_seconds", "sleep_wake_seconds", "completion_tokens"):
                if all(k in x for x in timed):
                    s[k] = round(statistics.median(x[k] for x in timed), 3)
        start = [x["startup_seconds"] for x in r["rows"] if "startup_seconds" in x]
        if start:
            s["startup_seconds"] = round(start[0], 1)
        tput = {x["throughput"]: round(x["tokens_per_second"]) for x in r["rows"] if "throughput" in x}
        if tput:
            s["throughput_tokens_per_second"] = tput
        out["systems"][system] = s
    ours, trl = out["systems"].get("mcprl", {}), out["systems"].get("trl", {})
    if "step_seconds" in ours and "step_seconds" in trl:
        out["time_ratio"] = round(ours["step_seconds"] / trl["step_seconds"], 3)
        out["time_target_met"] = out["time_ratio"] <= TARGET_TIME_RATIO
    if ours.get("peak_gpu_gib") and trl.get("peak_gpu_gib"):
        out["memory_ratio"] = round(ours["peak_gpu_gib"] / trl["peak_gpu_gib"], 3)
    tput = ours.get("throughput_tokens_per_second", {})
    if "base" in tput and "lora" in tput:
        out["lora_vs_base_throughput"] = round(tput["lora"] / tput["base"], 3)
    return out


def table(summary: dict[str, Any]) -> str:
    """The result as a markdown table (docs/benchmarks.md)."""
    rows = [
        "| system | s/step (median) | generation s | train s | swap s | peak GPU GiB | startup s |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for name, s in summary["systems"].items():
        cell = lambda k: f"{s[k]:g}" if k in s else "-"  # noqa: E731, B023 (called in this iteration only)
        rows.append(
            f"| {name} | {cell('step_seconds')} | {cell('generation_seconds')} | {cell('train_seconds')} | "
            f"{cell('swap_seconds')} | "
            f"{cell('peak_gpu_gib')} | {cell('startup_seconds')} |"
        )
    lines = ["\n".join(rows)]
    if "time_ratio" in summary:
        verdict = "meets" if summary["time_target_met"] else "misses"
        lines.append(f"mcprl / TRL step time: {summary['time_ratio']:.2f}x ({verdict} the {TARGET_TIME_RATIO}x target)")
    if "memory_ratio" in summary:
        lines.append(f"mcprl / TRL peak GPU memory: {summary['memory_ratio']:.2f}x")
    if "lora_vs_base_throughput" in summary:
        t = summary["systems"]["mcprl"]["throughput_tokens_per_second"]
        lines.append(
            f"vLLM decoding throughput, LoRA step vs base: {t['lora']} vs {t['base']} tok/s "
            f"({summary['lora_vs_base_throughput']:.2f}x)"
        )
    return "\n".join(lines)


def missing_requirements(systems: list[str]) -> str | None:
    """Why this cannot run here (one line), or None."""
    try:
        import torch
    except ImportError:
        return "torch is not installed"
    if not torch.cuda.is_available():
        return "needs a CUDA GPU (torch.cuda.is_available() is False); run it on the GPU machine"
    need = (
        {"vllm"} | ({"unsloth"} if "mcprl" in systems else set()) | ({"trl", "datasets"} if "trl" in systems else set())
    )
    missing = sorted(p for p in need if importlib.util.find_spec(p) is None)
    if missing:
        return f"missing packages: {', '.join(missing)} (pip install 'mcprl[gpu]')"
    return None


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--model", required=True, help="local Hugging Face model directory (both systems)")
    ap.add_argument("--systems", default="mcprl,trl", help="which to run, in order (comma-separated: mcprl, trl)")
    ap.add_argument("--steps", type=int, default=3, help="timed steps per system")
    ap.add_argument("--warmup", type=int, default=1, help="untimed steps first")
    ap.add_argument("--group-size", type=int, default=8, help="completions per prompt (8 prompts)")
    ap.add_argument("--max-new-tokens", type=int, default=128)
    ap.add_argument("--gpu-memory-utilization", type=float, default=0.3, help="both vLLMs' share of the GPU")
    ap.add_argument("--max-model-len", type=int, default=1024)
    ap.add_argument(
        "--concurrency", type=int, default=64, help="LoRA vs base throughput: concurrent requests (0: skip)"
    )
    ap.add_argument("--throughput-tokens", type=int, default=256, help="new tokens per throughput request")
    ap.add_argument(
        "--out",
        type=Path,
        default=Path(os.environ.get("OUT") or Path(__file__).resolve().parent / "results"),
        help="directory for gpu_grpo_vs_trl.json and the children's logs",
    )
    ap.add_argument("--child", choices=SYSTEMS, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    args.systems_list = [s.strip() for s in args.systems.split(",") if s.strip()]
    if bad := [s for s in args.systems_list if s not in SYSTEMS]:
        ap.error(f"--systems: unknown {bad}; use mcprl and/or trl")
    if args.group_size < 2 or (len(PROMPTS) * args.group_size) % 4:
        ap.error("--group-size must be at least 2 and make 8 x group size a multiple of 4 (TRL's 4 micro-batches)")
    if not 0 < args.gpu_memory_utilization < 1:
        ap.error("--gpu-memory-utilization must be between 0 and 1")
    args.child_argv = list(argv if argv is not None else sys.argv[1:])
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.child == "mcprl":
        import anyio

        anyio.run(run_mcprl, args)
        return 0
    if args.child == "trl":
        run_trl(args)
        return 0
    if reason := missing_requirements(args.systems_list):
        print(f"error: {reason}", file=sys.stderr)
        return 2
    if not (Path(args.model) / "config.json").exists():
        print(f"error: {args.model} has no config.json; pass a local Hugging Face model directory", file=sys.stderr)
        return 2
    args.out.mkdir(parents=True, exist_ok=True)
    settings = {
        k: getattr(args, k)
        for k in (
            "model",
            "steps",
            "warmup",
            "group_size",
            "max_new_tokens",
            "gpu_memory_utilization",
            "max_model_len",
            "concurrency",
            "throughput_tokens",
        )
    }
    settings.update(prompts=len(PROMPTS), lora_rank=LORA_RANK, learning_rate=LEARNING_RATE)
    path = args.out / "gpu_grpo_vs_trl.json"
    # A system measured by an earlier run with the same settings (--systems trl after --systems mcprl) joins the
    # summary.
    earlier = json.loads(path.read_text()) if path.exists() else {}
    results = earlier.get("results", {}) if earlier.get("summary", {}).get("settings") == settings else {}
    for system in args.systems_list:
        print(f"== {system} (log: {args.out / f'gpu_bench_{system}.log'})", flush=True)
        t = time.perf_counter()
        rows, peak, rc = run_child(system, args, args.out / f"gpu_bench_{system}.log")
        results[system] = {"rows": rows, "peak_gpu_gib": peak, "exit_code": rc, "wall_seconds": time.perf_counter() - t}
    summary = summarize(results)
    summary["settings"] = settings
    path.write_text(json.dumps({"summary": summary, "results": results}, indent=2))
    print(table(summary))
    return 0 if all(results[s]["exit_code"] == 0 for s in args.systems_list) else 1


if __name__ == "__main__":
    sys.exit(main())
