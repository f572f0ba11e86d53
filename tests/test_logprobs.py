"""The LM head's chunked logprobs with a hand-written backward, against plain autograd."""

import pytest
import torch

from mcprl.train.logprobs import head_logprobs


def _reference(hidden, targets, head):
    logits = head(hidden).float()
    logsm = logits.log_softmax(-1)
    entropy = -(logsm.exp() * logsm).sum(-1)
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
