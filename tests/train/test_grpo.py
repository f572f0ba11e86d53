"""GRPO: advantages, the loss, exact-token sequences, and the trainer on a tiny model."""

import math

import pytest
import torch

from mcprl.train import packing
from mcprl.train.config import LoraSettings, TrainConfig
from mcprl.train.grpo import GRPOTrainer
from mcprl.train.logprobs import token_logprobs
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
    def t(v):
        return torch.tensor([v], dtype=torch.float32)

    return LossInputs(t(lp).requires_grad_(), t(old), t(adv), t(w), None if ref is None else t(ref))


def test_loss_at_ratio_one_is_minus_weighted_advantage():
    loss, stats = grpo_loss(
        _inputs([-1.0, -2.0, -3.0], [-1.0, -2.0, -3.0], [2.0, 2.0, 2.0], [0.5, 0.5, 0.0]),
        epsilon=0.2,
        epsilon_high=None,
        beta=0.0,
    )
    assert float(loss.detach()) == pytest.approx(-2.0)
    assert float(stats["tokens"]) == 2 and float(stats["clip_frac"]) == 0


def test_loss_clips_ratio_and_stops_gradient():
    # ratio e^1 > 1.2 with positive advantage: clipped, no gradient through that token
    x = _inputs([0.0], [-1.0], [1.0], [1.0])
    loss, stats = grpo_loss(x, epsilon=0.2, epsilon_high=None, beta=0.0)
    loss.backward()
    assert float(loss.detach()) == pytest.approx(-1.2)
    assert float(x.logprobs.grad[0, 0]) == 0.0 and float(stats["clip_frac"]) == 1
    # asymmetric clip: a higher upper bound lets more through
    loss_hi, _ = grpo_loss(_inputs([0.0], [-1.0], [1.0], [1.0]), epsilon=0.2, epsilon_high=0.5, beta=0.0)
    assert float(loss_hi.detach()) == pytest.approx(-1.5)
    # negative advantage with a large ratio is not clipped (pessimistic bound), nor counted as clipped
    loss_neg, st = grpo_loss(_inputs([0.0], [-1.0], [-1.0], [1.0]), epsilon=0.2, epsilon_high=None, beta=0.0)
    assert float(loss_neg.detach()) == pytest.approx(math.e) and float(st["clip_frac"]) == 0


def test_clip_frac_counts_only_tokens_the_clip_takes_the_gradient_from():
    # ratios e^-1 (below 0.8) and e^1 (above 1.2), each with either sign of advantage: the clip is
    # active for (low, negative) and (high, positive) only
    x = _inputs([-1.0, -1.0, 0.0, 0.0], [0.0, 0.0, -1.0, -1.0], [-1.0, 1.0, -1.0, 1.0], [1.0, 1.0, 1.0, 1.0])
    loss, st = grpo_loss(x, epsilon=0.2, epsilon_high=None, beta=0.0)
    loss.backward()
    assert float(st["clip_frac"]) == 2
    assert [g == 0 for g in x.logprobs.grad[0].tolist()] == [True, False, False, True]


def test_kl_term():
    same, st = grpo_loss(_inputs([-1.0], [-1.0], [0.0], [1.0], ref=[-1.0]), epsilon=0.2, epsilon_high=None, beta=0.5)
    assert float(same.detach()) == pytest.approx(0.0) and float(st["kl"]) == pytest.approx(0.0)
    diff, st = grpo_loss(_inputs([-1.0], [-1.0], [0.0], [1.0], ref=[-2.0]), epsilon=0.2, epsilon_high=None, beta=0.5)
    assert float(st["kl"]) == pytest.approx(math.exp(-1) + 1 - 1) and float(diff.detach()) > 0


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


def test_sampling_settings_reach_the_sequence_and_split_it():
    t = Trajectory(
        generations=[
            Generation(prompt_token_ids=[1], completion_token_ids=[2], logprobs=[-1.0], temperature=0.7, top_p=0.9),
            Generation(
                prompt_token_ids=[1, 2, 3], completion_token_ids=[4], logprobs=[-1.0], temperature=0.7, top_p=0.9
            ),
            Generation(prompt_token_ids=[1, 2, 3, 4, 5], completion_token_ids=[6], logprobs=[-1.0], temperature=1.0),
            Generation(prompt_token_ids=[7], completion_token_ids=[8], logprobs=[-1.0], temperature=0.0, top_p=0.5),
        ]
    )
    s1, s2, s3 = trajectory_sequences(t, 1.0)
    assert (s1.input_ids, s1.temperature, s1.top_p) == ([1, 2, 3, 4], 0.7, 0.9)
    assert (s2.input_ids, s2.temperature, s2.top_p) == ([1, 2, 3, 4, 5, 6], 1.0, 1.0)  # same tokens, other settings
    assert (s3.temperature, s3.top_p) == (1.0, 1.0)  # greedy: scored at temperature 1, as recorded
    batch = packing.collate([packing.PrefixBranches([], [s1])], pad_id=0, total_tokens=2, n_trajectories=1)
    assert batch["temperature"].tolist() == [pytest.approx([0.7] * 4)] and batch["top_p"].tolist() == [
        pytest.approx([0.9] * 4)
    ]


