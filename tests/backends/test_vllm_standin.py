"""The GPU runtime's calls to vLLM (adapter load/unload, sleep/wake, readiness) against a real
local HTTP server standing in for vLLM, and the runtime's lifecycle with vLLM as its server
(start, a train step: sleep, step, checkpoint, wake, swap; resume) with the CPU trainer. No GPU needed."""

from __future__ import annotations

import sys
import threading
import time
from pathlib import Path

import pytest
import torch

from mcprl import TrainableModel, TrainConfig
from mcprl.backends.base import Runtime
from mcprl.backends.gpu_serving import VllmEndpoint, VllmError, VllmProcess, free_port
from mcprl.errors import UserError
from mcprl.train import checkpoints
from mcprl.train.grpo import GRPOTrainer
from tests.backends.test_gpu_backend import _groups  # the same trainable groups as the trainer tests

pytestmark = pytest.mark.unit

KEY = "test-key"


# ---- a real local HTTP server standing in for vLLM ---------------------------------------------
def _fake_vllm_app(base: str):
    from fastapi import FastAPI, Request
    from fastapi.responses import JSONResponse, Response

    app = FastAPI()
    app.state.calls = []
    app.state.adapters = {}
    app.state.sleeping = False
    app.state.stays_asleep = False

    def error(message: str, code: int) -> JSONResponse:  # vLLM's ErrorResponse shape
        return JSONResponse(
            {"error": {"message": message, "type": "InvalidUserInput", "param": None, "code": code}}, status_code=code
        )

    @app.middleware("http")
    async def record(request: Request, call_next):
        if request.url.path.startswith("/v1") and request.headers.get("authorization") != f"Bearer {KEY}":
            return JSONResponse({"error": "Unauthorized"}, status_code=401)
        body = await request.body()
        app.state.calls.append((request.method, request.url.path, dict(request.query_params), body.decode()))
        return await call_next(request)

    @app.get("/health")
    async def health():
        return {}

    @app.get("/v1/models")
    async def models():
        return {"object": "list", "data": [{"id": m} for m in [base, *app.state.adapters]]}

    @app.post("/v1/load_lora_adapter")
    async def load(req: dict):
        if not (Path(req["lora_path"]) / "adapter_config.json").exists():
            return error(f"Loading lora {req['lora_name']} failed: No adapter found for {req['lora_path']}", 404)
        app.state.adapters[req["lora_name"]] = req["lora_path"]
        return f"Success: LoRA adapter '{req['lora_name']}' added successfully."

    @app.post("/v1/unload_lora_adapter")
    async def unload(req: dict):
        if app.state.adapters.pop(req["lora_name"], None) is None:
            return error(f"The lora adapter '{req['lora_name']}' cannot be found.", 404)
        return f"Success: LoRA adapter '{req['lora_name']}' removed successfully."

    # vLLM 0.26 answers both with 200 and an empty body; /is_sleeping tells the state.
    @app.post("/sleep")
    async def sleep(level: int = 1, mode: str = "abort"):
        app.state.sleeping = True
        return Response(status_code=200)

    @app.post("/wake_up")
    async def wake_up():
        app.state.sleeping = app.state.stays_asleep
        return Response(status_code=200)

    @app.get("/is_sleeping")
    async def is_sleeping():
        return {"is_sleeping": app.state.sleeping}

    return app


@pytest.fixture
def fake_vllm():
    import uvicorn

    app = _fake_vllm_app("base")
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=free_port("127.0.0.1"), log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started:
        assert time.monotonic() < deadline, "fake vLLM did not start"
        time.sleep(0.01)
    app.state.url = f"http://127.0.0.1:{server.config.port}"
    yield app
    server.should_exit = True
    thread.join(timeout=10)


def _adapter(tmp_path: Path, name: str) -> Path:
    d = tmp_path / name
    d.mkdir()
    (d / "adapter_config.json").write_text("{}")
    return d


