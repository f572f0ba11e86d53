"""Attention for the short batches of CPU sampling and training.

torch's attention kernels have a fixed cost per call that dominates when the query is one token
(decoding) or rows are a few hundred tokens (packed training rows with a mask); torch's math path
also repeats each key/value head for its query heads, and guards fully masked rows with extra
passes. Written out as five operations, with the query heads that share a key/value head stacked
into one matmul, it takes a fraction of that time (docs/benchmarks.md), in the same float32
arithmetic as the math path. Long inputs keep the fused kernel, whose memory does not grow with
the square of the length.

A packed training row (`mcprl.train.packing`: a shared prompt, then each sequence's own tokens) has a
mask that lets each sequence see the prompt and itself, never the others; a fused kernel given that
mask still computes every query against every key of the row, masked or not. Given the row's
spans (`attention_spans`), attention is computed span by span instead, each span's queries against
the keys they may see: the same result, for only the scores that count.

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


def spans_attention(query, key, value, spans: torch.Tensor, scaling: float):
    """Attention over packed rows, span by span, for [B, H, Q, D] queries and [B, KV, K, D] keys/values
    (Q = K). `spans` is [N, 4] long, a row's in order, each (row, shared, start, end): the queries at
    start..end-1 of `row` see the row's keys 0..shared-1 and, causally, their own span. A position no
    span covers (padding) gets zeros. Returns [B, Q, H, D]."""
    b, h, q, d = query.shape
    pieces: list[list[tuple[int, torch.Tensor]]] = [[] for _ in range(b)]
    for r, shared, start, end in spans.tolist():
        qs, ks, vs = (x[r : r + 1, :, start:end] for x in (query, key, value))
        mask = None
        if shared:
            ks = torch.cat([key[r : r + 1, :, :shared], ks], dim=2)
            vs = torch.cat([value[r : r + 1, :, :shared], vs], dim=2)
            # every shared key, then its own keys causally: query i sees keys 0..shared+i
            mask = torch.ones(end - start, shared + end - start, dtype=torch.bool, device=query.device).tril(shared)
        out = torch.nn.functional.scaled_dot_product_attention(
            qs, ks, vs, attn_mask=mask, is_causal=mask is None, scale=scaling, enable_gqa=h != key.shape[1]
        )
        pieces[r].append((start, out))
    rows = []
    for row in pieces:
        parts, at = [], 0
        for start, out in row:  # (collate lists a row's spans in order)
            parts.append(out)
            at = start + out.shape[2]
        if at < q:
            parts.append(query.new_zeros(1, h, q - at, d))
        rows.append(torch.cat(parts, dim=2))
    return torch.cat(rows).transpose(1, 2).contiguous()


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
    spans = kwargs.get("attention_spans")
    if spans is not None and dropout == 0:
        return spans_attention(
            query, key, value, spans, scaling if scaling is not None else query.shape[-1] ** -0.5
        ), None
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