def test_a_generation_without_prompt_tokens_cannot_exist():
    from pydantic import ValidationError

    with pytest.raises(ValidationError, match="prompt_token_ids"):
        Generation(prompt_token_ids=[], completion_token_ids=[2], logprobs=[-1.0])
    old = Generation.model_validate_json('{"prompt_token_ids": [1], "completion_token_ids": [2], "logprobs": [-1.0]}')
    assert (old.temperature, old.top_p) == (1.0, 1.0)  # saved before the fields: recorded at temperature 1


def test_mismatched_logprobs_are_refused():
    t = Trajectory(generations=[Generation(prompt_token_ids=[1], completion_token_ids=[2, 3], logprobs=[-1.0])])
    with pytest.raises(ValueError, match="1 logprobs for 2 tokens"):
        trajectory_sequences(t, 1.0)


def _seq(ids, n_prompt, adv=1.0):
    return Sequence(
        input_ids=ids,
        loss_mask=[i >= n_prompt for i in range(len(ids))],
        old_logprobs=[-0.5 if i >= n_prompt else 0.0 for i in range(len(ids))],
        advantage=adv,
    )


def test_shared_prefix_stops_at_the_first_loss_token():
    a, b = _seq([1, 2, 3, 4, 5], 3), _seq([1, 2, 3, 4, 6, 7], 3)
    assert packing.shared_prefix([a, b]) == 3  # 4 is common, but it carries loss
    assert packing.shared_prefix([a, _seq([1, 2, 9, 4], 3)]) == 2
    assert packing.shared_prefix([a]) == 0


def test_rows_and_micro_batches_respect_token_budget():
    groups = [[_seq([7] * 8 + [1] * n, 8) for n in (10, 40, 20)], [_seq([5] * n, n - 2) for n in (50, 5)]]
    rows = packing.pack_rows(groups, max_tokens=40)
    assert sorted(id(s) for r in rows for s in r.branches) == sorted(id(s) for g in groups for s in g)  # each once
    assert [len(r.prefix) for r in rows] == [0, 0, 8, 0] and [len(r) for r in rows] == [5, 50, 38, 48]
    for r in rows:
        assert len(r) <= 40 or len(r.branches) == 1
        p = len(r.prefix)
        assert all(s.input_ids[:p] == r.prefix and not any(s.loss_mask[:p]) for s in r.branches)
    mbs = packing.micro_batches(rows, max_tokens=64)
    for mb in mbs:
        assert len(mb) * max(len(r) for r in mb) <= 64 or len(mb) == 1
    assert sorted(len(r) for mb in mbs for r in mb) == sorted(len(r) for r in rows)


def test_groups_behind_one_system_prompt_share_it_in_a_row():
    """A step's groups share what their prompts begin with (system prompt, tools), not only a group's
    rollouts their whole prompt; sequences that begin differently do not share a row."""
    system = [3] * 20
    a = [_seq(system + [1, 2] + [9] * 5, 22), _seq(system + [1, 2] + [8] * 5, 22)]  # a group: one task
    b = [_seq(system + [4] + [7] * 5, 21)]  # another task
    rows = packing.pack_rows([a, b], max_tokens=100)
    assert len(rows) == 1 and rows[0].prefix == system and len(rows[0]) == 20 + 7 + 7 + 6
    assert [len(r) for r in packing.pack_rows([a, [_seq([6] * 10, 8)]], 100)] == [32, 10]


