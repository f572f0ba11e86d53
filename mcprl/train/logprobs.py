"""Per-token log-probabilities (and entropies) of a causal LM, without [tokens x vocab] logits in
memory.

The LM head runs on the scored positions only, `chunk` of them at a time, forward and backward,
and the backward of log-softmax is written out: per chunk, logits once more, then
grad_logits = g * (onehot(target) - softmax(logits)) in place, then the head's own backward. Only
the hidden states and one logsumexp per position are kept between forward and backward.

The logits are the model's own: the LM head followed by the logit processing its forward applies
(`mcprl.serving.logits.output_head`, the sampler's too).

Each position may have its own sampling temperature and truncations (`temperature`, `top_p`,
`top_k`, `min_p`: [N], None for off): its logprob is then that of the distribution the sampler
drew from, softmax(logits / T) renormalised over the truncated set, the distribution the endpoint
recorded the sampled token's logprob under. Its backward is the same with s = logits / T and the
softmax over the kept set: grad_logits = g / T * (onehot(target) - softmax_kept(s)). The kept set
is the sampler's rule (`mcprl.serving.logits.truncation_cut`), always with the target in it: the
sampled token is in the set it was drawn from even where rounding moves a tie at the boundary.
A temperature costs a division of each chunk's logits and a top-p or top-k a sort of them, the
costliest pass of all; a neutral setting skips its pass (`head_logprobs`).

Against the plain route (autograd through `lm_head -> float -> logsumexp -> gather`, each chunk
checkpointed) this is the same arithmetic with a third of the full-vocabulary passes, which
matters on CPU: there a pass over a 64 x 49k float32 chunk is memory-bound, and those passes
cost more than the head's matmuls.
"""

from __future__ import annotations

import torch

from mcprl.model import attention
from mcprl.serving.logits import output_head, truncation_cut


