"""The GPU backend's parts that need no GPU: the vLLM command line and environment built from
settings, GPU placement, the one-line errors, the adapter/sleep/wake calls against a real local
HTTP server standing in for vLLM, and a whole train step (sleep, step, checkpoint, wake, swap)
with the CPU trainer against that server."""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
import torch

from mcprl import LocalBackend, TrainableModel, TrainConfig
from mcprl.backends.gpu import (
    GpuRuntime,
    GpuSettings,
    Placement,
    gpu_unavailable_reason,
    missing_gpu_packages,
    resolve_placement,
    shared_memory_utilization,
    tool_chat_template,
    visible_devices,
)
from mcprl.backends.gpu_serving import TOOL_PARSER_PLUGIN, VllmError, VllmLaunch, VllmServer, VllmSettings, free_port, lora_rank_bucket
from mcprl.backends.gpu_training import UnslothGRPOTrainer, lora_arguments
from mcprl.chat_format import tool_template
from mcprl.errors import UserError
from mcprl.train import checkpoints
from mcprl.train.config import LoraSettings
from mcprl.train.grpo import GRPOTrainer
from mcprl.types import Generation, Trajectory, TrajectoryGroup

KEY = "test-key"


# ---- the vLLM command line and environment -------------------------------------------------
def _launch(**over) -> VllmLaunch:
    args = dict(settings=VllmSettings(), model_path="/models/qwen", served_name="qwen", port=8123, lora_rank=8,
                gpus=["0"], gpu_memory_utilization=0.45, sleep_mode=True, api_key=KEY)
    return VllmLaunch(**{**args, **over})


def _flag(cmd: list[str], name: str) -> str:
    assert cmd.count(name) == 1, f"{name} appears {cmd.count(name)} times in {cmd}"
    return cmd[cmd.index(name) + 1]


def test_command_serves_the_base_with_lora_tools_and_exact_logprobs():
    cmd = _launch(chat_template=Path("/t/chat_template.jinja")).command()
    assert cmd[:5] == [sys.executable, "-m", "vllm.entrypoints.cli.main", "serve", "/models/qwen"]
    assert _flag(cmd, "--served-model-name") == "qwen"
    assert (_flag(cmd, "--host"), _flag(cmd, "--port")) == ("127.0.0.1", "8123")
    assert "--enable-lora" in cmd and _flag(cmd, "--max-lora-rank") == "8" and _flag(cmd, "--max-loras") == "2"
    assert "--enable-auto-tool-choice" in cmd and _flag(cmd, "--tool-call-parser") == "mcprl"
    assert _flag(cmd, "--tool-parser-plugin") == str(TOOL_PARSER_PLUGIN) and TOOL_PARSER_PLUGIN.is_file()
    assert _flag(cmd, "--chat-template") == "/t/chat_template.jinja"
    assert _flag(cmd, "--logprobs-mode") == "processed_logprobs" and _flag(cmd, "--generation-config") == "vllm"
    assert _flag(cmd, "--gpu-memory-utilization") == "0.45" and _flag(cmd, "--tensor-parallel-size") == "1"
    assert "--enable-sleep-mode" in cmd
    for unset in ("--max-model-len", "--enforce-eager", "--max-num-seqs", "--max-cpu-loras", "--enable-prefix-caching", "--no-enable-prefix-caching"):
        assert unset not in cmd
    assert KEY not in " ".join(cmd)  # the key goes through the environment


def test_command_passes_engine_settings_through():
    s = VllmSettings(max_model_len=4096, max_loras=4, max_cpu_loras=8, max_num_seqs=64, enforce_eager=True, dtype="bfloat16",
                     enable_prefix_caching=False, extra_args=["--kv-cache-dtype", "fp8"])
    cmd = _launch(settings=s, lora_rank=12, gpus=["2", "3"], sleep_mode=False, gpu_memory_utilization=0.9).command()
    assert _flag(cmd, "--max-model-len") == "4096" and _flag(cmd, "--max-loras") == "4" and _flag(cmd, "--max-cpu-loras") == "8"
    assert _flag(cmd, "--max-num-seqs") == "64" and "--enforce-eager" in cmd and _flag(cmd, "--dtype") == "bfloat16"
    assert "--no-enable-prefix-caching" in cmd and cmd[-2:] == ["--kv-cache-dtype", "fp8"]
    assert _flag(cmd, "--max-lora-rank") == "16"  # 12 is no rank vLLM accepts
    assert _flag(cmd, "--tensor-parallel-size") == "2" and "--enable-sleep-mode" not in cmd and "--chat-template" not in cmd