def test_packed_mask_isolates_branches():
    a, b = _seq([1, 2, 3, 4], 2), _seq([1, 2, 5], 2)
    batch = packing.collate([packing.PrefixBranches([1, 2], [a, b])], pad_id=0, total_tokens=3, n_trajectories=2)
    assert batch["input_ids"].tolist() == [[1, 2, 3, 4, 5]]
    assert batch["position_ids"].tolist() == [[0, 1, 2, 3, 2]]
    assert batch["pred_index"].tolist() == [[0, 0, 1, 2, 1]]
    m = batch["attention_mask"][0, 0].int().tolist()
    assert m == [[1, 0, 0, 0, 0], [1, 1, 0, 0, 0], [1, 1, 1, 0, 0], [1, 1, 1, 1, 0], [1, 1, 0, 0, 1]]
    # the spans say what the mask says: each query sees its row's first `shared` keys and its own span causally
    assert batch["attention_spans"].tolist() == [[0, 0, 0, 2], [0, 2, 2, 4], [0, 2, 4, 5]]
    assert batch["weights"].tolist() == [pytest.approx([0, 0, 1 / 3, 1 / 3, 1 / 3])]
    # unshared rows (share=False) are plain padded sequences
    rows = packing.pack_rows([[a, b]], 100, share=False)
    plain = packing.collate(rows, pad_id=0, total_tokens=3, n_trajectories=2)
    assert plain["attention_mask"].tolist() == [[1, 1, 1, 1], [1, 1, 1, 0]]
    assert plain["pred_index"].tolist() == [[0, 0, 1, 2], [0, 0, 1, 0]]
    assert plain["attention_spans"].tolist() == [[0, 0, 0, 4], [1, 0, 0, 3]]  # padding in no span


@pytest.fixture
def trainer(tiny_model_dir):
    from mcprl.model import weights

    torch.manual_seed(0)
    # float32: these tests compare numbers exactly; bfloat16 (the default on CPUs with native support) runs in
    # test_bf16_step
    return GRPOTrainer(
        weights.load_model(str(tiny_model_dir), dtype="float32"),
        weights.load_tokenizer(str(tiny_model_dir)),
        LoraSettings(rank=4, alpha=8),
    )


def _groups(trainer, rewards=((1.0, 0.0, 0.5), (0.0, 0.0, 0.0))):
    """Groups of trajectories sampled from the trainer's own model (so old logprobs are on-policy)."""
    from mcprl.serving.sampler import SampleRequest, sample

    tok = trainer.tokenizer
    groups = []
    g = torch.Generator().manual_seed(1)
    for gi, rs in enumerate(rewards):
        prompt = tok.apply_chat_template(
            [{"role": "user", "content": f"task {gi}"}], add_generation_prompt=True, tokenize=True, return_dict=False
        )
        trajs = []
        out = sample(
            trainer.model,
            [
                SampleRequest(prompt, 6 + 3 * i, seed=int(torch.randint(0, 1000, (1,), generator=g)))
                for i in range(len(rs))
            ],
            pad_id=tok.pad_token_id,
            eos_ids={tok.eos_token_id},
        )
        for s, r in zip(out, rs):
            trajs.append(
                Trajectory(
                    generations=[
                        Generation(prompt_token_ids=prompt, completion_token_ids=s.token_ids, logprobs=s.logprobs)
                    ],
                    reward=r,
                )
            )
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


def test_auto_checkpointing_recomputes_activations_only_where_they_would_crowd_the_free_memory(
    trainer, tiny_model_dir, monkeypatch
):
    """ "auto" keeps a micro-batch's activations where they take at most a quarter of the memory free at the first
    step, and checkpoints where they would take more; on and off are as set."""
    from mcprl.model import memory, weights
    from mcprl.train.grpo import ACTIVATION_BYTES

    c = trainer.model.get_base_model().config
    kept = ACTIVATION_BYTES * 256 * c.num_hidden_layers * (c.hidden_size + c.intermediate_size)
    auto = TrainConfig(learning_rate=1e-3, micro_batch_tokens=256)
    monkeypatch.setattr(memory, "free_bytes", lambda device: 4 * kept)
    assert trainer.step(_groups(trainer), auto)["trained"] == 1 and not trainer.model.is_gradient_checkpointing
    monkeypatch.setattr(memory, "free_bytes", lambda device: 4 * kept - 1)
    assert not trainer.checkpointing(auto)  # chosen once, at the first step
    assert trainer.checkpointing(auto.model_copy(update={"gradient_checkpointing": True}))
    tight = GRPOTrainer(
        weights.load_model(str(tiny_model_dir), dtype="float32"),
        weights.load_tokenizer(str(tiny_model_dir)),
        LoraSettings(rank=4, alpha=8),
    )
    assert tight.step(_groups(tight), auto)["trained"] == 1 and tight.model.is_gradient_checkpointing
    assert not tight.checkpointing(auto.model_copy(update={"gradient_checkpointing": False}))


