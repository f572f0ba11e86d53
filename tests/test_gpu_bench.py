"""bench/gpu_grpo_vs_trl.py's parts that need no GPU: arguments, the one-line refusal without CUDA,
and the summary (medians of the timed steps, the mcprl/TRL ratios, the LoRA/base throughput)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[1] / "bench"
sys.path.insert(0, str(BENCH))
import gpu_grpo_vs_trl as bench  # noqa: E402


def _rows(step_seconds: list[float], warmup: int = 1, **extra) -> list[dict]:
    return [{"startup_seconds": 60.0}] + [
        {"step": i, "warmup": i < warmup, "step_seconds": s, **extra} for i, s in enumerate(step_seconds)
    ]


def test_summary_uses_timed_steps_and_gives_ratios():
    results = {
        "mcprl": {
            "rows": _rows([9.0, 1.0, 3.0, 2.0], swap_seconds=0.1)
            + [
                {"throughput": "base", "tokens": 16384, "seconds": 1.0, "tokens_per_second": 16384.0},
                {"throughput": "lora", "tokens": 16384, "seconds": 1.25, "tokens_per_second": 13107.2},
            ],
            "peak_gpu_gib": 30.0,
            "exit_code": 0,
        },
        "trl": {"rows": _rows([20.0, 5.0, 4.0, 6.0]), "peak_gpu_gib": 40.0, "exit_code": 0},
    }
    s = bench.summarize(results)
    assert (
        s["systems"]["mcprl"]["step_seconds"] == 2.0 and s["systems"]["trl"]["step_seconds"] == 5.0
    )  # warm-up left out
    assert s["systems"]["mcprl"]["timed_steps"] == 3 and s["systems"]["mcprl"]["swap_seconds"] == 0.1
    assert "swap_seconds" not in s["systems"]["trl"] and s["systems"]["trl"]["startup_seconds"] == 60.0
    assert s["time_ratio"] == 0.4 and s["time_target_met"] and s["memory_ratio"] == 0.75
    assert s["lora_vs_base_throughput"] == 0.8
    text = bench.table(s)
    assert "| mcprl | 2 | - | - | 0.1 | 30 | 60 |" in text
    assert "mcprl / TRL step time: 0.40x (meets the 0.5x target)" in text
    assert "LoRA step vs base: 13107 vs 16384 tok/s (0.80x)" in text


def test_a_failed_system_gives_no_ratio():
    s = bench.summarize(
        {
            "mcprl": {"rows": _rows([3.0, 3.0]), "peak_gpu_gib": 10.0, "exit_code": 0},
            "trl": {"rows": [], "peak_gpu_gib": 0.0, "exit_code": 1},
        }
    )
    assert "time_ratio" not in s and "memory_ratio" not in s and s["systems"]["trl"]["exit_code"] == 1
    assert "misses" not in bench.table(s) and "| trl | - |" in bench.table(s)


def test_arguments_are_checked():
    for argv, _message in [
        (["--systems", "mcprl,vllm"], "unknown ['vllm']"),
        (["--group-size", "1"], "at least 2"),
        (["--gpu-memory-utilization", "1.5"], "between 0 and 1"),
    ]:
        with pytest.raises(SystemExit):
            bench.parse_args(["--model", "/m", *argv])
    assert bench.parse_args(["--model", "/m", "--systems", "trl"]).systems_list == ["trl"]


@pytest.mark.skipif(__import__("torch").cuda.is_available(), reason="checks the refusal on a machine without CUDA")
def test_without_cuda_it_refuses_in_one_line(tmp_path):
    r = subprocess.run(
        [sys.executable, str(BENCH / "gpu_grpo_vs_trl.py"), "--model", str(tmp_path), "--out", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert (
        r.returncode == 2
        and r.stderr.strip()
        == "error: needs a CUDA GPU (torch.cuda.is_available() is False); run it on the GPU machine"
    )
    assert not list(tmp_path.iterdir())


def test_a_later_run_of_the_other_system_joins_the_summary(tmp_path, monkeypatch):
    """--systems mcprl, then --systems trl (two GPU calls): one summary, when the settings match."""
    ran = []

    def fake_child(system, args, log_path):
        ran.append(system)
        return _rows([4.0, 2.0] if system == "mcprl" else [9.0, 5.0]), 10.0, 0

    monkeypatch.setattr(bench, "missing_requirements", lambda systems: None)
    monkeypatch.setattr(bench, "run_child", fake_child)
    (tmp_path / "config.json").write_text("{}")
    base = ["--model", str(tmp_path), "--out", str(tmp_path), "--steps", "1"]
    assert bench.main([*base, "--systems", "mcprl"]) == 0
    assert bench.main([*base, "--systems", "trl"]) == 0
    summary = json.loads((tmp_path / "gpu_grpo_vs_trl.json").read_text())["summary"]
    assert ran == ["mcprl", "trl"] and summary["time_ratio"] == 0.4
    assert bench.main([*base, "--steps", "2", "--systems", "trl"]) == 0  # other settings: mcprl's result is not reused
    assert "mcprl" not in json.loads((tmp_path / "gpu_grpo_vs_trl.json").read_text())["summary"]["systems"]