def test_environment_enables_runtime_lora_and_sleep_endpoints():
    env = _launch(gpus=["GPU-aa", "GPU-bb"]).env({"PATH": "/bin", "CUDA_VISIBLE_DEVICES": "0,1,2", "VLLM_CACHE_ROOT": "/c/vllm"})
    assert env["PATH"] == "/bin" and env["CUDA_VISIBLE_DEVICES"] == "GPU-aa,GPU-bb"
    assert env["VLLM_ALLOW_RUNTIME_LORA_UPDATING"] == "True" and env["VLLM_API_KEY"] == KEY
    assert env["VLLM_SERVER_DEV_MODE"] == "1" and env["VLLM_CACHE_ROOT"] == "/c/vllm"
    assert "VLLM_SERVER_DEV_MODE" not in _launch(sleep_mode=False).env({})


def test_vllm_keeps_its_info_log_and_none_of_unsloths_environment():
    env = _launch().env({"PATH": "/bin", "UNSLOTH_IS_PRESENT": "1", "UNSLOTH_ZOO_IS_PRESENT": "1", "VLLM_CONFIGURE_LOGGING": "0"})
    assert not [k for k in env if k.startswith("UNSLOTH")]
    assert env["VLLM_CONFIGURE_LOGGING"] == "1" and env["VLLM_LOGGING_LEVEL"] == "INFO"
    assert _launch().env({"VLLM_LOGGING_LEVEL": "DEBUG"})["VLLM_LOGGING_LEVEL"] == "DEBUG"


def test_vllm_starts_from_the_environment_before_unsloth_changed_it(monkeypatch):
    """`import unsloth` sets allocator settings, Triton flags and a sitecustomize on PYTHONPATH in our
    process; the runtime keeps the environment it was created with for vLLM."""
    monkeypatch.setenv("PYTHONPATH", "/site")
    rt = GpuRuntime(TrainableModel(name="m", project="p", base_model="org/unused"))
    monkeypatch.setenv("PYTHONPATH", "/unsloth_compiled_cache:/site")  # as Unsloth's import does
    monkeypatch.setenv("PYTORCH_CUDA_ALLOC_CONF", "expandable_segments:True")
    env = _launch().env(rt._launch_env)
    assert env["PYTHONPATH"] == "/site" and "PYTORCH_CUDA_ALLOC_CONF" not in env


def test_dtype_applies_to_unsloth_and_vllm_on_a_gpu():
    """`mcprl train --dtype` on a GPU: the same base dtype for the sampler and the trainer."""
    assert LocalBackend(device="cuda", placement="shared").settings == {"placement": "shared"}
    settings = LocalBackend(device="cuda", dtype="bfloat16", vllm={"max_model_len": 2048}).settings
    assert settings == {"vllm": {"max_model_len": 2048, "dtype": "bfloat16"}, "unsloth": {"dtype": "bfloat16"}}
    GpuSettings.model_validate(LocalBackend(device="cuda", dtype="float32").settings)  # both sides accept it
    with pytest.raises(UserError, match="dtype='bfloat16' but unsloth.dtype='float16'; give one of them"):
        LocalBackend(device="cuda", dtype="bfloat16", unsloth={"dtype": "float16"})


def test_lora_rank_bucket():
    assert [lora_rank_bucket(r) for r in (1, 2, 8, 9, 64, 300, 320, 321, 512)] == [1, 8, 8, 16, 64, 320, 320, 512, 512]
    with pytest.raises(UserError, match="smaller rank"):
        lora_rank_bucket(513)