def test_nothing_trainable_is_reported_not_silent(trainer):
    m = trainer.step(_groups(trainer, rewards=((1.0, 1.0),)), TrainConfig())
    assert m["trained"] == 0 and m["groups_skipped_zero_variance"] == 1


def _grads(trainer):
    return torch.cat([p.grad.flatten() for p in trainer.model.parameters() if p.requires_grad]).clone()


@pytest.mark.parametrize("norm", ["token", "sequence"])
def test_packing_and_micro_batching_give_the_gradient_of_separate_sequences(trainer, norm):
    """A group's shared prompt computed once, split over micro-batches or not, its attention computed
    through the mask or span by span, gives exactly the gradient of every sequence run on its own."""
    groups = _groups(trainer, rewards=((1.0, 0.0, 0.5, 0.2), (0.3, 0.9)))
    cfg = TrainConfig(logprob_chunk=16, loss_normalization=norm)
    groups_seqs, _ = trainer.build_sequences(groups, cfg)
    seqs = [s for g in groups_seqs for s in g]
    total = sum(s.n_loss_tokens for s in seqs)
    trainer.model.train()

    trainer.model.zero_grad()
    for s in seqs:  # the reference: one unpacked sequence at a time
        b = packing.collate([packing.PrefixBranches([], [s])], trainer.pad_id, total, len(seqs), norm)
        ids = b["input_ids"]
        lp, _ = token_logprobs(trainer.model, ids, torch.ones_like(ids), 16)
        loss, _ = grpo_loss(
            LossInputs(lp, b["old_logprobs"], b["advantages"], b["weights"]), epsilon=0.2, epsilon_high=None, beta=0
        )
        loss.backward()
    reference = _grads(trainer)
    assert reference.abs().sum() > 0

    for budget, spans in ((10_000, False), (10_000, True), (40, True)):
        rows = packing.pack_rows(groups_seqs, budget)
        shared = [r for r in rows if len(r.branches) > 1]  # (a row of one sequence has nothing to share)
        assert all(len(r.prefix) > 5 for r in shared) and (shared or budget == 40)  # the template's prompt is shared
        mbs = packing.micro_batches(rows, budget)
        assert (len(mbs) > 2) == (budget == 40)
        trainer.model.zero_grad()
        for mb in mbs:
            b = trainer._collate(mb, total, len(seqs), cfg)
            lp, _ = token_logprobs(
                trainer.model,
                b["input_ids"],
                b["attention_mask"],
                16,
                b["weights"] > 0,
                b["position_ids"],
                b["pred_index"],
                attention_spans=b["attention_spans"] if spans else None,  # attention span by span, or by the mask
            )
            loss, _ = grpo_loss(
                LossInputs(lp, b["old_logprobs"], b["advantages"], b["weights"]), epsilon=0.2, epsilon_high=None, beta=0
            )
            loss.backward()
        assert torch.allclose(_grads(trainer), reference, atol=1e-6, rtol=1e-4)