@pytest.mark.anyio
async def test_adapter_and_sleep_calls(fake_vllm, tmp_path):
    vllm = VllmProcess(fake_vllm.state.url, KEY)
    await vllm.wait_ready(timeout_s=5)
    await vllm.load_adapter("agent@0", _adapter(tmp_path, "0000"))
    assert await vllm.served_models() == ["base", "agent@0"]
    await vllm.sleep()
    assert fake_vllm.state.sleeping
    await vllm.wake_up()
    await vllm.unload_adapter("agent@0")
    assert await vllm.served_models() == ["base"]
    calls = [(m, p, q) for m, p, q, _ in fake_vllm.state.calls if p != "/v1/models"]
    assert calls == [
        ("GET", "/health", {}),
        ("POST", "/v1/load_lora_adapter", {}),
        ("POST", "/sleep", {"level": "1", "mode": "wait"}),
        ("POST", "/wake_up", {}),
        ("GET", "/is_sleeping", {}),
        ("POST", "/v1/unload_lora_adapter", {}),
    ]
    bodies = [b for _, p, _, b in fake_vllm.state.calls if "lora" in p]
    assert bodies == ['{"lora_name":"agent@0","lora_path":"%s"}' % (tmp_path / "0000"), '{"lora_name":"agent@0"}']


@pytest.mark.anyio
async def test_control_errors_carry_vllms_message(fake_vllm, tmp_path):
    vllm = VllmProcess(fake_vllm.state.url, KEY)
    with pytest.raises(
        VllmError, match=r"/v1/load_lora_adapter failed \(404\): Loading lora agent@1 failed: No adapter found"
    ):
        await vllm.load_adapter("agent@1", tmp_path)
    with pytest.raises(VllmError, match=r"\(404\): The lora adapter 'agent@9' cannot be found"):
        await vllm.unload_adapter("agent@9")
    with pytest.raises(VllmError, match=r"\(401\): Unauthorized"):
        await VllmProcess(fake_vllm.state.url, "wrong").served_models()
    with pytest.raises(VllmError, match="did not answer /wake_up"):
        await VllmProcess(f"http://127.0.0.1:{free_port('127.0.0.1')}", KEY).wake_up()
    fake_vllm.state.stays_asleep = True
    with pytest.raises(VllmError, match="still reports is_sleeping=true after /wake_up"):
        await vllm.wake_up()


@pytest.mark.anyio
async def test_wait_ready_reports_what_a_slow_start_is_doing(tmp_path):
    code = "import time; print('INFO Capturing CUDA graphs', flush=True); time.sleep(600)"
    server = VllmProcess.start(
        [sys.executable, "-c", code], {}, tmp_path / "vllm.log", f"http://127.0.0.1:{free_port('127.0.0.1')}", KEY
    )
    lines: list[str] = []
    with pytest.raises(UserError, match="not ready after 2s"):
        await server.wait_ready(timeout_s=2, report=lines.append, every_s=0.5)
    assert lines and all(line.startswith("vLLM starting, ") for line in lines)
    assert lines[-1].endswith(": INFO Capturing CUDA graphs") and "nothing logged for" in lines[-1]


@pytest.mark.anyio
async def test_wait_ready_fails_fast_when_vllm_exits(tmp_path):
    cmd = [sys.executable, "-c", "import sys; print('ValueError: max_lora_rank 8 < adapter rank 16'); sys.exit(3)"]
    url = f"http://127.0.0.1:{free_port('127.0.0.1')}"
    server = VllmProcess.start(cmd, {}, tmp_path / "vllm.log", url, KEY)
    t = time.monotonic()
    with pytest.raises(
        UserError,
        match=r"vLLM exited with code 3 while starting: ValueError: max_lora_rank 8 < adapter rank 16 \(log: "
        r".*vllm.log\)",
    ):
        await server.wait_ready(timeout_s=60)
    assert time.monotonic() - t < 30
    server.close()


@pytest.mark.anyio
async def test_wait_ready_times_out_and_stops_the_process(tmp_path):
    cmd = [sys.executable, "-c", "import time; time.sleep(600)"]
    server = VllmProcess.start(cmd, {}, tmp_path / "vllm.log", f"http://127.0.0.1:{free_port('127.0.0.1')}", KEY)
    proc = server.process
    with pytest.raises(UserError, match="not ready after 1s"):
        await server.wait_ready(timeout_s=1)
    assert proc.poll() is not None and server.process is None