# ---- placement and the one-line errors ------------------------------------------------------
def test_placement():
    assert resolve_placement(GpuSettings(), 1) == Placement(True, 0, [0])
    assert resolve_placement(GpuSettings(), 2) == Placement(False, 0, [1])
    assert resolve_placement(GpuSettings(placement="shared"), 4) == Placement(True, 0, [0])
    assert resolve_placement(GpuSettings(train_gpu=3, serve_gpus=[0, 1]), 4) == Placement(False, 3, [0, 1])
    assert resolve_placement(GpuSettings(train_gpu=1), 3) == Placement(False, 1, [0])
    for settings, count, match in [
        (GpuSettings(placement="split"), 1, "second GPU"),
        (GpuSettings(train_gpu=2), 2, "only 2 GPU"),
        (GpuSettings(serve_gpus=[0, 1]), 2, "other than train_gpu"),
        (GpuSettings(serve_gpus=[5]), 2, "visible GPUs"),
        (GpuSettings(placement="shared", serve_gpus=[1]), 2, "drop serve_gpus"),
    ]:
        with pytest.raises(UserError, match=match):
            resolve_placement(settings, count)


def test_visible_devices_map_through_our_own_visibility():
    assert visible_devices([0, 1], None) == ["0", "1"]
    assert visible_devices([1], "3,5") == ["5"]
    assert visible_devices([0], "GPU-aa, GPU-bb") == ["GPU-aa"]