@pytest.mark.anyio
async def test_on_policy_ratio_is_one_at_the_sampling_temperature_and_top_p(trainer, tiny_model_dir):
    """The real path: the endpoint samples at each request's temperature and top-p and records the
    sampled tokens' logprobs, the rollout keeps those settings on each Generation, and the trainer
    recomputes the logprobs in one packed row (rows with different settings side by side). In
    float32 each token's ratio is 1 to within 1e-5 in log space: the two passes differ only in
    summation order (KV-cached decoding vs one pass over the sequence), a few float32 ulps of an
    O(10) logsumexp, ~1e-6; a wrong temperature or top-p is off by orders of magnitude more."""
    from mcprl.model import weights
    from mcprl.model.trainable import Model
    from mcprl.rollout.config import RolloutConfig
    from mcprl.rollout.loop import rollout
    from mcprl.serving.engine import Engine
    from mcprl.serving.local import LocalEndpoint
    from mcprl.types import Scenario

    settings = [(1.0, 1.0), (0.7, 1.0), (0.7, 0.8), (1.3, 0.95), (0.0, 1.0)]
    server = LocalEndpoint(
        Engine(str(tiny_model_dir), model=weights.load_model(str(tiny_model_dir), dtype="float32"), served_name="tiny")
    )
    try:
        model = Model(name="tiny", inference_base_url=server.base_url)
        trajs = [
            await rollout(
                model, Scenario(task="Say something."), None, RolloutConfig(temperature=t, top_p=p, max_tokens=16)
            )
            for t, p in settings
            for _ in range(2)
        ]
    finally:
        server.close()
    for i, (traj, (t, p)) in enumerate(zip(trajs, [x for x in settings for _ in range(2)])):
        assert traj.error is None and [(g.temperature, g.top_p) for g in traj.generations] == [(t, p)]
        traj.reward = float(i)  # any rewards that vary
    groups_seqs, _ = trainer.build_sequences([TrajectoryGroup(trajectories=trajs)], TrainConfig())
    seqs = [s for g in groups_seqs for s in g]
    rows = packing.pack_rows(groups_seqs, 10_000)
    assert len(rows) == 1 and len(rows[0].branches) == len(trajs)
    b = trainer._collate(rows, 1, len(seqs), TrainConfig())
    on = b["weights"] > 0
    inputs = (trainer.model, b["input_ids"], b["attention_mask"], 16, on, b["position_ids"], b["pred_index"])
    with torch.no_grad():
        lp, _ = token_logprobs(*inputs, temperature=b["temperature"], top_p=b["top_p"])
        at_one, _ = token_logprobs(*inputs)
    log_ratio = (lp - b["old_logprobs"])[on]
    assert log_ratio.abs().max() < 1e-5, log_ratio.abs().max()
    sampled_hot = on & ((b["temperature"] != 1) | (b["top_p"] < 1))
    assert (at_one - b["old_logprobs"])[sampled_hot].abs().max() > 1e-3  # scoring at T=1 would not do
    m = trainer.step([TrajectoryGroup(trajectories=trajs)], TrainConfig(learning_rate=1e-12))
    assert m["ratio_mean"] == pytest.approx(1.0, abs=1e-5) and m["clip_frac"] == 0


def test_bf16_step(tiny_model_dir):
    """The default on CPUs with native bfloat16: frozen base in bfloat16, LoRA weights in float32."""
    from mcprl.model import weights

    torch.manual_seed(0)
    trainer = GRPOTrainer(
        weights.load_model(str(tiny_model_dir), dtype="bfloat16"),
        weights.load_tokenizer(str(tiny_model_dir)),
        LoraSettings(rank=4, alpha=8),
    )
    assert {p.dtype for p in trainer.model.parameters() if p.requires_grad} == {torch.float32}
    before = _lora_params(trainer)
    m = trainer.step(_groups(trainer), TrainConfig(learning_rate=1e-3))
    assert m["trained"] == 1 and m["ratio_mean"] == pytest.approx(1.0, abs=0.05)
    assert any(not torch.equal(before[k], v) for k, v in _lora_params(trainer).items())


def test_kl_beta_runs_reference_pass(trainer):
    """The KL is to the base model (adapter off): after a step has moved the adapter it is positive,
    and equal to the k3 estimate computed here; a skipped or adapter-on reference pass gives 0."""
    groups = _groups(trainer)
    trainer.step(groups, TrainConfig(learning_rate=5e-2))
    groups_seqs, _ = trainer.build_sequences(groups, TrainConfig())
    seqs = [s for g in groups_seqs for s in g]
    b = packing.collate([packing.PrefixBranches([], [s]) for s in seqs], trainer.pad_id, 1, len(seqs))
    on = b["weights"] > 0
    args = (trainer.model, b["input_ids"], b["attention_mask"], 16, on)
    with torch.no_grad():
        lp, _ = token_logprobs(*args)
        with trainer.model.disable_adapter():
            ref, _ = token_logprobs(*args)
    d = (ref - lp)[on]
    expected = float((d.exp() - d - 1).mean())
    assert expected > 1e-6
    m = trainer.step(groups, TrainConfig(beta=0.1, learning_rate=1e-12))
    assert m["kl"] == pytest.approx(expected, rel=1e-3)


def test_reward_advantage_reinforces_only_successes(trainer):
    # 0/1 rewards, and RULER-like scores where only one attempt is (near) perfect
    groups = _groups(trainer, rewards=((1.0, 0.0, 0.0), (0.0, 0.0, 0.0), (0.3, 0.6, 1.0)))
    groups_seqs, counts = trainer.build_sequences(groups, TrainConfig(loss="rft"))
    assert counts["groups_skipped_no_success"] == 1 and counts["groups_skipped_zero_variance"] == 0
    assert counts["trajectories"] == 2 and counts["groups_trained"] == 2
    trained = [s.input_ids for g in groups_seqs for s in g]
    successes = [groups[0].trajectories[0], groups[2].trajectories[2]]
    assert trained == [t.generations[0].prompt_token_ids + t.generations[0].completion_token_ids for t in successes]
    assert all(s.advantage == 1.0 for g in groups_seqs for s in g)
    m = trainer.step(groups, TrainConfig(loss="rft", learning_rate=1e-3))
    assert m["trained"] == 1 and m["loss_tokens"] == sum(len(t.generations[0].completion_token_ids) for t in successes)


