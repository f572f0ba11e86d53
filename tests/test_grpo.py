"""GRPO: advantages, the loss, exact-token sequences, and the trainer on a tiny model."""

import math

import pytest
import torch

from mcprl.train.config import LoraSettings, TrainConfig
from mcprl.train.grpo import GRPOTrainer, micro_batches, token_logprobs
from mcprl.train.loss import LossInputs, group_advantages, grpo_loss
from mcprl.train.sequences import Sequence, trajectory_sequences
from mcprl.types import Generation, Trajectory, TrajectoryGroup


def test_group_advantages():
    assert group_advantages([1.0, 1.0, 1.0]) is None
    assert group_advantages([1.0]) is None
    a = group_advantages([0.0, 1.0])
    assert a == pytest.approx([-1.0, 1.0])
    assert group_advantages([0.0, 1.0], scale=False) == pytest.approx([-0.5, 0.5])
    assert sum(group_advantages([0.1, 0.5, 0.9, 0.2])) == pytest.approx(0.0, abs=1e-9)


def _inputs(lp, old, adv, w, ref=None):
    t = lambda v: torch.tensor([v], dtype=torch.float32)
    return LossInputs(t(lp).requires_grad_(), t(old), t(adv), t(w), None if ref is None else t(ref))


def test_loss_at_ratio_one_is_minus_weighted_advantage():
    loss, stats = grpo_loss(_inputs([-1.0, -2.0, -3.0], [-1.0, -2.0, -3.0], [2.0, 2.0, 2.0], [0.5, 0.5, 0.0]), epsilon=0.2, epsilon_high=None, beta=0.0)
    assert float(loss.detach()) == pytest.approx(-2.0)
    assert float(stats["tokens"]) == 2 and float(stats["clip_frac"]) == 0


def test_loss_clips_ratio_and_stops_gradient():
    # ratio e^1 > 1.2 with positive advantage: clipped, no gradient through that token
    x = _inputs([0.0], [-1.0], [1.0], [1.0])
    loss, stats = grpo_loss(x, epsilon=0.2, epsilon_high=None, beta=0.0)
    loss.backward()
    assert float(loss) == pytest.approx(-1.2)
    assert float(x.logprobs.grad[0, 0]) == 0.0 and float(stats["clip_frac"]) == 1
    # asymmetric clip: a higher upper bound lets more through
    loss_hi, _ = grpo_loss(_inputs([0.0], [-1.0], [1.0], [1.0]), epsilon=0.2, epsilon_high=0.5, beta=0.0)
    assert float(loss_hi) == pytest.approx(-1.5)
    # negative advantage with a large ratio is not clipped (pessimistic bound)
    loss_neg, _ = grpo_loss(_inputs([0.0], [-1.0], [-1.0], [1.0]), epsilon=0.2, epsilon_high=None, beta=0.0)
    assert float(loss_neg) == pytest.approx(math.e)


def test_kl_term():
    same, st = grpo_loss(_inputs([-1.0], [-1.0], [0.0], [1.0], ref=[-1.0]), epsilon=0.2, epsilon_high=None, beta=0.5)
    assert float(same) == pytest.approx(0.0) and float(st["kl"]) == pytest.approx(0.0)
    diff, st = grpo_loss(_inputs([-1.0], [-1.0], [0.0], [1.0], ref=[-2.0]), epsilon=0.2, epsilon_high=None, beta=0.5)
    assert float(st["kl"]) == pytest.approx(math.exp(-1) + 1 - 1) and float(diff) > 0


def _gen(prompt, completion, lp=-0.5):
    return Generation(prompt_token_ids=prompt, completion_token_ids=completion, logprobs=[lp] * len(completion))


def test_turns_merge_only_when_prompt_extends_token_for_token():
    t = Trajectory(generations=[_gen([1, 2], [3, 4]), _gen([1, 2, 3, 4, 9, 9], [5]), _gen([1, 2, 7], [8])])
    s1, s2 = trajectory_sequences(t, advantage=0.7)
    assert s1.input_ids == [1, 2, 3, 4, 9, 9, 5]
    assert s1.loss_mask == [False, False, True, True, False, False, True]
    assert s1.old_logprobs == [0, 0, -0.5, -0.5, 0, 0, -0.5]
    assert s2.input_ids == [1, 2, 7, 8] and s2.loss_mask == [False, False, False, True]
    assert s1.advantage == s2.advantage == 0.7


def test_mismatched_logprobs_are_refused():
    t = Trajectory(generations=[Generation(prompt_token_ids=[1], completion_token_ids=[2, 3], logprobs=[-1.0])])
    with pytest.raises(ValueError, match="1 logprobs for 2 tokens"):
        trajectory_sequences(t, 1.0)


def test_micro_batches_respect_token_budget():
    seqs = [Sequence(input_ids=[0] * n) for n in (10, 50, 30, 30, 5)]
    mbs = micro_batches(seqs, max_tokens=64)
    for mb in mbs:
        assert len(mb) * max(len(s.input_ids) for s in mb) <= 64 or len(mb) == 1
    assert sorted(len(s.input_ids) for mb in mbs for s in mb) == [5, 10, 30, 30, 50]