def test_the_server_ends_with_the_thread_that_started_it(tmp_path):
    """A run or replica that is killed outright leaves no vLLM holding the GPU: the server gets SIGTERM
    when the thread that started it ends (here a thread; a SIGKILLed process ends all of its threads)."""
    started: list[VllmProcess] = []
    cmd = [sys.executable, "-c", "import time; print('serving', flush=True); time.sleep(600)"]

    def start() -> None:  # and live until the server runs (it asks for the signal once it runs)
        started.append(VllmProcess.start(cmd, {}, tmp_path / "vllm.log", "http://127.0.0.1:1", KEY))
        while "serving" not in started[0].last_log_line():
            time.sleep(0.05)

    starter = threading.Thread(target=start)
    starter.start()
    starter.join()
    proc = started[0].process
    try:
        assert proc.wait(timeout=20) == -15  # SIGTERM
    finally:
        started[0].close()


# ---- the runtime with vLLM as its server: the stand-in vLLM, and the CPU trainer ----------------
def _runtime(fake_vllm, tiny_model_dir, shared: bool) -> Runtime:
    """The GPU runtime's server (`VllmEndpoint`) on the stand-in; GRPOTrainer on CPU where Unsloth's would be."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    model = TrainableModel(name="agent", project="p", base_model=str(tiny_model_dir))

    def load_trainer(checkpoint: Path | None) -> GRPOTrainer:
        base = AutoModelForCausalLM.from_pretrained(tiny_model_dir)
        return GRPOTrainer(base, AutoTokenizer.from_pretrained(tiny_model_dir), model.lora, adapter_dir=checkpoint)

    async def start_endpoint(trainer: GRPOTrainer) -> VllmEndpoint:
        return VllmEndpoint(VllmProcess(fake_vllm.state.url, KEY), shares_gpu=shared)

    return Runtime(model, load_trainer, start_endpoint)


async def _started(fake_vllm, tiny_model_dir, shared: bool) -> Runtime:
    rt = _runtime(fake_vllm, tiny_model_dir, shared)
    await rt.start()
    fake_vllm.state.calls.clear()
    return rt


def _control_calls(fake_vllm) -> list[tuple[str, str]]:
    out = []
    for _, path, _, body in fake_vllm.state.calls:
        out.append((path, body.split('"lora_name":"')[1].split('"')[0]) if "lora" in path else (path, ""))
    return out


@pytest.mark.anyio
async def test_start_writes_step_0_and_serves_it(home, tiny_model_dir, fake_vllm):
    rt = _runtime(fake_vllm, tiny_model_dir, shared=True)
    await rt.start()
    assert _control_calls(fake_vllm) == [("/v1/load_lora_adapter", "agent@0")]
    assert (rt.step, rt.base_url, rt.api_key) == (0, f"{fake_vllm.state.url}/v1", KEY)
    assert checkpoints.list_steps(rt.root) == [0] and fake_vllm.state.adapters == {"agent@0": str(rt.root / "0000")}


@pytest.mark.anyio
async def test_train_sleeps_steps_wakes_then_swaps(home, tiny_model_dir, fake_vllm):
    rt = await _started(fake_vllm, tiny_model_dir, shared=True)
    metrics = await rt.train(_groups(), TrainConfig(learning_rate=1e-2))
    assert _control_calls(fake_vllm) == [
        ("/sleep", ""),
        ("/wake_up", ""),
        ("/is_sleeping", ""),
        ("/v1/load_lora_adapter", "agent@1"),
        ("/v1/unload_lora_adapter", "agent@0"),
    ]
    assert rt.step == 1 and rt.served_name == "agent@1" and list(fake_vllm.state.adapters) == ["agent@1"]
    ckpt = rt.root / "0001"
    assert fake_vllm.state.adapters["agent@1"] == str(ckpt)
    assert {"adapter_config.json", "adapter_model.safetensors", "optimizer.pt", "trainer_state.json"} <= {
        p.name for p in ckpt.iterdir()
    }
    assert (
        metrics["trained"] == 1
        and metrics["swap_seconds"] > 0
        and metrics["sleep_seconds"] > 0
        and metrics["wake_seconds"] > 0
    )
    state = checkpoints.read_state(ckpt)
    assert state["step"] == 1 and state["name"] == "agent" and state["metrics"] == pytest.approx(metrics)
    assert not list(ckpt.glob(".*.tmp"))


@pytest.mark.anyio
async def test_split_placement_trains_while_vllm_serves(home, tiny_model_dir, fake_vllm):
    rt = await _started(fake_vllm, tiny_model_dir, shared=False)
    metrics = await rt.train(_groups(vary=False), TrainConfig())
    assert _control_calls(fake_vllm) == [("/v1/load_lora_adapter", "agent@1"), ("/v1/unload_lora_adapter", "agent@0")]
    assert metrics["trained"] == 0 and "sleep_seconds" not in metrics and rt.step == 1


@pytest.mark.anyio
async def test_a_failed_step_wakes_vllm_and_keeps_serving_the_old_step(home, tiny_model_dir, fake_vllm):
    rt = await _started(fake_vllm, tiny_model_dir, shared=True)
    broken = _groups()
    broken[0].trajectories[0].generations[0].logprobs = [-1.0]  # 1 logprob for 3 tokens
    with pytest.raises(ValueError, match="1 logprobs for 3 tokens"):
        await rt.train(broken, TrainConfig())
    assert _control_calls(fake_vllm) == [("/sleep", ""), ("/wake_up", ""), ("/is_sleeping", "")]
    assert not fake_vllm.state.sleeping and rt.step == 0 and list(fake_vllm.state.adapters) == ["agent@0"]
    assert checkpoints.list_steps(rt.root) == [0]


@pytest.mark.anyio
async def test_resumes_the_latest_step_with_its_optimizer_state(home, tiny_model_dir, fake_vllm):
    rt = await _started(fake_vllm, tiny_model_dir, shared=True)
    await rt.train(_groups(), TrainConfig(learning_rate=1e-2))
    saved = rt.trainer.optimizer.state_dict()
    fake_vllm.state.calls.clear()
    again = _runtime(fake_vllm, tiny_model_dir, shared=True)
    await again.start()
    assert (
        again.step == 1
        and again.served_name == "agent@1"
        and _control_calls(fake_vllm) == [("/v1/load_lora_adapter", "agent@1")]
    )
    assert checkpoints.list_steps(again.root) == [0, 1]
    resumed = again.trainer.optimizer.state_dict()
    k = next(iter(saved["state"]))
    assert torch.equal(resumed["state"][k]["exp_avg"], saved["state"][k]["exp_avg"])


@pytest.mark.anyio
async def test_constrained_turns_train_on_the_trainers_own_old_logprobs(home, tiny_model_dir, fake_vllm):
    """vLLM records grammar-masked logprobs for a constrained turn (here: 0, a token the grammar
    forced), which the trainer cannot reproduce: behind vLLM the runtime has the step score those
    turns' old-policy logprobs itself (ratio exactly 1, none counted in the logprob mismatch), and the
    unconstrained turns keep the sampler's."""
    rt = await _started(fake_vllm, tiny_model_dir, shared=True)
    assert rt.endpoint.masks_constrained_logprobs
    groups = _groups()
    for t in groups[0].trajectories[:2]:
        gen = t.generations[0]
        t.generations[0] = gen.model_copy(update={"constrained": True, "logprobs": [0.0] * len(gen.logprobs)})
    metrics = await rt.train(groups, TrainConfig(learning_rate=1e-12))
    assert metrics["rescored_tokens"] == 6 and metrics["loss_tokens"] == 12
    # the unconstrained turns' recorded logprobs (-1, -2, -1.5) are not the tiny model's: they show as the mismatch
    assert metrics["logprob_mismatch"] > 1
    assert checkpoints.read_state(rt.root / "0001")["metrics"]["rescored_tokens"] == 6
