"""Our trainer on a model Unsloth prepared, on a GPU: the reference pass of the KL term
(`model.disable_adapter()`) must give the base model's logprobs under Unsloth's fused LoRA kernels,
and a step with beta > 0 must report a KL that starts at zero.

GPU only, and only in the child process `test_backend_contract.test_gpu_cases_in_their_own_process`
starts (importing Unsloth patches transformers for the whole process). The model is
MCPRL_GPU_TEST_MODEL when set, else the tests' tiny Llama."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import torch

from mcprl import TrainConfig
from mcprl.train.config import LoraSettings
from mcprl.types import Generation, Trajectory, TrajectoryGroup

pytestmark = [
    pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU with vLLM and Unsloth installed"),
    pytest.mark.skipif(
        os.environ.get("MCPRL_GPU_TEST_CHILD") != "1",
        reason="runs in its own process: see test_backend_contract.test_gpu_cases_in_their_own_process",
    ),
]


@pytest.fixture(scope="module")
def trainer(tiny_model_dir):
    from mcprl.backends.gpu_training import UnslothSettings, load_trainer

    path = os.environ.get("MCPRL_GPU_TEST_MODEL") or str(tiny_model_dir)
    return load_trainer(path, LoraSettings(rank=8), None, UnslothSettings(), 0)


def _logprobs(trainer, ids: torch.Tensor) -> torch.Tensor:
    from mcprl.train.logprobs import token_logprobs

    with torch.no_grad():
        lp, _ = token_logprobs(trainer.model, ids, torch.ones_like(ids), 64)
    return lp[0, 1:].float()


def test_disable_adapter_gives_the_base_models_logprobs_under_unsloths_kernels(trainer):
    tok = trainer.tokenizer
    ids = torch.tensor(
        [tok("The capital of France is Paris. 2 + 3 = 5, and the sky is blue.")["input_ids"]], device="cuda"
    )
    model = trainer.model
    model.train()  # as in a step: Unsloth's training path, the fused LoRA kernels
    lora_b = {n: p for n, p in model.named_parameters() if "lora_B" in n}
    assert lora_b, "no LoRA B weights: was the model wrapped by get_peft_model?"
    saved = {n: p.detach().clone() for n, p in lora_b.items()}
    try:
        base = _logprobs(trainer, ids)  # a fresh adapter (B = 0) is the base model
        with torch.no_grad():
            for p in lora_b.values():
                p.normal_(std=0.05)
        adapted = _logprobs(trainer, ids)
        with model.disable_adapter():
            disabled = _logprobs(trainer, ids)
        again = _logprobs(trainer, ids)  # the adapter is back on after the context
    finally:
        with torch.no_grad():
            for n, p in lora_b.items():
                p.copy_(saved[n])
        model.eval()
    assert (adapted - base).abs().max() > 0.05, "the random adapter should change the logprobs"
    assert (disabled - base).abs().max() < 0.05, (
        f"disable_adapter() logprobs differ from the base's by {(disabled - base).abs().max():.3f}"
    )
    assert torch.allclose(again, adapted)


def _group(trainer) -> list[TrajectoryGroup]:
    """Four completions of one prompt with their logprobs under the current policy (not made up)."""
    tok = trainer.tokenizer
    prompt = tok("Add 2 and 3.")["input_ids"]
    trajs = []
    for i, text in enumerate([" 5", " It is 5.", " 6", " I do not know."]):
        completion = tok(text, add_special_tokens=False)["input_ids"]
        lp = _logprobs(trainer, torch.tensor([prompt + completion], device="cuda"))[len(prompt) - 1 :]
        g = Generation(prompt_token_ids=prompt, completion_token_ids=completion, logprobs=lp.tolist())
        trajs.append(Trajectory(generations=[g], reward=float(i % 2 == 0)))
    return [TrajectoryGroup(trajectories=trajs)]


def test_kl_to_the_base_starts_at_zero_and_stays_small(trainer):
    config = TrainConfig(learning_rate=1e-3, beta=0.04)
    first = trainer.step(_group(trainer), config)
    assert first["trained"] == 1 and first["kl"] < 1e-3, first  # a fresh adapter is the base
    assert abs(first["ratio_mean"] - 1) < 0.05, first  # our logprobs match the ones the group was scored with
    second = trainer.step(_group(trainer), config)
    assert 0 <= second["kl"] < 1.0, second  # one small step away from the base


def test_the_saved_adapter_is_peft_and_loads_back(trainer, tmp_path: Path):
    from peft import LoraConfig
    from safetensors.torch import load_file

    trainer.save(tmp_path)
    cfg = LoraConfig.from_pretrained(str(tmp_path))
    weights = load_file(tmp_path / "adapter_model.safetensors")
    assert cfg.r == 8 and weights and all(".lora_A." in k or ".lora_B." in k for k in weights)