TRUNCATIONS = [
    (0.3, 1.0, 0, 0.5),
    (0.7, 1.0, 20, 0.0),
    (0.5, 0.9, 40, 0.3),
    (1.0, 1.0, 3, 0.0),
]  # temperature, top_p, top_k, min_p


@pytest.mark.anyio
async def test_top_k_and_min_p_are_recorded_and_scored_as_sampled(trainer, tiny_model_dir):
    """An agent's requests with top_k and min_p (vLLM's extensions, alone, together, with top-p):
    the endpoint samples under them, the recording client keeps them on each Generation, and the
    trainer's logprobs equal the recorded ones (ratio 1, logprob mismatch ~0); scoring without the
    truncations would be far off. A turn under a response_format is recorded as constrained. Penalties, which nobody
    reproduces, are a 400 on our endpoint and from the recording client (before any endpoint, vLLM included, sees the
    request)."""
    import anyio
    import httpx
    import openai

    from mcprl.model import weights
    from mcprl.model.trainable import Model
    from mcprl.rollout.recording import Recorder
    from mcprl.serving.engine import Engine
    from mcprl.serving.local import LocalEndpoint
    from mcprl.types import Scenario

    async def agent(rec, refused):
        client = rec.openai_client()
        for t, p, k, m in TRUNCATIONS:
            await client.chat.completions.create(
                model=rec.model_name,
                messages=[{"role": "user", "content": f"Say {k}."}],
                max_tokens=6,
                temperature=t,
                top_p=p,
                extra_body={"top_k": k, "min_p": m},
            )
        await client.chat.completions.create(
            model=rec.model_name,
            messages=[{"role": "user", "content": "JSON."}],
            max_tokens=4,
            response_format={"type": "json_object"},
        )
        try:
            await client.chat.completions.create(
                model=rec.model_name, messages=[{"role": "user", "content": "Hi."}], max_tokens=4, presence_penalty=0.5
            )
        except openai.BadRequestError as e:
            refused.append(str(e))

    server = LocalEndpoint(
        Engine(str(tiny_model_dir), model=weights.load_model(str(tiny_model_dir), dtype="float32"), served_name="tiny")
    )
    refused: list[str] = []
    try:
        model = Model(name="tiny", inference_base_url=server.base_url)
        trajs = [None, None]

        async def run(i):
            trajs[i] = await Recorder(model, Scenario(task="t")).run(agent, refused)

        async with anyio.create_task_group() as tg:  # side by side: the engine samples both in one batch
            for i in range(2):
                tg.start_soon(run, i)
        direct = httpx.post(
            f"{server.base_url}/chat/completions",
            json={"model": "tiny", "messages": [{"role": "user", "content": "Hi."}], "repetition_penalty": 1.2},
        )
    finally:
        server.close()
    assert direct.status_code == 400 and "leave repetition_penalty at 1" in direct.text
    assert len(refused) == 2 and all("leave presence_penalty at 0" in r for r in refused)
    for i, traj in enumerate(trajs):
        assert (
            traj.error is None
            and [(g.temperature, g.top_p, g.top_k, g.min_p) for g in traj.generations[:-1]] == TRUNCATIONS
        )
        assert [g.constrained for g in traj.generations] == [False] * len(TRUNCATIONS) + [True]  # under a grammar
        traj.reward = float(i)
    groups = [TrajectoryGroup(trajectories=trajs)]
    groups_seqs, counts = trainer.build_sequences(groups, TrainConfig())
    assert counts["trajectories_trained"] == 2
    rows = packing.pack_rows(groups_seqs, 10_000)
    b = trainer._collate(rows, 1, 2, TrainConfig())
    on = b["weights"] > 0
    inputs = (trainer.model, b["input_ids"], b["attention_mask"], 16, on, b["position_ids"], b["pred_index"])
    with torch.no_grad():
        lp, _ = token_logprobs(
            *inputs, temperature=b["temperature"], top_p=b["top_p"], top_k=b["top_k"], min_p=b["min_p"]
        )
        untruncated, _ = token_logprobs(*inputs, temperature=b["temperature"], top_p=b["top_p"])
    assert (lp - b["old_logprobs"])[on].abs().max() < 1e-5
    assert (untruncated - b["old_logprobs"])[on].abs().max() > 1e-2
    m = trainer.step(groups, TrainConfig(learning_rate=1e-12))
    assert m["ratio_mean"] == pytest.approx(1.0, abs=1e-5) and m["logprob_mismatch"] < 1e-5


