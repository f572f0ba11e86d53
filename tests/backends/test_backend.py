"""TrainableModel + LocalBackend on the CPU runtime: register, serve, train, hot-swap, resume."""

import pytest
import torch

from mcprl import LocalBackend, TrainableModel, TrainConfig
from mcprl.errors import UserError
from mcprl.train import checkpoints
from mcprl.types import Generation, Trajectory, TrajectoryGroup


async def _group(model, n=4):
    msgs = [{"role": "user", "content": "say something"}]
    async with model.openai_client() as client:
        r = await client.chat.completions.create(
            model=model.get_inference_name(),
            messages=msgs,
            n=n,
            max_tokens=8,
            seed=0,
            extra_body={"return_token_ids": True, "logprobs": True},
        )
    trajs = []
    for i, c in enumerate(r.choices):
        g = Generation(
            prompt_token_ids=r.model_extra["prompt_token_ids"],
            completion_token_ids=c.model_extra["token_ids"],
            logprobs=[x.logprob for x in c.logprobs.content],
            model=r.model,
        )
        trajs.append(
            Trajectory(messages=[*msgs, c.message.model_dump(exclude_none=True)], generations=[g], reward=float(i))
        )
    return TrajectoryGroup(trajectories=trajs)


@pytest.mark.anyio
async def test_register_train_hot_swap_and_resume(home, tiny_model_dir):
    model = TrainableModel(name="agent", project="p", base_model=str(tiny_model_dir))
    async with LocalBackend(device="cpu") as backend:
        await model.register(backend)
        assert model.get_step() == 0 and model.get_inference_name() == "agent@0"
        assert checkpoints.list_steps(model.checkpoints_dir) == [0]
        import httpx

        def served() -> list[str]:
            headers = {"Authorization": f"Bearer {model.inference_api_key}"}
            return [m["id"] for m in httpx.get(f"{model.inference_base_url}/models", headers=headers).json()["data"]]

        assert served() == [str(tiny_model_dir), "agent@0"]
        m1 = await model.train([await _group(model)], TrainConfig(learning_rate=1e-2))
        assert m1["trained"] == 1
        assert model.get_step() == 1 and served() == [str(tiny_model_dir), "agent@1"]
        m2 = await model.train([await _group(model)], TrainConfig(learning_rate=1e-2))
        assert model.get_step() == 2 and m2["trained"] == 1
        # serving and training share one copy of the frozen base weights; only LoRA weights differ
        rt = backend.runtimes["p/agent"]
        served_w = rt.endpoint.engine.model.get_base_model().model.layers[0].mlp.down_proj.base_layer.weight
        trained_w = rt.trainer.model.get_base_model().model.layers[0].mlp.down_proj.base_layer.weight
        assert served_w is trained_w and not served_w.requires_grad
        state = checkpoints.read_state(model.checkpoints_dir / "0002")
        assert state["name"] == "agent" and state["metrics"]["trained"] == 1
        assert (model.checkpoints_dir / "0002" / "optimizer.pt").exists()
        opt_state = torch.load(model.checkpoints_dir / "0002" / "optimizer.pt", weights_only=True)

    # a new process (here: a new backend) resumes from the latest checkpoint, optimizer included
    again = TrainableModel(name="agent", project="p", base_model=str(tiny_model_dir))
    async with LocalBackend(device="cpu") as backend:
        await again.register(backend)
        assert again.get_step() == 2 and again.get_inference_name() == "agent@2"
        rt = backend.runtimes["p/agent"]
        resumed = rt.trainer.optimizer.state_dict()
        k = next(iter(opt_state["state"]))
        assert torch.equal(resumed["state"][k]["exp_avg"], opt_state["state"][k]["exp_avg"])
        assert again.delete_checkpoints(keep=1) == [0, 1]
        assert checkpoints.list_steps(again.checkpoints_dir) == [2]
        child = again.fork("agent-b")
        assert checkpoints.list_steps(child.checkpoints_dir) == [2]
        assert checkpoints.read_state(child.checkpoints_dir / "0002")["forked_from"] == "p/agent@2"

    wrong_base = TrainableModel(name="agent", project="p", base_model="org/other-model")
    with pytest.raises(UserError, match="checkpoints were trained on"):
        async with LocalBackend(device="cpu") as backend:
            await wrong_base.register(backend)


