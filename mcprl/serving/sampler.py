"""Batched autoregressive sampling with a KV cache, per-row sampling settings, and the exact
token ids and logprobs of what was sampled.

Rows of one batch (`Batch`, which rows join and leave between two tokens) share a model (and
adapter) but may differ in prompt length, temperature, top_p, top_k, min_p, token budget, stop
strings, seed and grammar; prompts' prefixes prefilled once are kept for the prompts that start
with them (`PrefixCache`). The logits are the model's own
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
from collections import OrderedDict
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


class PrefixCache:
    """The KV caches of prompt prefixes prefilled lately (automatic prefix caching, as vLLM's): a
    prompt that starts with one prefills only the rest. A rollout's next turn starts with its last
    turn's prompt, and every rollout of a run with the same system prompt, tool list and
    demonstration, so each turn prefills little more than the tool's result. Entries are kept per
    model (`key`: the adapter, None for the base model; `forget` drops an adapter's when its
    weights change), the least recently used dropped past `max_bytes`."""

    def __init__(self, max_bytes: int = 512 * 2**20):
        self.max_bytes = max_bytes
        self._entries: OrderedDict[tuple[str | None, tuple[int, ...]], list[tuple[torch.Tensor, torch.Tensor]]] = (
            OrderedDict()
        )
        self._bytes = 0

    def longest(self, key: str | None, tokens: list[int]) -> tuple[int, list[tuple[torch.Tensor, torch.Tensor]]]:
        """The longest cached prefix of `tokens` (its length, and each layer's keys and values, which
        may run past it): (0, []) where none has MIN_SHARED_PREFIX tokens."""
        best, layers, best_key = 0, [], None
        for entry_key, kv in self._entries.items():
            if entry_key[0] != key:
                continue
            common = _common_prefix(entry_key[1], tokens)
            if common > best:
                best, layers, best_key = common, kv, entry_key
        if best < MIN_SHARED_PREFIX:
            return 0, []
        self._entries.move_to_end(best_key)
        return best, layers

    def put(self, key: str | None, tokens: list[int], layers: list[tuple[torch.Tensor, torch.Tensor]]) -> None:
        """Keep the KV cache of `tokens` (each layer's [1, heads, len(tokens), dim] keys and values)."""
        size = _nbytes(layers)
        if size > self.max_bytes:
            return
        entry = (key, tuple(tokens))
        if entry in self._entries:
            self._entries.move_to_end(entry)
            return
        self._entries[entry] = layers
        self._bytes += size
        while self._bytes > self.max_bytes:
            _, dropped = self._entries.popitem(last=False)
            self._bytes -= _nbytes(dropped)

    def forget(self, key: str | None) -> None:
        for entry in [e for e in self._entries if e[0] == key]:
            self._bytes -= _nbytes(self._entries.pop(entry))


def _nbytes(layers: list[tuple[torch.Tensor, torch.Tensor]]) -> int:
    return sum(k.nbytes + v.nbytes for k, v in layers)


def _common_prefix(a: tuple[int, ...] | list[int], b: list[int]) -> int:
    n = min(len(a), len(b))
    i = 0
    while i < n and a[i] == b[i]:
        i += 1
    return i


def _left_pad(t: torch.Tensor, width: int, dim: int) -> torch.Tensor:
    """`t` with zeros before its entries along `dim`, to `width` (a row's KV cache or mask padded on the left)."""
    extra = width - t.shape[dim]
    if extra <= 0:
        return t
    shape = list(t.shape)
    shape[dim] = extra
    return torch.cat([t.new_zeros(shape), t], dim=dim)


class Batch:
    """A decoding batch that rows join and leave (continuous batching): `add` prefills rows into it
    between two tokens, `step` draws one token for every row still sampling and returns the rows
    that ended. Each row sits left-padded in one KV cache with its own attention mask and
    positions, so it draws what it would alone, whichever rows it shares the batch with; a row
    that ends leaves at once (its cache rows, mask and settings dropped), and the cache's columns
    no row still sees are cut.

        batch = Batch(model, pad_id=..., eos_ids=...)
        ids = batch.add(rows)
        while batch.rows:
            for row_id, sampled in batch.step(): ...
    """

    def __init__(
        self,
        model,
        *,
        pad_id: int,
        eos_ids: set[int],
        decode=None,
        prefixes: PrefixCache | None = None,
        prefix_key: str | None = None,
    ):
        self.prefixes, self.prefix_key = prefixes, prefix_key  # where prompts' prefixes are kept (and whose)
        self.device = next(model.parameters()).device
        causal_lm = model.get_base_model() if hasattr(model, "get_base_model") else model  # PEFT's layers sit inside
        self.decoder, self.lm_head = causal_lm.get_decoder(), output_head(causal_lm)
        self.pad_id, self.eos_ids, self.decode = pad_id, eos_ids, decode
        self.rows: list[SampleRequest] = []  # the rows still sampling, in batch order
        self.ids: list[int] = []  # each one's id, as `add` gave it
        self._next_id = 0
        self._out: list[tuple[list[int], list[float]]] = []  # each one's tokens and logprobs so far
        self._cache: DynamicCache | None = None
        self._logits = self._mask = self._positions = self._temps = None
        self._truncation: dict[str, torch.Tensor] = {}
        self._generators: list[torch.Generator | None] = []

    @property
    def width(self) -> int:
        """Columns of the KV cache (the longest row's tokens, padding included)."""
        return 0 if self._mask is None else self._mask.shape[1]

    @property
    def budget_left(self) -> int:
        """The most tokens a row still sampling may yet draw."""
        return max((r.max_new_tokens - len(out[0]) for r, out in zip(self.rows, self._out)), default=0)

    def _forward(self, **inputs) -> torch.Tensor:
        """Logits of the next token after each row. The LM head gets a contiguous [B, H] input: a strided
        bfloat16 input (HF's `logits_to_keep` slice) makes torch convert the whole head's weights to
        float32 on the side, a [vocab x hidden] float32 copy for a few rows' logits."""
        hidden = self.decoder(**inputs, use_cache=True).last_hidden_state
        return self.lm_head(hidden[:, -1, :].contiguous())

    @torch.inference_mode()
    def add(self, rows: list[SampleRequest]) -> list[int]:
        """Prefill `rows` and make them part of the batch; returns their ids. Raises (the batch
        unchanged) where a row's settings cannot be sampled (a seed torch rejects)."""
        device = self.device
        generators = [torch.Generator(device=device).manual_seed(r.seed) if r.seed is not None else None for r in rows]
        # Rows with the same prompt (n>1, a GRPO group) prefill it once: `owner[i]` is row i's prompt.
        prompt_index: dict[tuple[int, ...], int] = {}
        owner = [prompt_index.setdefault(tuple(r.prompt_ids), len(prompt_index)) for r in rows]
        prompts = [list(p) for p in prompt_index]
        n_prompts = len(prompts)
        # Rollouts share long prefixes (system prompt, tool list, demonstration): the prompts' common
        # prefix (a lone prompt's all but its last token) is run once, from the longest of it cached,
        # and its KV cache copied to every prompt.
        shared = shared_prefix_len(prompts) if n_prompts > 1 else len(prompts[0]) - 1
        cached, layers = (
            (0, []) if self.prefixes is None else self.prefixes.longest(self.prefix_key, prompts[0][:shared])
        )
        cache = DynamicCache(ddp_cache_data=[(k[..., :cached, :], v[..., :cached, :]) for k, v in layers] or None)
        if shared >= MIN_SHARED_PREFIX:
            if shared > cached:
                prefix = torch.tensor([prompts[0][cached:shared]], device=device)
                self.decoder(input_ids=prefix, past_key_values=cache, use_cache=True)
                if self.prefixes is not None:
                    kept = [(layer.keys, layer.values) for layer in cache.layers]
                    self.prefixes.put(self.prefix_key, prompts[0][:shared], kept)
            cache.batch_repeat_interleave(n_prompts)
        else:
            shared = 0
        suffixes = [p[shared:] for p in prompts]
        width = max(len(s) for s in suffixes)
        input_ids = torch.full((n_prompts, width), self.pad_id, dtype=torch.long)
        suffix_mask = torch.zeros((n_prompts, width), dtype=torch.long)
        for i, s in enumerate(suffixes):  # left padding, so every row's next token sits in the last column
            input_ids[i, width - len(s) :] = torch.tensor(s)
            suffix_mask[i, width - len(s) :] = 1
        input_ids, suffix_mask = input_ids.to(device), suffix_mask.to(device)
        mask = torch.cat([torch.ones((n_prompts, shared), dtype=torch.long, device=device), suffix_mask], dim=1)
        positions = shared + (suffix_mask.cumsum(-1) - 1).clamp(min=0)
        logits = self._forward(input_ids=input_ids, attention_mask=mask, position_ids=positions, past_key_values=cache)
        positions = positions[:, -1:]
        if n_prompts < len(rows):
            rows_of = torch.tensor(owner, device=device)
            cache.batch_select_indices(rows_of)
            logits, mask, positions = logits[rows_of], mask[rows_of], positions[rows_of]
        # The truncations of the sampling rows (a greedy row records its logprob without them, see Generation).
        truncation = {
            "top_p": torch.tensor([r.top_p if r.temperature > 0 else 1.0 for r in rows], device=device),
            "top_k": torch.tensor([r.top_k if r.temperature > 0 else 0 for r in rows], device=device),
            "min_p": torch.tensor([r.min_p if r.temperature > 0 else 0.0 for r in rows], device=device),
        }
        temps = torch.tensor([r.temperature for r in rows], device=device)
        if self._cache is None:
            self._cache, self._logits, self._mask, self._positions, self._temps = cache, logits, mask, positions, temps
            self._truncation = truncation
        else:  # beside the rows already sampling: both caches padded on the left to the wider one
            wide = max(self.width, mask.shape[1])
            for mine, theirs in zip(self._cache.layers, cache.layers):
                mine.keys = torch.cat([_left_pad(mine.keys, wide, -2), _left_pad(theirs.keys, wide, -2)])
                mine.values = torch.cat([_left_pad(mine.values, wide, -2), _left_pad(theirs.values, wide, -2)])
            self._mask = torch.cat([_left_pad(self._mask, wide, 1), _left_pad(mask, wide, 1)])
            self._logits = torch.cat([self._logits, logits])
            self._positions = torch.cat([self._positions, positions])
            self._temps = torch.cat([self._temps, temps])
            self._truncation = {k: torch.cat([v, truncation[k]]) for k, v in self._truncation.items()}
        ids = list(range(self._next_id, self._next_id + len(rows)))
        self._next_id += len(rows)
        self.rows += rows
        self.ids += ids
        self._out += [([], []) for _ in rows]
        self._generators += generators
        return ids

    @torch.inference_mode()
    def step(self) -> list[tuple[int, Sampled]]:
        """Draw one token for every row; the rows that ended (end of sequence, a stop string, their
        budget, their caller gone) leave the batch and are returned with their ids."""
        rows, temps, truncation = self.rows, self._temps, self._truncation
        logits = self._logits.float()
        sampling = [r.temperature > 0 for r in rows]
        truncated = any(s and (r.top_p < 1 or r.top_k > 0 or r.min_p > 0) for r, s in zip(rows, sampling, strict=True))
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
        if any(r.constraint is not None for r in rows):  # draw among the tokens each row's grammar allows
            allowed = allowed_tokens([r.constraint for r in rows], logits.shape[-1])
            blocked = ~allowed.to(logits.device)
            logits = logits.masked_fill(blocked, float("-inf"))  # for the greedy rows' argmax
            masked = scaled.masked_fill(blocked, float("-inf"))
            drawn_from = torch.softmax(masked, dim=-1)
            if truncated:
                drawn_from = drawn_from.masked_fill(masked < truncation_cut(masked, **truncation).unsqueeze(-1), 0.0)
        else:
            drawn_from = kept
        next_ids = _draw(drawn_from, self._generators)
        if not all(sampling):
            next_ids = torch.where(temps == 0, logits.argmax(-1), next_ids)
        chosen_lp = logp.gather(-1, next_ids.unsqueeze(-1)).squeeze(-1)
        if truncated:  # minus the log of the policy's kept mass, the drawn token always counted in it
            p_next = probs.gather(-1, next_ids.unsqueeze(-1)).squeeze(-1)
            mass = kept.sum(-1) + torch.where(kept.gather(-1, next_ids.unsqueeze(-1)).squeeze(-1) > 0, 0.0, p_next)
            chosen_lp -= mass.log()
        ended: list[tuple[int, Sampled]] = []
        keep: list[int] = []
        for j, (r, tok, lp) in enumerate(zip(rows, next_ids.tolist(), chosen_lp.tolist(), strict=True)):
            out_ids, out_lp = self._out[j]
            finish, text_end = None, None
            if r.cancelled is not None and r.cancelled.is_set():
                finish = "cancelled"
            else:
                out_ids.append(tok)
                if r.constraint is not None:
                    r.constraint.advance(tok)
                out_lp.append(lp)
                if tok in self.eos_ids:
                    finish = "stop"
                elif r.stop and self.decode is not None:
                    text = self.decode(out_ids)
                    hits = [text.find(s) for s in r.stop if s in text]
                    if hits:
                        finish, text_end = "stop", min(hits)
                if finish is None and len(out_ids) >= r.max_new_tokens:
                    finish = "length"
            if finish is None:
                keep.append(j)
            else:
                ended.append((self.ids[j], Sampled(out_ids, out_lp, finish, text_end)))
        if not keep:
            self.close()
            return ended
        if len(keep) < len(rows):  # the ended rows leave the batch
            self._select(keep)
            next_ids = next_ids[torch.tensor(keep, device=self.device)]
        self._mask = torch.cat([self._mask, torch.ones((len(keep), 1), dtype=self._mask.dtype, device=self.device)], 1)
        self._positions = self._positions + 1
        self._logits = self._forward(
            input_ids=next_ids.unsqueeze(-1),
            attention_mask=self._mask,
            position_ids=self._positions,
            past_key_values=self._cache,
        )
        return ended

    def _select(self, keep: list[int]) -> None:
        """Keep only the rows at `keep`, and cut the cache's leading columns none of them sees."""
        index = torch.tensor(keep, device=self.device)
        self._cache.batch_select_indices(index)
        self._mask, self._positions, self._temps = self._mask[index], self._positions[index], self._temps[index]
        self._truncation = {k: v[index] for k, v in self._truncation.items()}
        self.rows = [self.rows[j] for j in keep]
        self.ids = [self.ids[j] for j in keep]
        self._out = [self._out[j] for j in keep]
        self._generators = [self._generators[j] for j in keep]
        seen = self._mask.any(0).nonzero()
        start = int(seen[0]) if len(seen) else 0
        if start > 0:
            self._mask = self._mask[:, start:]
            for layer in self._cache.layers:
                layer.keys, layer.values = layer.keys[..., start:, :], layer.values[..., start:, :]

    def close(self) -> None:
        """Drop every row and the KV cache."""
        self.rows, self.ids, self._out, self._generators = [], [], [], []
        self._cache = self._logits = self._mask = self._positions = self._temps = None
        self._truncation = {}
        memory.release()


def sample(
    model,
    rows: list[SampleRequest],
    *,
    pad_id: int,
    eos_ids: set[int],
    decode=None,
    prefixes: PrefixCache | None = None,
) -> list[Sampled]:
    """Sample completions for `rows` in one batch. `decode(ids) -> str` is needed for stop strings."""
    batch = Batch(model, pad_id=pad_id, eos_ids=eos_ids, decode=decode, prefixes=prefixes)
    ids = batch.add(rows)
    done: dict[int, Sampled] = {}
    while batch.rows:
        done.update(batch.step())
    return [done[i] for i in ids]