def test_logprob_mismatch_is_reported_before_the_update(trainer):
    """The step reports mean and max |trainer - sampler logprob| over the completion tokens: ~0 on
    policy, and exactly the offset when the recorded logprobs are off by one."""
    groups = _groups(trainer)
    m = trainer.step(groups, TrainConfig(learning_rate=1e-12))
    assert m["logprob_mismatch"] < 1e-5 and m["logprob_mismatch_max"] < 1e-5
    for g in groups:
        for t in g.trajectories:
            t.generations[0].logprobs = [x - 1.0 for x in t.generations[0].logprobs]
    m = trainer.step(groups, TrainConfig(learning_rate=1e-12))
    assert m["logprob_mismatch"] == pytest.approx(1.0, abs=1e-4) and m["logprob_mismatch_max"] == pytest.approx(
        1.0, abs=1e-4
    )


def _split(traj: Trajectory) -> Trajectory:
    """The same sampled tokens as `traj`'s one turn, recorded as two turns whose second prompt does
    not extend the first (re-tokenisation): two training sequences instead of one."""
    (g,) = traj.generations
    half = len(g.completion_token_ids) // 2
    first = g.model_copy(update={"completion_token_ids": g.completion_token_ids[:half], "logprobs": g.logprobs[:half]})
    # a re-tokenised prompt: the same text, but the first token differs, so the two do not merge
    second = g.model_copy(
        update={
            "prompt_token_ids": [g.prompt_token_ids[0] + 1, *g.prompt_token_ids[1:], *g.completion_token_ids[:half]],
            "completion_token_ids": g.completion_token_ids[half:],
            "logprobs": g.logprobs[half:],
        }
    )
    return traj.model_copy(update={"generations": [first, second]})


def test_a_written_reference_is_no_part_of_the_rollouts_baseline(trainer):
    """A group none of whose rollouts solved its task, with the reference chain the run wrote added
    (`unsolved = "reference"`): the rollouts are ranked against each other alone, so the one shaping
    credited most (the call that found the answer) is reinforced, not pushed down below the
    reference with the rest; the reference keeps its advantage in the whole group. Where the
    rollouts' rewards are all equal they are left out, and the reference alone trains."""
    cfg = TrainConfig()
    ranked, flat = _groups(trainer, rewards=((0.1, 0.06, 0.0, 1.0), (0.0, 0.0, 0.0, 1.0)))
    for g in (ranked, flat):
        g.trajectories[-1] = g.trajectories[-1].model_copy(update={"written_from": 0})
    (ranked_seqs, flat_seqs), counts = trainer.build_sequences([ranked, flat], cfg)
    rollouts = [s.advantage for s in ranked_seqs[:3]]
    assert rollouts == pytest.approx(group_advantages([0.1, 0.06, 0.0]))
    assert rollouts[0] > 0 and sum(rollouts) == pytest.approx(0.0, abs=1e-9)
    assert ranked_seqs[3].advantage == pytest.approx(group_advantages([0.1, 0.06, 0.0, 1.0])[3])
    assert [s.advantage for s in flat_seqs] == pytest.approx([group_advantages([0.0, 0.0, 0.0, 1.0])[3]])
    assert counts["trajectories"] == 5 and counts["groups_trained"] == 2
    # with no written trajectory, the same rewards are one group's, as GRPO has them
    plain = ranked.model_copy(update={"trajectories": [*ranked.trajectories[:3], _groups(trainer)[0].trajectories[0]]})
    (plain_seqs,), _ = trainer.build_sequences([plain], cfg)
    assert [s.advantage for s in plain_seqs] == pytest.approx(group_advantages([0.1, 0.06, 0.0, 1.0]))