def test_checkpoint_writes_are_atomic(tmp_path):
    def boom(d):
        (d / "partial").write_text("x")
        raise RuntimeError("killed mid-write")

    with pytest.raises(RuntimeError):
        checkpoints.write_checkpoint(tmp_path, 3, boom, {})
    assert checkpoints.list_steps(tmp_path) == [] and not list(tmp_path.glob("0003"))
    (tmp_path / ".tmp-0004-zz").mkdir()  # what a SIGKILL would leave
    checkpoints.write_checkpoint(tmp_path, 4, lambda d: (d / "ok").write_text("y"), {"name": "m"})
    assert checkpoints.list_steps(tmp_path) == [4] and not list(tmp_path.glob(".tmp-*"))
    assert checkpoints.adapter_name(tmp_path / "0004") == "m@4"


def test_unregistered_model_says_how_to_fix():
    with pytest.raises(UserError, match="register"):
        TrainableModel(name="x").openai_client()
    with pytest.raises(UserError, match="device"):
        LocalBackend(device="tpu")


def test_dtype_auto_follows_the_hardware_and_can_be_forced(monkeypatch, tiny_model_dir):
    from mcprl.model import weights

    monkeypatch.delenv("MCPRL_DTYPE", raising=False)
    assert weights.resolve_dtype("auto") == ("bfloat16" if weights.native_bf16() else "float32")
    assert weights.resolve_dtype("float32") == "float32"
    monkeypatch.setenv("MCPRL_DTYPE", "float32")
    assert weights.resolve_dtype("auto") == "float32"
    assert next(weights.load_model(str(tiny_model_dir)).parameters()).dtype == torch.float32
    with pytest.raises(UserError, match="unknown dtype 'fp8'"):
        weights.resolve_dtype("fp8")


@pytest.mark.anyio
async def test_the_placement_chooses_where_the_parts_run(home, tiny_model_dir):
    """Placement: the endpoint started by its factory (the trainer here), the trainer elsewhere only
    with the endpoint elsewhere too, this machine's endpoint on the placement's host."""
    from mcprl.backends.base import Placement, Runtime
    from mcprl.backends.cpu import CpuRuntime, EngineEndpoint

    with pytest.raises(UserError, match=r"needs the policy served elsewhere too"):
        Placement(load_trainer=lambda checkpoint: None)
    assert LocalBackend(device="cpu", where=Placement(host="0.0.0.0")).settings["host"] == "0.0.0.0"
    assert "host" not in LocalBackend(device="cpu").settings

    started = []

    async def start_endpoint(trainer):
        started.append(trainer)
        return await rt._start_endpoint(trainer)  # the CPU runtime's own, through the factory

    model = TrainableModel(name="placed", project="p", base_model=str(tiny_model_dir))
    backend = LocalBackend(device="cpu", dtype="float32", where=Placement(start_endpoint=start_endpoint))
    rt = backend._runtime(model)
    assert isinstance(rt, CpuRuntime) and rt.start_endpoint is start_endpoint
    backend._runtime = lambda model: rt
    async with backend:
        await model.register(backend)
        assert len(started) == 1 and isinstance(rt.endpoint, EngineEndpoint)

    def load_trainer(checkpoint):
        raise AssertionError("not loaded here")

    both = LocalBackend(device="cpu", where=Placement(start_endpoint=start_endpoint, load_trainer=load_trainer))
    rt = both._runtime(model)
    assert type(rt) is Runtime and rt.load_trainer is load_trainer and rt.start_endpoint is start_endpoint