def test_shared_memory_utilization():
    gib = 2**30
    assert shared_memory_utilization(40 * gib, 80 * gib) == 0.45
    assert shared_memory_utilization(79 * gib, 80 * gib) == 0.88
    with pytest.raises(UserError, match="placement='split'"):
        shared_memory_utilization(gib // 2, 80 * gib)


def test_gpu_unavailable_reasons():
    assert gpu_unavailable_reason(False, []) == "device='cuda' but CUDA is not available on this machine; use device='cpu'"
    msg = gpu_unavailable_reason(True, ["vllm", "unsloth"])
    assert msg == "the GPU backend needs vllm and unsloth (missing: vllm, unsloth): pip install 'mcprl[gpu]'"
    assert "missing: unsloth)" in gpu_unavailable_reason(True, ["unsloth"])
    assert gpu_unavailable_reason(True, []) is None


def test_missing_gpu_packages_are_found_without_importing_them():
    installed = {p for p in ("vllm", "unsloth") if p not in missing_gpu_packages()}
    code = "import mcprl.backends.gpu, mcprl.backends.local, sys; print(sorted(m for m in ('vllm', 'unsloth') if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    assert out == "[]"
    if not installed:
        assert missing_gpu_packages() == ["vllm", "unsloth"]


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the message on a machine without CUDA")
@pytest.mark.anyio
async def test_asking_for_cuda_without_it_is_one_line(home):
    model = TrainableModel(name="m", project="p", base_model="org/unused")
    with pytest.raises(UserError) as e:
        async with LocalBackend(device="cuda") as backend:
            await model.register(backend)
    assert str(e.value) == "device='cuda' but CUDA is not available on this machine; use device='cpu'"
    with pytest.raises(UserError, match="GPU backend setting vllm.gpu_memory_utilization: Input should be less than or equal to 1"):
        async with LocalBackend(device="cuda", vllm={"gpu_memory_utilization": 2}) as backend:
            await model.register(backend)
    with pytest.raises(UserError, match="GPU backend setting threads: Extra inputs are not permitted"):
        GpuRuntime(model, threads=2)


def test_tool_chat_template_only_when_the_model_has_none(tiny_model_dir, tmp_path):
    from transformers import AutoTokenizer

    assert tool_chat_template(str(tiny_model_dir), tmp_path / "a") is None  # ours already: it renders tools
    plain = tmp_path / "plain"
    tok = AutoTokenizer.from_pretrained(tiny_model_dir)
    tok.chat_template = "{% for m in messages %}{{ m['content'] }}{% endfor %}"
    tok.save_pretrained(plain)
    path = tool_chat_template(str(plain), tmp_path / "b")
    assert path == tmp_path / "b" / "chat_template.jinja" and path.read_text() == tool_template()


# ---- the trainer Unsloth feeds ----------------------------------------------------------------
def test_lora_arguments_resume_from_the_checkpoints_own_config(tiny_model_dir, tmp_path):
    from transformers import AutoModelForCausalLM, AutoTokenizer

    registered = LoraSettings(rank=16, alpha=32, target_modules="all-linear")
    assert lora_arguments(registered, None) == {"r": 16, "lora_alpha": 32, "lora_dropout": 0.0, "target_modules": "all-linear"}
    trained = LoraSettings(rank=4, alpha=8, dropout=0.1, target_modules=["v_proj", "q_proj"])
    GRPOTrainer(AutoModelForCausalLM.from_pretrained(tiny_model_dir), AutoTokenizer.from_pretrained(tiny_model_dir), trained).save(tmp_path)
    assert lora_arguments(registered, tmp_path) == {"r": 4, "lora_alpha": 8, "lora_dropout": 0.1, "target_modules": ["q_proj", "v_proj"]}


def _groups(n: int = 4, vary: bool = True) -> list[TrajectoryGroup]:
    trajs = [
        Trajectory(generations=[Generation(prompt_token_ids=[1, 2, 3, 4], completion_token_ids=[5 + i, 6, 7], logprobs=[-1.0, -2.0, -1.5])],
                   reward=float(i) if vary else 1.0)
        for i in range(n)
    ]
    return [TrajectoryGroup(trajectories=trajs)]


def test_unsloth_trainer_keeps_the_wrapped_model_and_its_checkpointing(tiny_model_dir):
    """Run on CPU with a PEFT model standing where Unsloth's would: it is used as given (not wrapped
    again) and HF gradient checkpointing is not switched on over Unsloth's."""
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM, AutoTokenizer

    peft_model = get_peft_model(AutoModelForCausalLM.from_pretrained(tiny_model_dir), LoraConfig(r=4, target_modules="all-linear"))
    trainer = UnslothGRPOTrainer(peft_model, AutoTokenizer.from_pretrained(tiny_model_dir), LoraSettings(rank=4), torch.device("cpu"))
    assert trainer.model is peft_model
    before = {k: v.clone() for k, v in peft_model.named_parameters() if v.requires_grad}
    metrics = trainer.step(_groups(), TrainConfig(learning_rate=1e-2, gradient_checkpointing=True))
    assert metrics["trained"] == 1 and not peft_model.is_gradient_checkpointing
    assert any(not torch.equal(before[k], v) for k, v in peft_model.named_parameters() if v.requires_grad)


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
        return JSONResponse({"error": {"message": message, "type": "InvalidUserInput", "param": None, "code": code}}, status_code=code)

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
    vllm = VllmServer(fake_vllm.state.url, KEY)
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
    vllm = VllmServer(fake_vllm.state.url, KEY)
    with pytest.raises(VllmError, match=r"/v1/load_lora_adapter failed \(404\): Loading lora agent@1 failed: No adapter found"):
        await vllm.load_adapter("agent@1", tmp_path)
    with pytest.raises(VllmError, match=r"\(404\): The lora adapter 'agent@9' cannot be found"):
        await vllm.unload_adapter("agent@9")
    with pytest.raises(VllmError, match=r"\(401\): Unauthorized"):
        await VllmServer(fake_vllm.state.url, "wrong").served_models()
    with pytest.raises(VllmError, match="did not answer /wake_up"):
        await VllmServer(f"http://127.0.0.1:{free_port('127.0.0.1')}", KEY).wake_up()
    fake_vllm.state.stays_asleep = True
    with pytest.raises(VllmError, match="still reports is_sleeping=true after /wake_up"):
        await vllm.wake_up()


@pytest.mark.anyio
async def test_wait_ready_reports_what_a_slow_start_is_doing(tmp_path):
    code = "import time; print('INFO Capturing CUDA graphs', flush=True); time.sleep(600)"
    server = VllmServer.start([sys.executable, "-c", code], {}, tmp_path / "vllm.log", f"http://127.0.0.1:{free_port('127.0.0.1')}", KEY)
    lines: list[str] = []
    with pytest.raises(UserError, match="not ready after 2s"):
        await server.wait_ready(timeout_s=2, report=lines.append, every_s=0.5)
    assert lines and all(line.startswith("vLLM starting, ") for line in lines)
    assert lines[-1].endswith(": INFO Capturing CUDA graphs") and "nothing logged for" in lines[-1]


@pytest.mark.anyio
async def test_wait_ready_fails_fast_when_vllm_exits(tmp_path):
    cmd = [sys.executable, "-c", "import sys; print('ValueError: max_lora_rank 8 < adapter rank 16'); sys.exit(3)"]
    url = f"http://127.0.0.1:{free_port('127.0.0.1')}"
    server = VllmServer.start(cmd, {}, tmp_path / "vllm.log", url, KEY)
    t = time.monotonic()
    with pytest.raises(UserError, match=r"vLLM exited with code 3 while starting: ValueError: max_lora_rank 8 < adapter rank 16 \(log: .*vllm.log\)"):
        await server.wait_ready(timeout_s=60)
    assert time.monotonic() - t < 30
    server.close()


@pytest.mark.anyio
async def test_wait_ready_times_out_and_stops_the_process(tmp_path):
    cmd = [sys.executable, "-c", "import time; time.sleep(600)"]
    server = VllmServer.start(cmd, {}, tmp_path / "vllm.log", f"http://127.0.0.1:{free_port('127.0.0.1')}", KEY)
    proc = server.process
    with pytest.raises(UserError, match="not ready after 1s"):
        await server.wait_ready(timeout_s=1)
    assert proc.poll() is not None and server.process is None


# ---- one train step of the GPU runtime, with the CPU trainer and the stand-in vLLM --------------
async def _runtime(fake_vllm, tiny_model_dir, shared: bool) -> GpuRuntime:
    from transformers import AutoModelForCausalLM, AutoTokenizer

    model = TrainableModel(name="agent", project="p", base_model=str(tiny_model_dir))
    rt = GpuRuntime(model, placement="shared" if shared else "split")
    rt.placement = Placement(shared, 0, [0] if shared else [1])
    rt.trainer = GRPOTrainer(AutoModelForCausalLM.from_pretrained(tiny_model_dir), AutoTokenizer.from_pretrained(tiny_model_dir), model.lora)
    rt.server = VllmServer(fake_vllm.state.url, KEY)
    ckpt = checkpoints.write_checkpoint(rt.root, 0, rt.trainer.save, rt.checkpoint_state())
    await rt.server.load_adapter(rt.served_name, ckpt)
    fake_vllm.state.calls.clear()
    return rt


def _control_calls(fake_vllm) -> list[tuple[str, str]]:
    out = []
    for _, path, _, body in fake_vllm.state.calls:
        out.append((path, body.split('"lora_name":"')[1].split('"')[0]) if "lora" in path else (path, ""))
    return out


@pytest.mark.anyio
async def test_train_sleeps_steps_wakes_then_swaps(home, tiny_model_dir, fake_vllm):
    rt = await _runtime(fake_vllm, tiny_model_dir, shared=True)
    metrics = await rt.train(_groups(), TrainConfig(learning_rate=1e-2))
    assert _control_calls(fake_vllm) == [("/sleep", ""), ("/wake_up", ""), ("/is_sleeping", ""), ("/v1/load_lora_adapter", "agent@1"),
                                         ("/v1/unload_lora_adapter", "agent@0")]
    assert rt.step == 1 and rt.served_name == "agent@1" and list(fake_vllm.state.adapters) == ["agent@1"]
    ckpt = rt.root / "0001"
    assert fake_vllm.state.adapters["agent@1"] == str(ckpt)
    assert {"adapter_config.json", "adapter_model.safetensors", "optimizer.pt", "trainer_state.json"} <= {p.name for p in ckpt.iterdir()}
    assert metrics["trained"] == 1 and metrics["swap_seconds"] > 0 and metrics["sleep_seconds"] > 0 and metrics["wake_seconds"] > 0
    state = checkpoints.read_state(ckpt)
    assert state["step"] == 1 and state["name"] == "agent" and state["metrics"] == pytest.approx(metrics)
    assert not list(ckpt.glob(".*.tmp"))


@pytest.mark.anyio
async def test_split_placement_trains_while_vllm_serves(home, tiny_model_dir, fake_vllm):
    rt = await _runtime(fake_vllm, tiny_model_dir, shared=False)
    metrics = await rt.train(_groups(vary=False), TrainConfig())
    assert _control_calls(fake_vllm) == [("/v1/load_lora_adapter", "agent@1"), ("/v1/unload_lora_adapter", "agent@0")]
    assert metrics["trained"] == 0 and "sleep_seconds" not in metrics and rt.step == 1


@pytest.mark.anyio
async def test_a_failed_step_wakes_vllm_and_keeps_serving_the_old_step(home, tiny_model_dir, fake_vllm):
    rt = await _runtime(fake_vllm, tiny_model_dir, shared=True)
    broken = _groups()
    broken[0].trajectories[0].generations[0].logprobs = [-1.0]  # 1 logprob for 3 tokens
    with pytest.raises(ValueError, match="1 logprobs for 3 tokens"):
        await rt.train(broken, TrainConfig())
    assert _control_calls(fake_vllm) == [("/sleep", ""), ("/wake_up", ""), ("/is_sleeping", "")]
    assert not fake_vllm.state.sleeping and rt.step == 0 and list(fake_vllm.state.adapters) == ["agent@0"]
    assert checkpoints.list_steps(rt.root) == [0]


# ---- the tool-call parser vLLM runs: ours, as a plugin ------------------------------------------
# Replies from the GPU run of SmolLM2-135M that vLLM's hermes parser left as text ("Extra data",
# "string indices must be integers") and mcprl.chat_format.parse_tool_calls reads.
HERMES_REJECTS = [
    '<tool_call>\n{"name": "add", "arguments": {"a": 2, "b": 3}}\nI will add the numbers.\n</tool_call>',
    '<tool_call>\n{"name": "add", "arguments": "{\\"a\\": 2, \\"b\\": 3}"}\n</tool_call>',
    '<tool_call>\n{"name": "add", "parameters": {"a": 2, "b": 3}}\n</tool_call>',
]


def test_vllm_parses_tool_calls_with_our_parser():
    """Where vLLM is installed (the GPU stack): load the plugin file as `vllm serve
    --tool-parser-plugin` does and check it returns exactly what the CPU endpoint does."""
    pytest.importorskip("vllm.tool_parsers", reason="vLLM is not installed (the GPU stack)")
    texts = [*HERMES_REJECTS, "no call here", "<tool_call>{not json</tool_call>", 'ok <tool_call>{"name": "f", "arguments": {}}</tool_call>']
    code = f"""
import json
from vllm.tool_parsers import ToolParserManager
from mcprl.chat_format import parse_tool_calls
ToolParserManager.import_tool_parser({str(TOOL_PARSER_PLUGIN)!r})
extract = ToolParserManager.get_tool_parser("mcprl").extract_tool_calls
out = []
for text in {texts!r}:
    got = extract(None, text, None)
    want = parse_tool_calls(text)
    out.append([got.tools_called, got.content, [(c.function.name, c.function.arguments) for c in got.tool_calls],
                bool(want.tool_calls), want.content if want.tool_calls else text,
                [(c["function"]["name"], c["function"]["arguments"]) for c in want.tool_calls]])
print(json.dumps(out))
"""
    import json

    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    rows = json.loads(r.stdout.strip().splitlines()[-1])
    for called, content, calls, want_called, want_content, want_calls in rows:
        assert (called, content or "", calls) == (want_called, want_content, want_calls)
    assert [row[0] for row in rows] == [True, True, True, False, False, True]
    assert rows[0][2] == [["add", '{"a": 2, "b": 3}']] and rows[-1][1] == "ok"
