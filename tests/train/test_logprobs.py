"""The LM head's chunked logprobs with a hand-written backward, against plain autograd."""

import pytest
import torch

from mcprl.train.logprobs import head_logprobs

pytestmark = pytest.mark.unit


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


def _truncated_reference(hidden, targets, head, temperature, top_p, top_k, min_p):
    """Plain autograd at vLLM's sampling rules, written out on probabilities: min-p (drop tokens
    below min_p times the top probability), then top-k, then top-p over what is left, renormalised."""
    logits = head(hidden).float() / temperature.unsqueeze(-1)
    probs = logits.detach().softmax(-1)
    drop = probs < min_p.unsqueeze(-1) * probs.amax(-1, keepdim=True)
    kth = logits.detach().sort(-1, descending=True).values.gather(-1, (top_k.clamp(min=1) - 1).unsqueeze(-1))
    drop |= (logits.detach() < kth) & (top_k > 0).unsqueeze(-1)
    kept = probs.masked_fill(drop, 0)
    kept = kept / kept.sum(-1, keepdim=True)
    sorted_p, idx = kept.sort(-1, descending=True)
    drop |= torch.zeros_like(drop).scatter(-1, idx, (sorted_p.cumsum(-1) - sorted_p) > top_p.unsqueeze(-1))
    drop.scatter_(-1, targets.unsqueeze(-1), False)
    logsm = logits.masked_fill(drop, float("-inf")).log_softmax(-1)
    entropy = -torch.special.xlogy(logsm.exp(), logsm.exp()).sum(-1)
    return logsm.gather(-1, targets.unsqueeze(-1)).squeeze(-1), entropy


@pytest.mark.parametrize("softcap", [None, 0.5])
def test_top_k_min_p_and_the_models_logit_processing_match_autograd(softcap):
    """top_k and min_p (alone, together, with top-p) and a soft-capped head (Gemma's) give plain
    autograd's logprobs, entropies and gradients; the truncations change the answer."""
    from mcprl.serving.logits import OutputHead

    torch.manual_seed(1)
    n, h, v = 12, 16, 40
    head = OutputHead(torch.nn.Linear(h, v, bias=True), scale=0.5, softcap=softcap)
    hidden, weights = torch.randn(n, h) * 3, torch.randn(n)
    temperature = torch.tensor([0.7, 1.0, 1.5] * 4)
    top_p = torch.tensor([1.0, 1.0, 0.8, 1.0] * 3)
    top_k = torch.tensor([5, 0, 0, 3, 10, 0] * 2)
    min_p = torch.tensor([0.0, 0.2, 0.0, 0.1] * 3)
    with torch.no_grad():  # targets inside each row's kept set: the most likely token, or a close second
        targets = (head(hidden) / temperature.unsqueeze(-1)).topk(2, -1).indices[torch.arange(n), torch.arange(n) % 2]
    ours = _run(
        lambda x, t, m: head_logprobs(x, t, m, 5, temperature, top_p, top_k, min_p), hidden, targets, head, weights
    )
    ref = _run(
        lambda x, t, m: _truncated_reference(x, t, m, temperature, top_p, top_k, min_p), hidden, targets, head, weights
    )
    untruncated = _run(lambda x, t, m: head_logprobs(x, t, m, 5, temperature), hidden, targets, head, weights)
    assert not torch.allclose(ours[0], untruncated[0], atol=1e-3)
    for a, b in zip([*ours[:3], *ours[3]], [*ref[:3], *ref[3]]):
        torch.testing.assert_close(a, b, atol=1e-5, rtol=1e-5)


