"""Attention for the short batches of CPU sampling and training.

torch's attention kernels have a fixed cost per call that dominates when the query is one token
(decoding) or rows are a few hundred tokens (packed training rows with a mask); torch's math path
also repeats each key/value head for its query heads, and guards fully masked rows with extra
passes. Written out as five operations, with the query heads that share a key/value head stacked
into one matmul, it takes a fraction of that time (docs/benchmarks.md), in the same float32
arithmetic as the math path. Long inputs keep the fused kernel, whose memory does not grow with
the square of the length.

Registered with transformers as the attention implementation `mcprl_sdpa` (sdpa's masks, and
sdpa's function for what this does not cover); `weights.load_model` uses it on CPU.
"""

from __future__ import annotations

import torch
from transformers import AttentionInterface
from transformers.integrations.sdpa_attention import sdpa_attention_forward
from transformers.masking_utils import AttentionMaskInterface, sdpa_mask

NAME = "mcprl_sdpa"
# Query x key scores (summed over batch and heads) up to which attention is computed here: 16 MB
# of float32 scores, e.g. 9 heads x 2 rows x 300 x 300, or any decoding step.
SMALL_MAX_SCORES = 1 << 22


def small_attention(query, key, value, mask, scaling: float, is_causal: bool):
    """Softmax attention in float32 (under autocast too) for [B, H, Q, D] queries and [B, KV, K, D]
    keys/values (H a multiple of KV); `mask` is None, or [B or 1, 1, Q, K] boolean (True: attend) or
    additive. A query with every key masked gets a uniform average, not NaN. Returns [B, Q, H, D]."""
    b, h, q, d = query.shape
    kv, k = key.shape[1], key.shape[2]
    g = h // kv  # query heads per key/value head: stacked as rows of one matmul, no repeated keys
    with torch.autocast(query.device.type, enabled=False):
        scores = query.reshape(b, kv, g * q, d).float() @ key.float().transpose(-1, -2)
        scores = scores.view(b, kv, g, q, k).mul(scaling)
        if mask is None and is_causal and q > 1:
            mask = torch.ones(q, k, dtype=torch.bool, device=query.device).tril(k - q)[None, None]
        if mask is not None and mask.dtype == torch.bool:
            scores = scores.masked_fill(~mask.unsqueeze(2), torch.finfo(torch.float32).min)
        elif mask is not None:
            scores = scores + mask.unsqueeze(2).float()
        probs = scores.softmax(-1).view(b, kv, g * q, k)
        out = (probs @ value.float()).to(query.dtype).view(b, h, q, d)
    return out.transpose(1, 2).contiguous()


def attention(
    module,
    query,
    key,
    value,
    attention_mask,
    dropout: float = 0.0,
    scaling: float | None = None,
    is_causal: bool | None = None,
    **kwargs,
):
    b, h, q, _ = query.shape
    plain = dropout == 0 and kwargs.get("position_bias") is None and kwargs.get("cache") is None
    if plain and b * h * q * key.shape[2] <= SMALL_MAX_SCORES:
        causal = is_causal if is_causal is not None else getattr(module, "is_causal", True)
        scale = scaling if scaling is not None else query.shape[-1] ** -0.5
        return small_attention(query, key, value, attention_mask, scale, causal), None
    return sdpa_attention_forward(
        module, query, key, value, attention_mask, dropout=dropout, scaling=scaling, is_causal=is_causal, **kwargs
    )


def register() -> str:
    AttentionInterface.register(NAME, attention)
    AttentionMaskInterface.register(NAME, sdpa_mask)
    return NAME