def _dropped(s: torch.Tensor, cut: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """[C, V] True outside the truncated set (the target always kept)."""
    return (s < cut.unsqueeze(-1)).scatter_(-1, targets.unsqueeze(-1), False)


def _chunk_stats(
    logits: torch.Tensor,
    targets: torch.Tensor,
    temperature: torch.Tensor | None,
    truncation: dict[str, torch.Tensor] | None,
    z: torch.Tensor,
    e: torch.Tensor,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor | None]:
    """logprob of `targets`, entropy, logsumexp and truncation cut (None without `truncation`: the
    [C] top_p / top_k / min_p of `truncation_cut`) of [C, V] logits scaled by 1 / `temperature` and
    restricted to the truncated set, in float32 (autocast off), in three passes over the vocabulary
    (more with a temperature or a truncation), in the [C, V] float32 buffers `z` and `e`."""
    with torch.autocast(logits.device.type, enabled=False):
        if temperature is None:
            z.copy_(logits)
        else:
            torch.div(logits, temperature.unsqueeze(-1), out=z)
        cut = truncation_cut(z, **truncation) if truncation else None
        drop = _dropped(z, cut, targets) if cut is not None else None
        peak = z.amax(-1, keepdim=True)  # always in the truncated set
        z.sub_(peak)
        torch.exp(z, out=e)
        if drop is not None:
            e.masked_fill_(drop, 0.0)  # z stays finite there, so E_p[z] below stays a plain dot product
        total = e.sum(-1)
        log_total = total.log()
        logp = z.gather(-1, targets.unsqueeze(-1)).squeeze(-1) - log_total
        mean_z = (e.unsqueeze(-2) @ z.unsqueeze(-1)).flatten() / total  # E_p[z], as C dot products
        return logp, log_total - mean_z, peak.squeeze(-1) + log_total, cut


def _scratch(n: int, logits: torch.Tensor) -> torch.Tensor:
    """A float32 [n, V] buffer, allocated once for all the chunks of a call: a fresh 12 MB tensor
    per chunk and pass costs more in page faults than the pass itself."""
    return logits.new_empty((n, logits.shape[-1]), dtype=torch.float32)


class _HeadLogprobs(torch.autograd.Function):
    @staticmethod
    def forward(
        ctx,
        hidden: torch.Tensor,
        targets: torch.Tensor,
        temperature: torch.Tensor | None,
        truncation: dict[str, torch.Tensor],
        lm_head: torch.nn.Module,
        chunk: int,
        *head_params: torch.Tensor,
    ):
        device = hidden.device.type  # backward recomputes the head under the same autocast as here
        ctx.autocast = (device, torch.get_autocast_dtype(device), torch.is_autocast_enabled(device))
        logps, ents, lses, cuts, buffers = [], [], [], [], ()
        with torch.no_grad():
            for s in range(0, hidden.shape[0], chunk):
                logits = lm_head(hidden[s : s + chunk])
                if not buffers:
                    n = min(chunk, hidden.shape[0])
                    buffers = (_scratch(n, logits), _scratch(n, logits))
                t = temperature[s : s + chunk] if temperature is not None else None
                trunc = {k: v[s : s + chunk] for k, v in truncation.items()}
                lp, ent, lse, cut = _chunk_stats(
                    logits, targets[s : s + chunk], t, trunc, *(b[: logits.shape[0]] for b in buffers)
                )
                cuts.append(cut)
                logps.append(lp)
                ents.append(ent)
                lses.append(lse)
        logp, entropy, lse = (
            torch.cat(x) if x else hidden.new_zeros(0, dtype=torch.float32) for x in (logps, ents, lses)
        )
        cut = None if not truncation else torch.cat(cuts) if cuts else lse.new_zeros(0)  # [N]: the kept set is s >= cut
        ctx.save_for_backward(hidden, targets, lse, temperature, cut)
        ctx.lm_head, ctx.chunk = lm_head, chunk
        ctx.mark_non_differentiable(entropy)
        return logp, entropy

    @staticmethod
    def backward(ctx, grad_logp: torch.Tensor, _grad_entropy):
        hidden, targets, lse, temperature, cut = ctx.saved_tensors
        grad_hidden = torch.zeros_like(hidden) if ctx.needs_input_grad[0] else None
        device, dtype, enabled = ctx.autocast
        buffer = None
        for s in range(0, hidden.shape[0], ctx.chunk):
            g = grad_logp[s : s + ctx.chunk].float().unsqueeze(-1)
            h = hidden[s : s + ctx.chunk].detach().requires_grad_(grad_hidden is not None)
            with torch.enable_grad(), torch.autocast(device, dtype=dtype, enabled=enabled):
                logits = ctx.lm_head(h)
            buffer = _scratch(min(ctx.chunk, hidden.shape[0]), logits) if buffer is None else buffer
            grad = buffer[: logits.shape[0]]
            if temperature is None:
                grad.copy_(logits.detach())
            else:  # s = logits / T, and d s / d logits = 1 / T
                t = temperature[s : s + ctx.chunk].unsqueeze(-1)
                torch.div(logits.detach(), t, out=grad)
                g = g / t
            drop = _dropped(grad, cut[s : s + ctx.chunk], targets[s : s + ctx.chunk]) if cut is not None else None
            grad.sub_(lse[s : s + ctx.chunk].unsqueeze(-1)).exp_()  # softmax (over the truncated set below)
            if drop is not None:
                grad.masked_fill_(drop, 0.0)
            grad.mul_(-g).scatter_add_(-1, targets[s : s + ctx.chunk].unsqueeze(-1), g)
            if logits.requires_grad:  # into the head's own parameters, if any train, and into h
                logits.backward(grad.to(logits.dtype))
            if grad_hidden is not None:
                grad_hidden[s : s + ctx.chunk] = h.grad
        return grad_hidden, None, None, None, None, None, *(None for _ in ctx.needs_input_grad[6:])


def head_logprobs(
    hidden: torch.Tensor,
    targets: torch.Tensor,
    lm_head: torch.nn.Module,
    chunk: int,
    temperature: torch.Tensor | None = None,
    top_p: torch.Tensor | None = None,
    top_k: torch.Tensor | None = None,
    min_p: torch.Tensor | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Logprob of each of `targets` [N] under `lm_head(hidden)` for [N, H] hidden states, and the
    entropy of each position's distribution (a metric: no gradient), both float32 [N]. With
    `temperature` / `top_p` / `top_k` / `min_p` ([N]), the distribution is that of the sampler at
    those settings (`mcprl.serving.logits.truncation_cut`)."""
    # Settings that change nothing cost nothing: no division by 1, no sort for a top-p of 1.
    if temperature is not None and bool((temperature == 1).all()):
        temperature = None
    truncation = {
        k: v
        for k, v, on in (
            ("top_p", top_p, lambda x: x < 1),
            ("top_k", top_k, lambda x: x > 0),
            ("min_p", min_p, lambda x: x > 0),
        )
        if v is not None and bool(on(v).any())
    }
    # The head's trainable parameters go in as inputs so autograd knows the output depends on them
    # (their gradients are accumulated by the head's own backward, inside ours).
    params = [p for p in lm_head.parameters() if p.requires_grad]
    return _HeadLogprobs.apply(hidden, targets, temperature, truncation, lm_head, chunk, *params)


def token_logprobs(
    model,
    input_ids: torch.Tensor,
    attention_mask: torch.Tensor,
    chunk: int,
    scored: torch.Tensor | None = None,
    position_ids: torch.Tensor | None = None,
    pred_index: torch.Tensor | None = None,
    temperature: torch.Tensor | None = None,
    top_p: torch.Tensor | None = None,
    top_k: torch.Tensor | None = None,
    min_p: torch.Tensor | None = None,
    attention_spans: torch.Tensor | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Logprob (and entropy) of each token given what precedes it, [B, T].

    `attention_mask` is [B, T] (padding) or [B, 1, T, T] (a packed batch, see `packing.collate`, with
    its `position_ids`, and `pred_index`: the position whose hidden state predicts each token; by
    default the one before). Only positions in `scored` ([B, T] bool; default: every token after the
    first, padding excluded) are scored; the rest get 0. `temperature`, `top_p`, `top_k`, `min_p`
    ([B, T], default off) are the sampling settings each token was drawn with. The LM head (with the model's
    logit processing) runs on `chunk` scored positions at a time, taken across the whole batch.
    `attention_spans` (the packed mask's spans, `packing.collate`) go to a model on mcprl's attention, which
    then computes only the scores the mask lets through."""
    causal_lm = model.get_base_model() if hasattr(model, "get_base_model") else model
    spans = {}
    if attention_spans is not None and causal_lm.config._attn_implementation == attention.NAME:
        spans["attention_spans"] = attention_spans
    hidden = causal_lm.get_decoder()(
        input_ids=input_ids, attention_mask=attention_mask, position_ids=position_ids, use_cache=False, **spans
    ).last_hidden_state
    b, t = input_ids.shape
    if scored is None:
        scored = attention_mask.bool() if attention_mask.dim() == 2 else torch.ones_like(input_ids, dtype=torch.bool)
        scored = scored & (torch.arange(t, device=input_ids.device) > 0)
    if pred_index is None:
        pred_index = (torch.arange(t, device=input_ids.device) - 1).clamp(min=0).expand(b, t)
    rows, cols = scored.nonzero(as_tuple=True)
    sampling = {"temperature": temperature, "top_p": top_p, "top_k": top_k, "min_p": min_p}
    settings = {k: v[rows, cols] for k, v in sampling.items() if v is not None}
    lp, ent = head_logprobs(
        hidden[rows, pred_index[rows, cols]], input_ids[rows, cols], output_head(causal_lm), chunk, **settings
    )
    zeros = torch.zeros(input_ids.shape, dtype=torch.float32, device=input_ids.device)
    return zeros.index_put((rows, cols), lp), zeros.index_put((rows, cols), ent)
