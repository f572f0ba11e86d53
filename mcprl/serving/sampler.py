"""Batched autoregressive sampling with a KV cache, per-row sampling settings, and the exact
token ids and logprobs of what was sampled.

Rows of one batch share a model (and adapter) but may differ in prompt length, temperature,
top_p, top_k, min_p, token budget, stop strings, seed and grammar. The logits are the model's own
(`mcprl.serving.logits.output_head`: the LM head and its forward's logit processing). Each
token's logprob is under the policy's distribution at the row's settings (softmax(logits / T),
renormalised over the set its truncations keep, `mcprl.serving.logits.truncation_cut`), which the
trainer recomputes for the GRPO ratio (see `mcprl.types.Generation`).

A row with a grammar (`constraint`) draws only tokens the grammar allows (the truncations then
apply among those, as vLLM does), but its logprobs are still the policy's own, unmasked, with
the drawn token counted in the truncated set: the trainer cannot know the grammar, so a masked
logprob would start the GRPO ratio below 1 exactly where the grammar overrode the policy, and
the clipped loss would then learn least from those tokens (no gradient at all for a negative
advantage once the ratio is under 1 - epsilon). Recorded this way, the update teaches the
policy itself what the grammar made it write.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field

import torch
from transformers import DynamicCache

from mcprl.model import memory
from mcprl.serving.logits import output_head, truncation_cut
from mcprl.serving.structured import Constraint, allowed_tokens


@dataclass
class SampleRequest:
    """One completion to sample (a row of the batch): its prompt and its sampling settings."""

    prompt_ids: list[int]
    max_new_tokens: int
    temperature: float = 1.0
    top_p: float = 1.0
    stop: list[str] = field(default_factory=list)
    seed: int | None = None
    constraint: Constraint | None = None  # structured output: a grammar masks the logits (structured.py)
    top_k: int = 0  # 0 or less: off
    min_p: float = 0.0
    cancelled: threading.Event | None = None  # once set, the row stops (its caller is gone)


@dataclass
class Sampled:
    token_ids: list[int]
    logprobs: list[float]
    finish_reason: str  # "stop" (eos or stop string) or "length"
    text_end: int | None = None  # when a stop string hit: cut the decoded text here


def _draw(probs: torch.Tensor, generators: list[torch.Generator | None]) -> torch.Tensor:
    """One token per row from (unnormalised) float32 `probs` by inverting the CDF: a single uniform
    per row, from that row's generator, where `torch.multinomial` draws vocabulary-sized noise per
    row. torch accumulates a float32 cumsum in float64, so each CDF entry is exact to float32
    precision; a float64 CDF would double the largest tensor of a decoding step for nothing."""
    u = torch.stack([torch.rand((), generator=g, dtype=torch.float64, device=probs.device) for g in generators])
    cdf = probs.cumsum(-1)
    ids = torch.searchsorted(cdf, (u * cdf[:, -1]).to(cdf.dtype).unsqueeze(-1), right=True).squeeze(-1)
    return ids.clamp_(max=probs.shape[-1] - 1)


MIN_SHARED_PREFIX = 16


def shared_prefix_len(prompts: list[list[int]]) -> int:
    """Length of the common prefix, leaving every row at least one token of its own to prefill."""
    first, n = prompts[0], min(len(p) for p in prompts) - 1
    for i in range(n):
        t = first[i]
        if any(p[i] != t for p in prompts):
            return i
    return max(n, 0)


@torch.inference_mode()
def sample(model, rows: list[SampleRequest], *, pad_id: int, eos_ids: set[int], decode=None) -> list[Sampled]:
    """Sample completions for `rows` in one batch. `decode(ids) -> str` is needed for stop strings."""
    device = next(model.parameters()).device
    causal_lm = model.get_base_model() if hasattr(model, "get_base_model") else model  # PEFT's layers sit inside
    decoder, lm_head = causal_lm.get_decoder(), output_head(causal_lm)

    def next_logits(**inputs) -> torch.Tensor:
        """Logits of the next token after each row. The LM head gets a contiguous [B, H] input: a strided
        bfloat16 input (HF's `logits_to_keep` slice) makes torch convert the whole head's weights to
        float32 on the side, a [vocab x hidden] float32 copy for a few rows' logits."""
        hidden = decoder(**inputs, use_cache=True).last_hidden_state
        return lm_head(hidden[:, -1, :].contiguous())

    b = len(rows)
    # Rows with the same prompt (n>1, a GRPO group) prefill it once: `owner[i]` is row i's prompt.
    prompt_index: dict[tuple[int, ...], int] = {}
    owner = [prompt_index.setdefault(tuple(r.prompt_ids), len(prompt_index)) for r in rows]
    prompts = [list(p) for p in prompt_index]
    n_prompts = len(prompts)
    cache = DynamicCache()
    # Rollouts share long prefixes (system prompt, tool list, demonstration): run the common
    # prefix once and copy its KV cache to every prompt.
    shared = shared_prefix_len(prompts) if n_prompts > 1 else 0
    if shared >= MIN_SHARED_PREFIX:
        decoder(input_ids=torch.tensor([prompts[0][:shared]], device=device), past_key_values=cache, use_cache=True)
        cache.batch_repeat_interleave(n_prompts)
    else:
        shared = 0
    suffixes = [p[shared:] for p in prompts]
    width = max(len(s) for s in suffixes)
    input_ids = torch.full((n_prompts, width), pad_id, dtype=torch.long)
    suffix_mask = torch.zeros((n_prompts, width), dtype=torch.long)
    for i, s in enumerate(suffixes):  # left padding, so every row's next token sits in the last column
        input_ids[i, width - len(s) :] = torch.tensor(s)
        suffix_mask[i, width - len(s) :] = 1
    input_ids, suffix_mask = input_ids.to(device), suffix_mask.to(device)
    mask = torch.cat([torch.ones((n_prompts, shared), dtype=torch.long, device=device), suffix_mask], dim=1)
    positions = shared + (suffix_mask.cumsum(-1) - 1).clamp(min=0)
    logits = next_logits(input_ids=input_ids, attention_mask=mask, position_ids=positions, past_key_values=cache)
    if n_prompts < b:
        rows_of = torch.tensor(owner, device=device)
        cache.batch_select_indices(rows_of)
        logits, mask, positions = logits[rows_of], mask[rows_of], positions[rows_of, -1:]
    temps = torch.tensor([r.temperature for r in rows], device=device)
    # The truncations of the sampling rows (a greedy row records its logprob without them, see Generation).
    truncation = {
        "top_p": torch.tensor([r.top_p if r.temperature > 0 else 1.0 for r in rows], device=device),
        "top_k": torch.tensor([r.top_k if r.temperature > 0 else 0 for r in rows], device=device),
        "min_p": torch.tensor([r.min_p if r.temperature > 0 else 0.0 for r in rows], device=device),
    }
    truncated = bool(
        (truncation["top_p"] < 1).any() | (truncation["top_k"] > 0).any() | (truncation["min_p"] > 0).any()
    )
    generators = [torch.Generator(device=device).manual_seed(r.seed) if r.seed is not None else None for r in rows]
    greedy_rows = any(r.temperature == 0 for r in rows)
    constrained = any(r.constraint is not None for r in rows)
    budget = max(r.max_new_tokens for r in rows)

    out_ids: list[list[int]] = [[] for _ in rows]
    out_lp: list[list[float]] = [[] for _ in rows]
    finish: list[str | None] = [None] * b
    text_end: list[int | None] = [None] * b
    # The rows still sampling, by index into `rows`: once a row finishes it leaves the batch (its KV cache
    # rows, mask and settings dropped), so a batch whose rows end early stops computing for them.
    live = list(range(b))
    for _ in range(budget):
        logits = logits.float()
        # Logprobs under the policy's distribution at the row's settings (vLLM's processed_logprobs):
        # softmax(logits / T), renormalised over the set the truncations keep. Greedy rows take the
        # argmax and record their logprob at T=1 without truncation (as vLLM does; see Generation).
        scaled = logits / torch.where(temps > 0, temps, 1.0).unsqueeze(-1)
        logp = torch.log_softmax(scaled, dim=-1)
        probs = torch.softmax(scaled, dim=-1)
        # The policy's kept tokens (all without a truncation), with their probabilities.
        kept = (
            probs.masked_fill(scaled < truncation_cut(scaled, **truncation).unsqueeze(-1), 0.0) if truncated else probs
        )
        if constrained:  # draw among the tokens each row's grammar allows, truncated among those
            allowed = allowed_tokens([rows[i].constraint for i in live], logits.shape[-1])
            blocked = ~allowed.to(logits.device)
            logits = logits.masked_fill(blocked, float("-inf"))  # for the greedy rows' argmax
            masked = scaled.masked_fill(blocked, float("-inf"))
            drawn_from = torch.softmax(masked, dim=-1)
            if truncated:
                drawn_from = drawn_from.masked_fill(masked < truncation_cut(masked, **truncation).unsqueeze(-1), 0.0)
        else:
            drawn_from = kept
        next_ids = _draw(drawn_from, generators)
        if greedy_rows:
            next_ids = torch.where(temps == 0, logits.argmax(-1), next_ids)
        chosen_lp = logp.gather(-1, next_ids.unsqueeze(-1)).squeeze(-1)
        if truncated:  # minus the log of the policy's kept mass, the drawn token always counted in it
            p_next = probs.gather(-1, next_ids.unsqueeze(-1)).squeeze(-1)
            mass = kept.sum(-1) + torch.where(kept.gather(-1, next_ids.unsqueeze(-1)).squeeze(-1) > 0, 0.0, p_next)
            chosen_lp -= mass.log()
        chosen_lp = chosen_lp.tolist()
        chosen = next_ids.tolist()
        for j, i in enumerate(live):
            r = rows[i]
            if r.cancelled is not None and r.cancelled.is_set():
                finish[i] = "cancelled"
                continue
            tok = chosen[j]
            out_ids[i].append(tok)
            if r.constraint is not None:
                r.constraint.advance(tok)
            out_lp[i].append(chosen_lp[j])
            if tok in eos_ids:
                finish[i] = "stop"
            elif r.stop and decode is not None:
                text = decode(out_ids[i])
                hits = [text.find(s) for s in r.stop if s in text]
                if hits:
                    finish[i], text_end[i] = "stop", min(hits)
            if finish[i] is None and len(out_ids[i]) >= r.max_new_tokens:
                finish[i] = "length"
        keep = [j for j, i in enumerate(live) if finish[i] is None]
        if not keep:
            break
        if len(keep) < len(live):  # the finished rows leave the batch
            live = [live[j] for j in keep]
            index = torch.tensor(keep, device=device)
            cache.batch_select_indices(index)
            mask, positions, next_ids, temps = mask[index], positions[index], next_ids[index], temps[index]
            truncation = {k: v[index] for k, v in truncation.items()}
            generators = [generators[j] for j in keep]
        mask = torch.cat([mask, torch.ones((len(live), 1), dtype=mask.dtype, device=device)], dim=-1)
        positions = positions[:, -1:] + 1
        logits = next_logits(
            input_ids=next_ids.unsqueeze(-1), attention_mask=mask, position_ids=positions, past_key_values=cache
        )
    del cache, logits
    memory.release()  # the batch's KV cache
    return [Sampled(out_ids[i], out_lp[i], finish[i] or "length", text_end[i]) for i in range(b)]
