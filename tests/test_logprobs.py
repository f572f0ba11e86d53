"""The LM head's chunked logprobs with a hand-written backward, against plain autograd."""

import pytest
import torch

from mcprl.train.logprobs import head_logprobs


def _reference(hidden, targets, head, temperature=None, top_p=None):
    """Plain autograd: logits / T, the tokens outside the top-p set (the sampler's rule, on
    probabilities) at -inf, log-softmax."""
    logits = head(hidden).float()
    if temperature is not None:
        logits = logits / temperature.unsqueeze(-1)
    if top_p is not None:
        probs = logits.detach().softmax(-1)
        sorted_p, idx = probs.sort(-1, descending=True)
        drop_sorted = (sorted_p.cumsum(-1) - sorted_p) > top_p.unsqueeze(-1)
        drop = torch.zeros_like(drop_sorted).scatter(-1, idx, drop_sorted)
        logits = logits.masked_fill(drop, float("-inf"))
    logsm = logits.log_softmax(-1)
    entropy = -torch.special.xlogy(logsm.exp(), logsm.exp()).sum(-1)
    return logsm.gather(-1, targets.unsqueeze(-1)).squeeze(-1), entropy


def _run(fn, hidden, targets, head, weights):
    h = hidden.clone().requires_grad_()
    head.zero_grad()
    logp, entropy = fn(h, targets, head)
    (logp * weights).sum().backward()
    return logp.detach(), entropy.detach(), h.grad, [p.grad.clone() for p in head.parameters() if p.requires_grad]


@pytest.mark.parametrize("chunk", [4, 7, 64])
@pytest.mark.parametrize("trainable_head", [False, True])
def test_head_logprobs_match_autograd(chunk, trainable_head):
    torch.manual_seed(0)
    n, h, v = 19, 16, 300
    head = torch.nn.Linear(h, v, bias=trainable_head)
    head.requires_grad_(trainable_head)
    hidden, targets, weights = torch.randn(n, h), torch.randint(0, v, (n,)), torch.randn(n)

    ours = _run(lambda x, t, m: head_logprobs(x, t, m, chunk), hidden, targets, head, weights)
    ref = _run(_reference, hidden, targets, head, weights)
    for a, b in zip(ours[:3], ref[:3]):
        torch.testing.assert_close(a, b, atol=1e-5, rtol=1e-5)
    assert len(ours[3]) == len(ref[3]) == (2 if trainable_head else 0)
    for a, b in zip(ours[3], ref[3]):
        torch.testing.assert_close(a, b, atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("chunk", [4, 64])
@pytest.mark.parametrize("trainable_head", [False, True])
@pytest.mark.parametrize("with_top_p", [False, True])
def test_head_logprobs_at_temperature_and_top_p_match_autograd(chunk, trainable_head, with_top_p):
    """Per-position sampling settings (rows of one batch may differ): logits / T, renormalised over
    the top-p set, forward and backward as autograd does it."""
    torch.manual_seed(1)
    n, h, v = 19, 16, 300
    head = torch.nn.Linear(h, v, bias=trainable_head)
    head.requires_grad_(trainable_head)
    hidden, weights = torch.randn(n, h) * 3, torch.randn(n)
    temperature = torch.tensor([0.7, 1.0, 0.3, 1.5] * 5)[:n]
    top_p = torch.tensor([0.9, 1.0, 0.5] * 7)[:n] if with_top_p else None
    # targets drawn from the sampling distribution, so they sit inside the top-p set
    with torch.no_grad():
        logits = head(hidden) / temperature.unsqueeze(-1)
        probs = logits.softmax(-1)
        if top_p is not None:
            sorted_p, idx = probs.sort(-1, descending=True)
            sorted_p = sorted_p.masked_fill((sorted_p.cumsum(-1) - sorted_p) > top_p.unsqueeze(-1), 0)
            probs = torch.zeros_like(probs).scatter(-1, idx, sorted_p)
        targets = torch.multinomial(probs, 1, generator=torch.Generator().manual_seed(2)).squeeze(-1)

    ours = _run(lambda x, t, m: head_logprobs(x, t, m, chunk, temperature, top_p), hidden, targets, head, weights)
    ref = _run(lambda x, t, m: _reference(x, t, m, temperature, top_p), hidden, targets, head, weights)
    plain = _run(_reference, hidden, targets, head, weights)
    assert not torch.allclose(ours[0], plain[0], atol=1e-3)  # the settings change the answer
    for a, b in zip(ours[:3], ref[:3]):
        torch.testing.assert_close(a, b, atol=1e-5, rtol=1e-5)
    for a, b in zip(ours[3], ref[3]):
        torch.testing.assert_close(a, b, atol=1e-5, rtol=1e-5)


def test_top_p_always_keeps_the_target():
    """A token just outside the top-p set (a tie moved by rounding) still gets a finite logprob."""
    head = torch.nn.Linear(4, 3, bias=False).requires_grad_(False)
    with torch.no_grad():
        head.weight.copy_(torch.tensor([[3.0, 0, 0, 0], [0, 0, 0, 0], [-3.0, 0, 0, 0]]))
    hidden = torch.tensor([[1.0, 0, 0, 0]])
    lp, _ = head_logprobs(hidden, torch.tensor([2]), head, 4, top_p=torch.tensor([0.5]))
    assert float(lp) == pytest.approx(-3 - torch.logaddexp(torch.tensor(3.0), torch.tensor(-3.0)).item(), abs=1e-5)


def test_head_logprobs_bf16_under_autocast():
    """A bfloat16 head under autocast (the CPU training setting): the head's matmul in bfloat16,
    everything after it in float32, as autograd would do it."""
    torch.manual_seed(0)
    head = torch.nn.Linear(32, 500, bias=False).to(torch.bfloat16).requires_grad_(False)
    hidden, targets, weights = torch.randn(24, 32).bfloat16(), torch.randint(0, 500, (24,)), torch.randn(24)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        ours = _run(lambda x, t, m: head_logprobs(x, t, m, 5), hidden, targets, head, weights)
        ref = _run(_reference, hidden, targets, head, weights)
    assert ours[2].dtype == torch.bfloat16
    torch.testing.assert_close(ours[0], ref[0], atol=1e-4, rtol=1e-4)
    torch.testing.assert_close(ours[1], ref[1], atol=1e-4, rtol=1e-4)
    torch.testing.assert_close(ours[2].float(), ref[2].float(), atol=1e-2, rtol=1e-2)


def test_head_logprobs_of_nothing_still_backpropagate():
    head = torch.nn.Linear(8, 50, bias=False).requires_grad_(False)
    h = torch.randn(0, 8, requires_grad=True)
    logp, entropy = head_logprobs(h, torch.zeros(0, dtype=torch.long), head, 4)
    assert logp.shape == entropy.shape == (0,)
    logp.sum().backward()
    assert h.grad is not None and h.grad.shape == (0, 8)
