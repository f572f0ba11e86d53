"""Training sequences -> micro-batches, with the prompt tokens that sequences share computed once.

A group's rollouts begin with the same prompt (system prompt, tool list, demonstration, task), and
a step's groups with the same system prompt, tool list and demonstration. A packed row holds what
its sequences share once (a prefix), followed by each sequence's remainder (a branch). The
attention mask lets a branch see the prefix and itself, never another branch, and position ids
continue after the prefix in every branch, so each token gets the hidden state it would get in a
sequence of its own: the same logprobs and the same gradient, for less compute. With an agent's
prompt (hundreds of tokens of instructions and tools) shared by a group of 4-8 rollouts, most
of the tokens a naive batch would run are prompt repeats.

The prefix stops before the first loss-carrying token of any sequence in the row, so a token
with its own advantage and sampling logprob is never shared. Rows are padded into micro-batches
of at most `max_tokens` (rows x width); sequences too long for one row are split over several,
each repeating their prefix.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import torch

from mcprl.serving.sampler import shared_prefix_len
from mcprl.train.sequences import Sequence


def shared_prefix(seqs: list[Sequence]) -> int:
    """Tokens all `seqs` begin with, before any of them carries loss."""
    if len(seqs) < 2:
        return 0
    first_loss = min(s.loss_mask.index(True) if True in s.loss_mask else len(s.loss_mask) for s in seqs)
    return min(shared_prefix_len([s.input_ids for s in seqs]), first_loss)


@dataclass
class PrefixBranches:
    """What one packed row holds: a prefix (maybe empty) and the sequences (branches) that continue it."""

    prefix: list[int]
    branches: list[Sequence]

    def __len__(self) -> int:
        return len(self.prefix) + sum(len(s.input_ids) - len(self.prefix) for s in self.branches)

    @classmethod
    def sharing(cls, branches: list[Sequence]) -> PrefixBranches:
        """A row of `branches` behind all they share before their first loss token."""
        p = shared_prefix(branches)
        return cls(branches[0].input_ids[:p] if p else [], branches)


def pack_rows(groups: list[list[Sequence]], max_tokens: int, share: bool = True) -> list[PrefixBranches]:
    """Each group's sequences as rows of their shared prefix and their branches, at most `max_tokens`
    long (a single branch longer than that gets a row of its own); then rows that begin alike, taken
    in token order, merged where the merged row stays in the budget and runs fewer tokens than the two
    apart: groups behind one system prompt, tool list and demonstration run it once (a reference
    step's chains, one a group, mcprl.run.runner). `share=False`: a row per sequence."""
    if not share:
        return [PrefixBranches([], [s]) for seqs in groups for s in seqs]
    # Each group's rows first, then merged: taken one sequence at a time across groups, a row holding the
    # end of one group and the start of the next splits both, and GRPO steps ran 3-6% more tokens than
    # packed per group (docs/benchmarks.md, "Packing across groups").
    rows: list[PrefixBranches] = []
    for seqs in groups:
        row: list[Sequence] = []
        for s in seqs:
            if row and len(PrefixBranches.sharing([*row, s])) > max_tokens:
                rows.append(PrefixBranches.sharing(row))
                row = []
            row.append(s)
        if row:
            rows.append(PrefixBranches.sharing(row))
    merged: list[PrefixBranches] = []
    for r in sorted(rows, key=lambda r: r.branches[0].input_ids):
        both = PrefixBranches.sharing([*merged[-1].branches, *r.branches]) if merged else None
        if both is not None and len(both) <= max_tokens and len(both) < len(merged[-1]) + len(r):
            merged[-1] = both
        else:
            merged.append(r)
    return merged


def micro_batches(rows: list[PrefixBranches], max_tokens: int) -> list[list[PrefixBranches]]:
    """Rows (longest first) batched so that rows x longest row stays within `max_tokens`."""
    out: list[list[PrefixBranches]] = []
    for r in sorted(rows, key=len, reverse=True):
        if out and (len(out[-1]) + 1) * len(out[-1][0]) <= max_tokens:
            out[-1].append(r)
        else:
            out.append([r])
    return out


def collate(
    rows: list[PrefixBranches],
    pad_id: int,
    total_tokens: int,
    n_trajectories: int,
    normalization: Literal["token", "sequence"] = "token",
) -> dict[str, torch.Tensor]:
    """Tensors of one micro-batch, [B, T] unless noted, aligned to the predicted token:
    input_ids, position_ids, attention_mask ([B, 1, T, T] bool, True = may attend; plain [B, T] padding
    when every row is one unshared sequence), pred_index (the
    position whose hidden state predicts each token), old_logprobs, advantages, weights (0 off the
    sampled tokens; the loss normalisation folded in: each of the step's `total_tokens` loss tokens
    alike, or with "sequence" each of its `n_trajectories` sampled trajectories alike, however many
    sequences a trajectory was split into), temperature, top_p, top_k and min_p (each branch's
    sampling settings, neutral elsewhere), constrained (True on a grammar-constrained branch) and
    written (True on a branch the run wrote, `Generation.written`); and attention_spans ([N, 4]: each
    prefix's and branch's row, the prefix length it sees, its start and end), what the mask says, for an
    attention that computes only what it lets through (`mcprl.model.attention.spans_attention`)."""
    b, width = len(rows), max(len(r) for r in rows)
    ids = torch.full((b, width), pad_id, dtype=torch.long)
    pos = torch.zeros((b, width), dtype=torch.long)
    pred = torch.zeros((b, width), dtype=torch.long)
    start = torch.arange(width).repeat(b, 1)  # first position of each token's own block (pads: itself)
    lo = torch.zeros((b, width), dtype=torch.long)  # [lo, hi): the prefix a branch token also sees
    hi = torch.zeros((b, width), dtype=torch.long)
    old, adv, w = (torch.zeros((b, width)) for _ in range(3))
    temp, top_p, min_p = torch.ones((b, width)), torch.ones((b, width)), torch.zeros((b, width))
    top_k = torch.zeros((b, width), dtype=torch.long)
    constrained, written = torch.zeros((b, width), dtype=torch.bool), torch.zeros((b, width), dtype=torch.bool)
    spans: list[tuple[int, int, int, int]] = []
    for i, r in enumerate(rows):
        p = len(r.prefix)
        if p:
            spans.append((i, 0, 0, p))
        ids[i, :p] = torch.tensor(r.prefix, dtype=torch.long)
        pos[i, :p] = torch.arange(p)
        start[i, :p] = 0
        pred[i, 1:p] = torch.arange(max(p - 1, 0))
        at = p
        for s in r.branches:
            n = len(s.input_ids) - p
            sl = slice(at, at + n)
            spans.append((i, p, at, at + n))
            ids[i, sl] = torch.tensor(s.input_ids[p:], dtype=torch.long)
            pos[i, sl] = torch.arange(p, p + n)
            start[i, sl] = at
            lo[i, sl], hi[i, sl] = 0, p
            pred[i, sl] = torch.arange(at - 1, at + n - 1)
            pred[i, at] = p - 1 if p else at  # a branch's first token follows the prefix (unscored without one)
            old[i, sl] = torch.tensor(s.old_logprobs[p:])
            adv[i, sl] = s.advantage
            temp[i, sl], top_p[i, sl], top_k[i, sl], min_p[i, sl] = s.temperature, s.top_p, s.top_k, s.min_p
            constrained[i, sl], written[i, sl] = s.constrained, s.written
            mask = torch.tensor(s.loss_mask[p:], dtype=torch.float32)
            w[i, sl] = (
                mask / total_tokens if normalization == "token" else mask / (s.trajectory_loss_tokens * n_trajectories)
            )
            at += n
    out = {
        "input_ids": ids,
        "position_ids": pos,
        "pred_index": pred,
        "old_logprobs": old,
        "advantages": adv,
        "weights": w,
        "temperature": temp,
        "top_p": top_p,
        "top_k": top_k,
        "min_p": min_p,
        "constrained": constrained,
        "written": written,
        "attention_spans": torch.tensor(spans, dtype=torch.long).view(-1, 4),
    }
    if all(not r.prefix and len(r.branches) == 1 for r in rows):
        return {
            **out,
            "attention_mask": (torch.arange(width) < torch.tensor([len(r) for r in rows]).unsqueeze(-1)).long(),
        }
    k = torch.arange(width)
    q = k.view(1, width, 1)
    k = k.view(1, 1, width)
    own = (k >= start.unsqueeze(-1)) & (k <= q)
    shared = (k >= lo.unsqueeze(-1)) & (k < hi.unsqueeze(-1))
    return {**out, "attention_mask": (own | shared).unsqueeze(1)}