# ---- the model's own logit processing (mcprl.serving.logits), on tiny random models ------------
def _tiny(arch: str):
    """A tiny random model of an architecture whose forward processes its logits, with a setting
    large enough to matter on random weights."""
    import transformers as tf

    small = dict(
        vocab_size=96,
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        head_dim=8,
        max_position_embeddings=64,
    )
    config, cls = {
        "gemma2": (lambda: tf.Gemma2Config(**small, final_logit_softcapping=0.05), tf.Gemma2ForCausalLM),
        "gemma3": (lambda: tf.Gemma3TextConfig(**small, final_logit_softcapping=0.05), tf.Gemma3ForCausalLM),
        "granite": (lambda: tf.GraniteConfig(**small, logits_scaling=8.0), tf.GraniteForCausalLM),
        "cohere": (lambda: tf.CohereConfig(**small, logit_scale=6.0), tf.CohereForCausalLM),
        "cohere2": (lambda: tf.Cohere2Config(**small, logit_scale=6.0), tf.Cohere2ForCausalLM),
    }[arch]
    torch.manual_seed(0)
    return cls(config()).eval()


@pytest.mark.parametrize("arch", ["gemma2", "gemma3", "granite", "cohere", "cohere2"])
def test_sampler_and_trainer_use_the_models_own_logits(arch):
    """On models whose forward post-processes the LM head's logits, the sampler's recorded logprobs
    and the trainer's `token_logprobs` both equal log_softmax of `forward()`'s logits / T (the bare
    LM head's would not)."""
    from mcprl.serving.logits import output_head
    from mcprl.serving.sampler import SampleRequest, sample
    from mcprl.train.logprobs import token_logprobs

    model = _tiny(arch)
    prompt = [3, 17, 42, 5]
    (out,) = sample(model, [SampleRequest(prompt, 8, temperature=0.7, seed=0)], pad_id=0, eos_ids=set())
    ids = torch.tensor([prompt + out.token_ids])
    with torch.no_grad():
        own = (
            (model(ids).logits[0, :-1] / 0.7)
            .log_softmax(-1)
            .gather(-1, ids[0, 1:, None])
            .squeeze(-1)[len(prompt) - 1 :]
        )
        bare = (model.lm_head(model.model(ids).last_hidden_state)[0, :-1] / 0.7).log_softmax(-1)
        bare = bare.gather(-1, ids[0, 1:, None]).squeeze(-1)[len(prompt) - 1 :]
        trained, _ = token_logprobs(model, ids, torch.ones_like(ids), 4, temperature=torch.full(ids.shape, 0.7))
    assert not torch.allclose(bare, own, atol=1e-2)  # the processing matters here
    torch.testing.assert_close(torch.tensor(out.logprobs), own, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(trained[0, len(prompt) :], own, atol=1e-5, rtol=1e-5)
    assert output_head(model).lm_head is model.lm_head


def test_a_model_whose_logit_processing_is_unknown_is_refused(tiny_model_dir):
    """A forward that changes the logits in a way mcprl.serving.logits does not know (here: a scale
    no config attribute announces) is refused at load, by the trainer and by the sampler."""
    from transformers import AutoTokenizer, LlamaForCausalLM

    from mcprl.errors import UserError
    from mcprl.serving.sampler import SampleRequest, sample
    from mcprl.train.config import LoraSettings
    from mcprl.train.grpo import GRPOTrainer

    class Scaled(LlamaForCausalLM):
        def forward(self, *args, **kwargs):
            out = super().forward(*args, **kwargs)
            out.logits = out.logits * 3.0
            return out

    tok = AutoTokenizer.from_pretrained(tiny_model_dir)
    with pytest.raises(UserError, match="processes the LM head's logits in a way mcprl does not reproduce"):
        GRPOTrainer(Scaled.from_pretrained(tiny_model_dir), tok, LoraSettings(rank=2))
    with pytest.raises(UserError, match="does not reproduce"):
        sample(Scaled.from_pretrained(tiny_model_dir), [SampleRequest([1, 2], 2)], pad_id=0, eos_ids=set())
    GRPOTrainer(LlamaForCausalLM.from_pretrained(tiny_model_dir), tok, LoraSettings(rank=2))  # the plain model passes
