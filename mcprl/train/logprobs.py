"""Per-token log-probabilities (and entropies) of a causal LM, without [tokens x vocab] logits in
memory.

The LM head runs on the scored positions only, `chunk` of them at a time, forward and backward,
and the backward of log-softmax is written out: per chunk, logits once more, then
grad_logits = g * (onehot(target) - softmax(logits)) in place, then the head's own backward. Only
the hidden states and one logsumexp per position are kept between forward and backward.

Against the plain route (autograd through `lm_head -> float -> logsumexp -> gather`, each chunk
checkpointed) this is the same arithmetic with a third of the full-vocabulary passes: on CPU,
where a pass over a 64 x 49k float32 chunk is memory-bound, that route spent more time in those
passes than in the head's matmuls.
"""

from __future__ import annotations

import torch


def _chunk_stats(logits: torch.Tensor, targets: torch.Tensor, z: torch.Tensor, e: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """logprob of `targets`, entropy and logsumexp for [C, V] logits, in float32 (autocast off), in
    three passes over the vocabulary, in the [C, V] float32 buffers `z` and `e`."""
    with torch.autocast(logits.device.type, enabled=False):
        z.copy_(logits)
        peak = z.amax(-1, keepdim=True)
        z.sub_(peak)
        torch.exp(z, out=e)
        total = e.sum(-1)
        log_total = total.log()
        logp = z.gather(-1, targets.unsqueeze(-1)).squeeze(-1) - log_total
        mean_z = (e.unsqueeze(-2) @ z.unsqueeze(-1)).flatten() / total  # E_p[z], as C dot products
        return logp, log_total - mean_z, peak.squeeze(-1) + log_total


def _scratch(n: int, logits: torch.Tensor) -> torch.Tensor:
    """A float32 [n, V] buffer, allocated once for all the chunks of a call: a fresh 12 MB tensor
    per chunk and pass costs more in page faults than the pass itself."""
    return logits.new_empty((n, logits.shape[-1]), dtype=torch.float32)


class _HeadLogprobs(torch.autograd.Function):
    @staticmethod
    def forward(ctx, hidden: torch.Tensor, targets: torch.Tensor, lm_head: torch.nn.Module, chunk: int, *head_params: torch.Tensor):
        device = hidden.device.type  # backward recomputes the head under the same autocast as here
        ctx.autocast = (device, torch.get_autocast_dtype(device), torch.is_autocast_enabled(device))
        logps, ents, lses, buffers = [], [], [], ()
        with torch.no_grad():
            for s in range(0, hidden.shape[0], chunk):
                logits = lm_head(hidden[s : s + chunk])
                if not buffers:
                    n = min(chunk, hidden.shape[0])
                    buffers = (_scratch(n, logits), _scratch(n, logits))
                lp, ent, lse = _chunk_stats(logits, targets[s : s + chunk], *(b[: logits.shape[0]] for b in buffers))
                logps.append(lp)
                ents.append(ent)
                lses.append(lse)
        logp, entropy, lse = (torch.cat(x) if x else hidden.new_zeros(0, dtype=torch.float32) for x in (logps, ents, lses))
        ctx.save_for_backward(hidden, targets, lse)
        ctx.lm_head, ctx.chunk = lm_head, chunk
        ctx.mark_non_differentiable(entropy)
        return logp, entropy

    @staticmethod
    def backward(ctx, grad_logp: torch.Tensor, _grad_entropy):
        hidden, targets, lse = ctx.saved_tensors
        grad_hidden = torch.zeros_like(hidden) if ctx.needs_input_grad[0] else None
        device, dtype, enabled = ctx.autocast
        buffer = None
        for s in range(0, hidden.shape[0], ctx.chunk):
            g = grad_logp[s : s + ctx.chunk].float().unsqueeze(-1)
            h = hidden[s : s + ctx.chunk].detach().requires_grad_(grad_hidden is not None)
            with torch.enable_grad(), torch.autocast(device, dtype=dtype, enabled=enabled):
                logits = ctx.lm_head(h)
            buffer = _scratch(min(ctx.chunk, hidden.shape[0]), logits) if buffer is None else buffer
            grad = buffer[: logits.shape[0]].copy_(logits.detach())
            grad.sub_(lse[s : s + ctx.chunk].unsqueeze(-1)).exp_()  # softmax
            grad.mul_(-g).scatter_add_(-1, targets[s : s + ctx.chunk].unsqueeze(-1), g)
            if logits.requires_grad:  # into the head's own parameters, if any train, and into h
                logits.backward(grad.to(logits.dtype))
            if grad_hidden is not None:
                grad_hidden[s : s + ctx.chunk] = h.grad
        return grad_hidden, None, None, None, *(None for _ in ctx.needs_input_grad[4:])


def head_logprobs(hidden: torch.Tensor, targets: torch.Tensor, lm_head: torch.nn.Module, chunk: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Logprob of each of `targets` [N] under `lm_head(hidden)` for [N, H] hidden states, and the
    entropy of each position's distribution (a metric: no gradient), both float32 [N]."""
    # The head's trainable parameters go in as inputs so autograd knows the output depends on them
    # (their gradients are accumulated by the head's own backward, inside ours).
    params = [p for p in lm_head.parameters() if p.requires_grad]
    return _HeadLogprobs.apply(hidden, targets, lm_head, chunk, *params)


def token_logprobs(model, input_ids: torch.Tensor, attention_mask: torch.Tensor, chunk: int,
                   where: torch.Tensor | None = None, position_ids: torch.Tensor | None = None,
                   pred_index: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """Logprob (and entropy) of each token given what precedes it, [B, T].

    `attention_mask` is [B, T] (padding) or [B, 1, T, T] (a packed batch, see `packing.collate`, with
    its `position_ids`, and `pred_index`: the position whose hidden state predicts each token; by
    default the one before). Only positions in `where` ([B, T] bool; default: every token after the
    first, padding excluded) are scored; the rest get 0. The LM head runs on `chunk` scored
    positions at a time, taken across the whole batch."""
    causal_lm = model.get_base_model() if hasattr(model, "get_base_model") else model
    hidden = causal_lm.get_decoder()(input_ids=input_ids, attention_mask=attention_mask, position_ids=position_ids,
                                     use_cache=False).last_hidden_state
    b, t = input_ids.shape
    if where is None:
        where = attention_mask.bool() if attention_mask.dim() == 2 else torch.ones_like(input_ids, dtype=torch.bool)
        where = where & (torch.arange(t, device=input_ids.device) > 0)
    if pred_index is None:
        pred_index = (torch.arange(t, device=input_ids.device) - 1).clamp(min=0).expand(b, t)
    rows, cols = where.nonzero(as_tuple=True)
    lp, ent = head_logprobs(hidden[rows, pred_index[rows, cols]], input_ids[rows, cols], causal_lm.get_output_embeddings(), chunk)
    zeros = torch.zeros(input_ids.shape, dtype=torch.float32, device=input_ids.device)
    return zeros.index_put((rows, cols), lp), zeros.index_put((rows, cols), ent)
