"""The policy's next-token distribution, computed alike by the sampler (`sampler`) and the trainer
(`mcprl.train.logprobs`), both of which run the LM head themselves on the decoder's hidden states
instead of calling the model's forward.

`output_head(model)`: the LM head followed by the logit processing the model's own forward applies
(Gemma 2/3's `final_logit_softcapping`, Granite's `logits_scaling`, Cohere's `logit_scale`). The
first time it meets a model it compares its logits with the model's `forward()` on a short input
and refuses, with a `UserError`, a model whose forward processes logits in a way it does not
reproduce, so no model is sampled or trained under logits other than its own.

`truncation_cut(...)`: the sampling truncations (min-p, top-k, top-p, in vLLM's order), as the
smallest scaled logit each row keeps.
"""

from __future__ import annotations

import weakref
from typing import Any

import torch

from mcprl.errors import UserError

# Models already compared with their forward (by object): each is checked once.
_checked: weakref.WeakKeyDictionary[torch.nn.Module, bool] = weakref.WeakKeyDictionary()


class OutputHead(torch.nn.Module):
    """`lm_head`, then the model's logit processing: a multiplicative `scale`, then a tanh
    `softcap` (softcap * tanh(logits / softcap)). Differentiable (the trainer backpropagates through it)."""

    def __init__(self, lm_head: torch.nn.Module, scale: float = 1.0, softcap: float | None = None):
        super().__init__()
        self.lm_head, self.scale, self.softcap = lm_head, scale, softcap

    def forward(self, hidden: torch.Tensor) -> torch.Tensor:
        logits = self.lm_head(hidden)
        if self.scale != 1.0:
            logits = logits * self.scale
        if self.softcap:
            logits = torch.tanh(logits / self.softcap) * self.softcap
        return logits


def logit_processing(config: Any) -> dict[str, Any]:
    """`OutputHead`'s settings for a transformers config, from the attributes the forwards of
    transformers' models read: Cohere multiplies by `logit_scale`, Granite (and MiniCPM3, on the
    hidden states before the bias-free head) divides by `logits_scaling`, Gemma 2/3 soft-cap."""
    config = config.get_text_config() if hasattr(config, "get_text_config") else config
    scale = float(getattr(config, "logit_scale", None) or 1.0)
    if getattr(config, "logits_scaling", None):
        scale /= float(config.logits_scaling)
    softcap = getattr(config, "final_logit_softcapping", None)
    return {"scale": scale, "softcap": float(softcap) if softcap else None}


def output_head(causal_lm) -> OutputHead:
    """The model's LM head with its logit processing (see the module doc); checked against the
    model's forward the first time this model object is seen."""
    head = OutputHead(causal_lm.get_output_embeddings(), **logit_processing(causal_lm.config))
    if causal_lm not in _checked:
        _check(causal_lm, head)
        _checked[causal_lm] = True
    return head


def _check(causal_lm, head: OutputHead, n_tokens: int = 8) -> None:
    """Raise a UserError when `head` on the decoder's hidden states does not give `causal_lm`'s own
    forward logits (a model whose forward processes its logits in a way `logit_processing` does not
    know). One short no-grad forward each way, in eval mode (no dropout)."""
    device = next(causal_lm.parameters()).device
    ids = (
        (torch.arange(n_tokens, device=device) * 7 + 3)
        .remainder(causal_lm.config.get_text_config().vocab_size)
        .unsqueeze(0)
    )
    training = causal_lm.training
    causal_lm.eval()
    try:
        with torch.no_grad():
            ours = head(causal_lm.get_decoder()(input_ids=ids, use_cache=False).last_hidden_state).float()
            theirs = causal_lm(input_ids=ids, use_cache=False).logits.float()
    finally:
        causal_lm.train(training)
    if theirs.shape != ours.shape:
        raise UserError(
            f"{type(causal_lm).__name__}: its forward returns logits of shape {tuple(theirs.shape)}, "
            f"the LM head {tuple(ours.shape)}; this model is not supported"
        )
    # Half precision leaves rounding differences; a processing step we miss changes logits wholesale.
    err = float((ours - theirs).abs().max())
    if err > 1e-2 * (1.0 + float(theirs.abs().max())):
        raise UserError(
            f"{type(causal_lm).__name__} ({causal_lm.config.model_type}): its forward processes the LM head's "
            f"logits in a way mcprl does not reproduce (max difference {err:.3g}), so its logprobs would be "
            "wrong; use another model, or add its logit processing to mcprl.serving.logits"
        )


def truncation_cut(
    s: torch.Tensor,
    top_p: torch.Tensor | None = None,
    top_k: torch.Tensor | None = None,
    min_p: torch.Tensor | None = None,
) -> torch.Tensor:
    """Per row of [C, V] scaled logits (logits / temperature), the smallest value the sampling
    truncations keep (-inf where none applies); the kept set is `s >= cut`. In vLLM's order:
    min-p (tokens with at least `min_p` times the top token's probability), then top-k (the `top_k`
    most likely; 0 or less: off), then top-p over what is left, renormalised (the smallest set of most
    likely tokens whose mass reaches `top_p`: a token is kept while the mass ranked before it is at
    most top_p). Each argument is [C], None for off; each is a threshold on `s`, so one cut holds all."""
    peak = s.amax(-1)
    cut = torch.full_like(peak, float("-inf"))
    if min_p is not None:  # p_i >= min_p * p_max  <=>  s_i >= s_max + log(min_p)
        cut = torch.where(min_p > 0, peak + min_p.clamp(min=1e-30).log(), cut)
    k_on = top_k is not None and bool((top_k > 0).any())
    p_on = top_p is not None and bool((top_p < 1).any())
    if not (k_on or p_on):
        return cut
    ranked, _ = s.sort(-1, descending=True)
    p = (ranked - ranked[:, :1]).exp_().masked_fill_(ranked < cut.unsqueeze(-1), 0.0)
    if k_on:
        p[torch.arange(s.shape[-1], device=s.device) >= torch.where(top_k > 0, top_k, s.shape[-1]).unsqueeze(-1)] = 0.0
    kept = (p > 0).sum(-1)
    if p_on:
        before = p.cumsum(-1).sub_(p)
        kept = torch.minimum(kept, (before <= top_p.unsqueeze(-1) * p.sum(-1, keepdim=True)).sum(-1))
    truncated = (top_p < 1 if p_on else False) | (top_k > 0 if k_on else False) | (cut > float("-inf"))
    return torch.where(truncated, ranked.gather(-1, (kept - 1).clamp(min=0).unsqueeze(-1)).squeeze(-1), cut)