@pytest.fixture
def trainer(tiny_model_dir):
    from mcprl import weights

    torch.manual_seed(0)
    return GRPOTrainer(weights.load_model(str(tiny_model_dir)), weights.load_tokenizer(str(tiny_model_dir)), LoraSettings(rank=4, alpha=8))


def _groups(trainer, rewards=((1.0, 0.0, 0.5), (0.0, 0.0, 0.0))):
    """Groups of trajectories sampled from the trainer's own model (so old logprobs are on-policy)."""
    from mcprl.serving.sampler import Row, sample

    tok = trainer.tokenizer
    groups = []
    g = torch.Generator().manual_seed(1)
    for gi, rs in enumerate(rewards):
        prompt = tok.apply_chat_template([{"role": "user", "content": f"task {gi}"}], add_generation_prompt=True, tokenize=True, return_dict=False)
        trajs = []
        out = sample(trainer.model, [Row(prompt, 6 + 3 * i, seed=int(torch.randint(0, 1000, (1,), generator=g))) for i in range(len(rs))], pad_id=tok.pad_token_id, eos_ids={tok.eos_token_id})
        for s, r in zip(out, rs):
            trajs.append(Trajectory(generations=[Generation(prompt_token_ids=prompt, completion_token_ids=s.token_ids, logprobs=s.logprobs)], reward=r))
        groups.append(TrajectoryGroup(trajectories=trajs))
    return groups


def _lora_params(trainer):
    return {n: p.detach().clone() for n, p in trainer.model.named_parameters() if p.requires_grad}


def test_step_updates_lora_and_counts_skipped_groups(trainer):
    groups = _groups(trainer)
    groups.append(TrajectoryGroup(trajectories=groups[0].trajectories, skipped="judge failed"))
    before = _lora_params(trainer)
    m = trainer.step(groups, TrainConfig(learning_rate=1e-3))
    assert m["trained"] == 1 and m["groups"] == 3
    assert m["groups_skipped_zero_variance"] == 1 and m["groups_skipped_judge"] == 1
    assert m["trajectories"] == 3 and m["ratio_mean"] == pytest.approx(1.0, abs=1e-3)
    after = _lora_params(trainer)
    assert any(not torch.equal(before[k], after[k]) for k in before)


def test_nothing_trainable_is_reported_not_silent(trainer):
    m = trainer.step(_groups(trainer, rewards=((1.0, 1.0),)), TrainConfig())
    assert m["trained"] == 0 and m["groups_skipped_zero_variance"] == 1


@pytest.mark.parametrize("norm", ["token", "sequence"])
def test_micro_batching_gives_the_same_gradient(trainer, norm):
    """Gradient accumulation over small micro-batches equals one big batch."""
    groups = _groups(trainer, rewards=((1.0, 0.0, 0.5, 0.2),))
    grads = []
    for budget in (10_000, 64):
        cfg = TrainConfig(micro_batch_tokens=budget, logprob_chunk=16, loss_normalization=norm)
        seqs, _ = trainer.build_sequences(groups, cfg)
        total = sum(s.n_loss_tokens for s in seqs)
        trainer.model.train()
        trainer.model.zero_grad()
        for mb in micro_batches(seqs, budget):
            b = trainer._collate(mb, total, len(seqs), cfg)
            lp, _ = token_logprobs(trainer.model, b["input_ids"], b["attention_mask"], 16)
            loss, _ = grpo_loss(LossInputs(lp, b["old_logprobs"], b["advantages"], b["weights"]), epsilon=0.2, epsilon_high=None, beta=0)
            loss.backward()
        grads.append(torch.cat([p.grad.flatten() for p in trainer.model.parameters() if p.requires_grad]).clone())
    assert len(micro_batches(trainer.build_sequences(groups, TrainConfig())[0], 64)) > 1
    assert torch.allclose(grads[0], grads[1], atol=1e-6, rtol=1e-4)
    assert grads[0].abs().sum() > 0


def test_kl_beta_runs_reference_pass(trainer):
    m = trainer.step(_groups(trainer), TrainConfig(beta=0.1))
    assert "kl" in m and m["kl"] == pytest.approx(0.0, abs=1e-5)  # first step: policy == reference


def test_reward_advantage_reinforces_only_successes(trainer):
    groups = _groups(trainer, rewards=((1.0, 0.0, 0.0), (0.0, 0.0, 0.0)))
    seqs, counts = trainer.build_sequences(groups, TrainConfig(advantage="reward"))
    assert counts["groups_skipped_zero_variance"] == 1 and counts["trajectories"] == 3
    assert sorted(s.advantage for s in seqs) == [0.0, 0.0, 1.0]
    m = trainer.step(groups, TrainConfig(advantage="reward", learning_rate=1e-3))
    assert m["trained"] == 1
