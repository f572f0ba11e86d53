"""Shared fixtures. Sections are grouped by owner; append, don't reorder."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

# ---- environment: never touch the user's cache or the network -----------------------------
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
# Tests share one model cache (the pulled SmolLM2 is reused across runs), but every test that
# writes checkpoints points MCPRL_HOME at its own tmp dir through the `home` fixture.
SHARED_HOME = Path(os.environ.get("MCPRL_TEST_HOME", Path.home() / ".cache" / "mcprl"))


@pytest.fixture
def anyio_backend():
    return "asyncio"


# ---- spine: models ---------------------------------------------------------------------------
@pytest.fixture(scope="session")
def smollm2_dir() -> Path:
    """The real SmolLM2-135M (pulled and converted once into the shared cache)."""
    old = os.environ.get("MCPRL_HOME")
    os.environ["MCPRL_HOME"] = str(SHARED_HOME)
    try:
        from mcprl import weights

        return weights.pull("smollm2-135m")
    finally:
        if old is None:
            os.environ.pop("MCPRL_HOME", None)
        else:
            os.environ["MCPRL_HOME"] = old


@pytest.fixture(scope="session")
def tiny_model_dir(smollm2_dir: Path, tmp_path_factory) -> Path:
    """A tiny randomly initialised Llama with SmolLM2's tokenizer and our tool template."""
    import torch
    from transformers import AutoTokenizer, LlamaConfig, LlamaForCausalLM

    out = tmp_path_factory.mktemp("tiny-llama")
    tok = AutoTokenizer.from_pretrained(smollm2_dir)
    cfg = LlamaConfig(
        vocab_size=len(tok), hidden_size=64, intermediate_size=128, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=2048,
        bos_token_id=tok.bos_token_id, eos_token_id=tok.eos_token_id, pad_token_id=tok.pad_token_id,
        tie_word_embeddings=True,
    )
    torch.manual_seed(0)
    LlamaForCausalLM(cfg).save_pretrained(out)
    tok.save_pretrained(out)
    return out


@pytest.fixture
def home(tmp_path, monkeypatch) -> Path:
    """A private MCPRL_HOME for checkpoints and runs."""
    monkeypatch.setenv("MCPRL_HOME", str(tmp_path / "home"))
    return tmp_path / "home"
