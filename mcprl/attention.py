"""Attention for the short batches of CPU sampling and training.

torch's fused CPU attention kernel has a fixed cost per call that dominates when the query is
one token (decoding) or rows are a few hundred tokens (packed training rows with a mask): on
SmolLM2-135M it was 21% of a sampling batch (0.5 ms a decode call) and 17% of a training step
(4 ms a backward call over 3 rows of 149 tokens). torch's plain math path is cheaper there.
Long inputs keep the fused kernel, whose memory does not grow with the square of the length.

Registered with transformers as the attention implementation `mcprl_sdpa` (sdpa's masks,
sdpa's function, a different kernel choice); `weights.load_model` uses it on CPU.
"""

from __future__ import annotations

from contextlib import nullcontext

NAME = "mcprl_sdpa"
# Query x key scores (summed over batch and heads) up to which the math path runs: 16 MB of
# float32 scores, e.g. 9 heads x 2 rows x 300 x 300, or any decoding step.
MATH_MAX_SCORES = 1 << 22


def attention(module, query, key, value, attention_mask, **kwargs):
    from torch.nn.attention import SDPBackend, sdpa_kernel
    from transformers.integrations.sdpa_attention import sdpa_attention_forward

    b, h, q, _ = query.shape
    small = b * h * q * key.shape[2] <= MATH_MAX_SCORES
    with sdpa_kernel([SDPBackend.MATH]) if small else nullcontext():
        return sdpa_attention_forward(module, query, key, value, attention_mask, **kwargs)


def register() -> str:
    from transformers import AttentionInterface
    from transformers.masking_utils import AttentionMaskInterface, sdpa_mask

    AttentionInterface.register(NAME, attention)
    AttentionMaskInterface.register(NAME, sdpa_mask)
    return NAME