def test_sequence_normalisation_weighs_every_trajectory_alike(trainer):
    """With "sequence" normalisation a trajectory's tokens weigh 1 / (its loss tokens x trajectories),
    however many sequences it was split into: split in two, it gets the same total weight (1/3 of 3)."""
    (group,) = _groups(trainer, rewards=((1.0, 0.0, 0.5),))
    split = group.model_copy(update={"trajectories": [_split(group.trajectories[0]), *group.trajectories[1:]]})
    cfg = TrainConfig(loss_normalization="sequence")
    for g, n_seqs in ((group, 3), (split, 4)):
        groups_seqs, counts = trainer.build_sequences([g], cfg)
        assert len(groups_seqs[0]) == n_seqs and counts["trajectories_trained"] == 3
        total = sum(s.n_loss_tokens for s in groups_seqs[0])
        b = packing.collate(packing.pack_rows(groups_seqs, 10_000, share=False), trainer.pad_id, total, 3, "sequence")
        first = b["weights"][: n_seqs - 2].sum()  # the first trajectory's rows (one, or its two halves)
        assert float(first) == pytest.approx(1 / 3) and float(b["weights"].sum()) == pytest.approx(1.0)


def test_constrained_turns_are_scored_by_the_trainer_where_the_sampler_masked_them(trainer):
    """Where the server records grammar-masked logprobs (vLLM), the step computes the old-policy
    logprobs of constrained turns itself, before the update: with masked (here: wrong) recorded
    logprobs, the update is exactly the one from the policy's own, and the mismatch metric leaves
    those turns out. Without rescoring, the same groups give another update."""
    import copy

    groups = _groups(trainer)
    masked = copy.deepcopy(groups)
    for g in masked:
        for t in g.trajectories:
            gen = t.generations[0]
            t.generations[0] = gen.model_copy(
                update={"constrained": True, "logprobs": [0.0] * len(gen.logprobs)}
            )  # a forced token: log 1
    start = copy.deepcopy(trainer.model.state_dict())
    cfg = TrainConfig(learning_rate=1e-2)

    def update(gs, **kw):
        trainer.model.load_state_dict(start)
        trainer.optimizer = None
        m = trainer.step(gs, cfg, **kw)
        return m, _lora_params(trainer)

    m_true, true = update(groups)
    m_rescored, rescored = update(masked, rescore_constrained=True)
    _, unrescored = update(masked)
    assert m_rescored["rescored_tokens"] == m_true["loss_tokens"] and "logprob_mismatch" not in m_rescored
    assert m_rescored["ratio_mean"] == 1.0 and m_true["ratio_mean"] == pytest.approx(1.0, abs=1e-5)
    assert all(torch.allclose(true[k], rescored[k], atol=1e-6) for k in true)
    assert any(not torch.allclose(true[k], unrescored[k], atol=1e-6) for k in true)


def test_a_users_loss_by_import_path_is_what_the_step_optimises(trainer):
    from tests import user_losses

    user_losses.CALLS.clear()
    groups = _groups(trainer)
    before = _lora_params(trainer)
    m = trainer.step(groups, TrainConfig(loss="tests.user_losses:reinforce", learning_rate=1e-3))
    assert user_losses.CALLS, "the user's loss was never called"
    assert m["loss"] == pytest.approx(sum(user_losses.CALLS), abs=1e-6)
    # not the clipped surrogate's value (at ratio 1: minus the weighted advantages, 0 for a group's)
    assert abs(m["loss"]) > 1e-4
    assert m["loss/logprob"] < 0 and m["groups_skipped_zero_variance"] == 1 and m["trajectories"] == 3
    after = _lora_params(trainer)
    assert any(not torch.equal(before[k], after[k]) for k in before)


def test_the_step_names_its_loss_over_the_configs(trainer):
    groups = _groups(trainer, rewards=((1.0, 0.0, 0.0), (0.0, 0.0, 0.0)))
    m = trainer.step(groups, TrainConfig(learning_rate=1e-12), loss="rft")
    assert m["groups_skipped_no_success"] == 1 and m["trajectories"] == 1


@pytest.mark.parametrize(
    ("spec", "problem"),
    [
        ("ppo", "is not a known loss; give one of grpo, rft, or module:function"),
        ("tests.no_such_module:f", "no module named tests.no_such_module"),
        ("tests.user_losses:missing", "has no 'missing'"),
        ("tests.user_losses:NOT_A_FUNCTION", "not a function"),
        ("tests.user_losses:TrainConfig", "does not take \\(x, config\\)"),
    ],
)
def test_a_bad_loss_is_one_line_naming_the_known_ones(spec, problem):
    from mcprl.errors import UserError
    from mcprl.train.loss import LOSSES, objective

    assert set(LOSSES) == {"grpo", "rft"}
    with pytest.raises(UserError, match=problem) as e:
        objective(spec)
    assert "\n" not in str(e.value)
