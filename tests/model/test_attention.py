"""mcprl's attention for short inputs against torch's scaled_dot_product_attention."""

import pytest
import torch
import torch.nn.functional as F

from mcprl.model.attention import small_attention

pytestmark = pytest.mark.unit


def _reference(q, k, v, mask, is_causal):
    g = q.shape[1] // k.shape[1]
    k, v = k.repeat_interleave(g, dim=1), v.repeat_interleave(g, dim=1)
    out = F.scaled_dot_product_attention(
        q.float(), k.float(), v.float(), attn_mask=mask, is_causal=is_causal and mask is None
    )
    return out.to(q.dtype).transpose(1, 2)


def _qkv(b, h, kv, q, k, d=16, dtype=torch.float32):
    torch.manual_seed(0)
    return (
        torch.randn(b, h, q, d, dtype=dtype),
        torch.randn(b, kv, k, d, dtype=dtype),
        torch.randn(b, kv, k, d, dtype=dtype),
    )


@pytest.mark.parametrize("case", ["decode", "prefill_causal", "bool_mask", "additive_mask", "cached_causal"])
def test_small_attention_matches_sdpa(case):
    b, h, kv, d = 3, 6, 2, 16
    if case == "decode":
        q, k, v = _qkv(b, h, kv, 1, 9)
        mask, causal = (
            torch.tensor([[1] * 9, [0, 0] + [1] * 7, [0] * 4 + [1] * 5], dtype=torch.bool)[:, None, None],
            True,
        )
    elif case == "prefill_causal":
        q, k, v = _qkv(b, h, kv, 7, 7)
        mask, causal = None, True
    elif case == "cached_causal":  # queries are the last 3 of 8 positions
        q, k, v = _qkv(b, h, kv, 3, 8)
        mask, causal = torch.ones(3, 8, dtype=torch.bool).tril(5)[None, None], False
    elif case == "bool_mask":  # a packed row: two branches after a shared prefix of 3
        q, k, v = _qkv(1, h, kv, 7, 7)
        mask = torch.ones(7, 7, dtype=torch.bool).tril()
        mask[5:, 3:5] = False
        mask, causal = mask[None, None], False
    else:
        q, k, v = _qkv(b, h, kv, 5, 5)
        mask, causal = torch.randn(b, 1, 5, 5), False
    ours = small_attention(q, k, v, mask, d**-0.5, causal)
    assert ours.shape == (q.shape[0], q.shape[2], h, d)
    torch.testing.assert_close(ours, _reference(q, k, v, mask, causal), atol=1e-5, rtol=1e-5)


def test_small_attention_bf16_and_gradients():
    """bfloat16 under autocast, as in CPU training: float32 inside all the same."""
    q, k, v = (x.requires_grad_() for x in _qkv(2, 4, 2, 5, 5, dtype=torch.bfloat16))
    mask = torch.ones(5, 5, dtype=torch.bool).tril()[None, None]
    with torch.autocast("cpu", dtype=torch.bfloat16):
        ours = small_attention(q, k, v, mask, 0.25, False)
    assert ours.dtype == torch.bfloat16
    ours.float().sum().backward()
    grads = [x.grad.clone() for x in (q, k, v)]
    for x in (q, k, v):
        x.grad = None
    g = 2
    ref = F.scaled_dot_product_attention(
        q.float(), k.float().repeat_interleave(g, 1), v.float().repeat_interleave(g, 1), attn_mask=mask, scale=0.25
    )
    ref.to(torch.bfloat16).transpose(1, 2).float().sum().backward()
    torch.testing.assert_close(ours.float(), ref.to(torch.bfloat16).transpose(1, 2).float())
    for a, x in zip(grads, (q, k, v)):
        torch.testing.assert_close(a.float(), x.grad.float(), atol=2e-2, rtol=2e-2)


def test_fully_masked_query_is_not_nan():
    q, k, v = _qkv(1, 2, 1, 2, 3)
    mask = torch.tensor([[False, False, False], [True, True, False]])[None, None]
    out = small_attention(q, k, v, mask, 0.25, False)
    assert torch.isfinite(out).all()


def test_model_with_mcprl_attention_matches_sdpa(tiny_model_dir):
    """The tiny Llama (grouped-query heads) through `weights.load_model` (mcprl_sdpa) and through
    transformers' own sdpa: same logits on a left-padded batch, same next-token logits from a cache."""
    from transformers import AutoModelForCausalLM

    from mcprl.model import weights

    ours = weights.load_model(str(tiny_model_dir), dtype="float32")
    assert ours.config._attn_implementation == "mcprl_sdpa"
    theirs = AutoModelForCausalLM.from_pretrained(
        tiny_model_dir, dtype=torch.float32, attn_implementation="sdpa"
    ).eval()
    ids = torch.tensor([[0, 0, 5, 6, 7, 8], [9, 10, 11, 12, 13, 14]])
    mask = torch.tensor([[0, 0, 1, 1, 1, 1], [1] * 6])
    with torch.no_grad():
        a, b = (
            ours(input_ids=ids, attention_mask=mask, use_cache=True),
            theirs(input_ids=ids, attention_mask=mask, use_cache=True),
        )
        torch.testing.assert_close(a.logits[mask.bool()], b.logits[mask.bool()], atol=1e-5, rtol=1e-5)
        step = {
            "input_ids": torch.tensor([[3], [4]]),
            "attention_mask": torch.cat([mask, torch.ones(2, 1, dtype=torch.long)], 1),
        }
        a2 = ours(**step, past_key_values=a.past_key_values).logits
        b2 = theirs(**step, past_key_values=b.past_key_values).logits
    torch.testing.assert_close(a2, b2, atol=1e-5, rtol=1e-5)
