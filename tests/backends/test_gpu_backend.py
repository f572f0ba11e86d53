"""The GPU backend's parts that need no GPU: the vLLM command line and environment built from
settings, GPU placement, the one-line errors, the trainer Unsloth feeds, and our tool-call parser
inside vLLM. The calls to a running vLLM: tests/backends/test_vllm_standin.py."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import torch

from mcprl import LocalBackend, TrainableModel, TrainConfig
from mcprl.backends.base import Placement
from mcprl.backends.gpu import (
    GpuLayout,
    GpuRuntime,
    GpuSettings,
    gpu_unavailable_reason,
    missing_gpu_packages,
    resolve_placement,
    shared_memory_utilization,
    tool_chat_template,
    visible_devices,
)
from mcprl.backends.gpu_serving import TOOL_PARSER_PLUGIN, VllmLaunch, VllmSettings, lora_rank_bucket
from mcprl.backends.gpu_training import UnslothGRPOTrainer, lora_arguments
from mcprl.errors import UserError
from mcprl.model.chat_format import tool_template
from mcprl.train.config import LoraSettings
from mcprl.train.grpo import GRPOTrainer
from mcprl.types import Generation, Trajectory, TrajectoryGroup

pytestmark = pytest.mark.unit

KEY = "test-key"


# ---- the vLLM command line and environment -------------------------------------------------
def _launch(**over) -> VllmLaunch:
    args = dict(
        settings=VllmSettings(),
        model_path="/models/qwen",
        served_name="qwen",
        port=8123,
        lora_rank=8,
        gpus=["0"],
        gpu_memory_utilization=0.45,
        sleep_mode=True,
        api_key=KEY,
    )
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
    for unset in (
        "--max-model-len",
        "--enforce-eager",
        "--max-num-seqs",
        "--max-cpu-loras",
        "--enable-prefix-caching",
        "--no-enable-prefix-caching",
    ):
        assert unset not in cmd
    assert KEY not in " ".join(cmd)  # the key goes through the environment


def test_command_passes_engine_settings_through():
    s = VllmSettings(
        max_model_len=4096,
        max_loras=4,
        max_cpu_loras=8,
        max_num_seqs=64,
        enforce_eager=True,
        dtype="bfloat16",
        enable_prefix_caching=False,
        extra_args=["--kv-cache-dtype", "fp8"],
    )
    cmd = _launch(settings=s, lora_rank=12, gpus=["2", "3"], sleep_mode=False, gpu_memory_utilization=0.9).command()
    assert (
        _flag(cmd, "--max-model-len") == "4096"
        and _flag(cmd, "--max-loras") == "4"
        and _flag(cmd, "--max-cpu-loras") == "8"
    )
    assert _flag(cmd, "--max-num-seqs") == "64" and "--enforce-eager" in cmd and _flag(cmd, "--dtype") == "bfloat16"
    assert "--no-enable-prefix-caching" in cmd and cmd[-2:] == ["--kv-cache-dtype", "fp8"]
    assert _flag(cmd, "--max-lora-rank") == "16"  # 12 is no rank vLLM accepts
    assert (
        _flag(cmd, "--tensor-parallel-size") == "2"
        and "--enable-sleep-mode" not in cmd
        and "--chat-template" not in cmd
    )


def test_environment_enables_runtime_lora_and_sleep_endpoints():
    env = _launch(gpus=["GPU-aa", "GPU-bb"]).env(
        {"PATH": "/bin", "CUDA_VISIBLE_DEVICES": "0,1,2", "VLLM_CACHE_ROOT": "/c/vllm"}
    )
    assert env["PATH"] == "/bin" and env["CUDA_VISIBLE_DEVICES"] == "GPU-aa,GPU-bb"
    assert env["VLLM_ALLOW_RUNTIME_LORA_UPDATING"] == "True" and env["VLLM_API_KEY"] == KEY
    assert env["VLLM_SERVER_DEV_MODE"] == "1" and env["VLLM_CACHE_ROOT"] == "/c/vllm"
    assert "VLLM_SERVER_DEV_MODE" not in _launch(sleep_mode=False).env({})


def test_vllm_keeps_its_info_log_and_none_of_unsloths_environment():
    env = _launch().env(
        {"PATH": "/bin", "UNSLOTH_IS_PRESENT": "1", "UNSLOTH_ZOO_IS_PRESENT": "1", "VLLM_CONFIGURE_LOGGING": "0"}
    )
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
    env = _launch().env(rt.launch_env)
    assert env["PYTHONPATH"] == "/site" and "PYTORCH_CUDA_ALLOC_CONF" not in env


def test_dtype_applies_to_unsloth_and_vllm_on_a_gpu():
    """`mcprl train --dtype` on a GPU: the same base dtype for the sampler and the trainer."""
    assert LocalBackend(device="cuda", placement="shared").settings == {"placement": "shared"}
    settings = LocalBackend(device="cuda", dtype="bfloat16", vllm={"max_model_len": 2048}).settings
    assert settings == {"vllm": {"max_model_len": 2048, "dtype": "bfloat16"}, "unsloth": {"dtype": "bfloat16"}}
    GpuSettings.model_validate(LocalBackend(device="cuda", dtype="float32").settings)  # both sides accept it
    with pytest.raises(UserError, match="dtype='bfloat16' but unsloth.dtype='float16'; give one of them"):
        LocalBackend(device="cuda", dtype="bfloat16", unsloth={"dtype": "float16"})


def test_a_runs_runtime_and_lora_settings_reach_the_gpu_runtime(monkeypatch, capsys):
    """`mcprl train`'s [runtime] and [lora] flags build the GPU runtime the run registers with:
    placement, vLLM's memory share, Unsloth's 4-bit base, dtype on both sides, and the adapter's shape."""
    from mcprl.backends.config import RuntimeConfig
    from mcprl.backends.gpu_serving import VllmSettings
    from mcprl.backends.gpu_training import UnslothSettings
    from mcprl.cli import train_cmd
    from mcprl.run.runner import TrainingRun
    from tests.cli_runner import run_cli

    seen = {}

    async def capture(cfg, resume, console):
        seen["cfg"] = cfg
        raise UserError("stop here")

    monkeypatch.setattr(train_cmd, "run_with_progress", capture)
    code, _, err = run_cli(
        monkeypatch,
        capsys,
        "train",
        "--device",
        "cuda",
        "--placement",
        "split",
        "--train-gpu",
        "1",
        "--serve-gpus",
        "0",
        "--gpu-memory-utilization",
        "0.5",
        "--load-in-4bit",
        "--dtype",
        "bfloat16",
        "--lora-rank",
        "16",
        "--lora-alpha",
        "32",
        "--lora-target-modules",
        "all-linear",
    )
    assert code == 2 and "stop here" in err, err
    cfg = seen["cfg"]
    run = TrainingRun(cfg)
    rt = LocalBackend.from_config(cfg.runtime)._runtime(run.model)
    assert isinstance(rt, GpuRuntime) and rt.settings == GpuSettings(
        placement="split",
        train_gpu=1,
        serve_gpus=[0],
        vllm=VllmSettings(gpu_memory_utilization=0.5, dtype="bfloat16"),
        unsloth=UnslothSettings(load_in_4bit=True, dtype="bfloat16"),
    )
    assert lora_arguments(rt.model.lora, None) == {
        "r": 16,
        "lora_alpha": 32,
        "lora_dropout": 0.0,
        "target_modules": "all-linear",
    }
    with pytest.raises(
        UserError, match=r"runtime.threads is a setting of the CPU runtime, but this run uses the CUDA one"
    ):
        LocalBackend.from_config(RuntimeConfig(device="cuda", threads=2))


def test_lora_rank_bucket():
    assert [lora_rank_bucket(r) for r in (1, 2, 8, 9, 64, 300, 320, 321, 512)] == [1, 8, 8, 16, 64, 320, 320, 512, 512]
    with pytest.raises(UserError, match="smaller rank"):
        lora_rank_bucket(513)


# ---- placement and the one-line errors ------------------------------------------------------
def test_placement():
    assert resolve_placement(GpuSettings(), 1) == GpuLayout(True, 0, [0])
    assert resolve_placement(GpuSettings(), 2) == GpuLayout(False, 0, [1])
    assert resolve_placement(GpuSettings(placement="shared"), 4) == GpuLayout(True, 0, [0])
    assert resolve_placement(GpuSettings(train_gpu=3, serve_gpus=[0, 1]), 4) == GpuLayout(False, 3, [0, 1])
    assert resolve_placement(GpuSettings(train_gpu=1), 3) == GpuLayout(False, 1, [0])
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
    assert (
        gpu_unavailable_reason(False, []) == "device='cuda' but CUDA is not available on this machine; use device='cpu'"
    )
    msg = gpu_unavailable_reason(True, ["vllm", "unsloth"])
    assert msg == "the GPU backend needs vllm and unsloth (missing: vllm, unsloth): pip install 'mcprl[gpu]'"
    assert "missing: unsloth)" in gpu_unavailable_reason(True, ["unsloth"])
    assert gpu_unavailable_reason(True, []) is None


def test_missing_gpu_packages_are_found_without_importing_them():
    installed = {p for p in ("vllm", "unsloth") if p not in missing_gpu_packages()}
    code = (
        "import mcprl.backends.gpu, mcprl.backends.local, sys; "
        "print(sorted(m for m in ('vllm', 'unsloth') if m in sys.modules))"
    )
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
    with pytest.raises(
        UserError, match="GPU backend setting vllm.gpu_memory_utilization: Input should be less than or equal to 1"
    ):
        async with LocalBackend(device="cuda", vllm={"gpu_memory_utilization": 2}) as backend:
            await model.register(backend)
    with pytest.raises(UserError, match="GPU backend setting threads: Extra inputs are not permitted"):
        GpuRuntime(model, threads=2)


@pytest.mark.anyio
async def test_policy_replicas_beside_the_gpu_runtimes_own_trainer_is_one_line(home):
    """The GPU runtime's trainer and its own vLLM share the GPU; with replicas the steps go to a trainer actor."""

    async def start_endpoint(trainer):
        raise AssertionError("never started")

    model = TrainableModel(name="m", project="p", base_model="org/unused")
    with pytest.raises(
        UserError,
        match=r"with cluster.policy_replicas on a GPU machine, take the steps in a Ray actor too "
        r"\(cluster.trainer_actor",
    ):
        async with LocalBackend(device="cuda", where=Placement(start_endpoint=start_endpoint)) as backend:
            await model.register(backend)


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
    assert lora_arguments(registered, None) == {
        "r": 16,
        "lora_alpha": 32,
        "lora_dropout": 0.0,
        "target_modules": "all-linear",
    }
    trained = LoraSettings(rank=4, alpha=8, dropout=0.1, target_modules=["v_proj", "q_proj"])
    GRPOTrainer(
        AutoModelForCausalLM.from_pretrained(tiny_model_dir), AutoTokenizer.from_pretrained(tiny_model_dir), trained
    ).save(tmp_path)
    assert lora_arguments(registered, tmp_path) == {
        "r": 4,
        "lora_alpha": 8,
        "lora_dropout": 0.1,
        "target_modules": ["q_proj", "v_proj"],
    }


def _groups(n: int = 4, vary: bool = True) -> list[TrajectoryGroup]:
    trajs = [
        Trajectory(
            generations=[
                Generation(
                    prompt_token_ids=[1, 2, 3, 4], completion_token_ids=[5 + i, 6, 7], logprobs=[-1.0, -2.0, -1.5]
                )
            ],
            reward=float(i) if vary else 1.0,
        )
        for i in range(n)
    ]
    return [TrajectoryGroup(trajectories=trajs)]


def test_unsloth_trainer_keeps_the_wrapped_model_and_its_checkpointing(tiny_model_dir):
    """Run on CPU with a PEFT model standing where Unsloth's would: it is used as given (not wrapped
    again) and HF gradient checkpointing is not switched on over Unsloth's."""
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM, AutoTokenizer

    peft_model = get_peft_model(
        AutoModelForCausalLM.from_pretrained(tiny_model_dir), LoraConfig(r=4, target_modules="all-linear")
    )
    trainer = UnslothGRPOTrainer(
        peft_model, AutoTokenizer.from_pretrained(tiny_model_dir), LoraSettings(rank=4), torch.device("cpu")
    )
    assert trainer.model is peft_model
    before = {k: v.clone() for k, v in peft_model.named_parameters() if v.requires_grad}
    metrics = trainer.step(_groups(), TrainConfig(learning_rate=1e-2, gradient_checkpointing=True))
    assert metrics["trained"] == 1 and not peft_model.is_gradient_checkpointing
    assert any(not torch.equal(before[k], v) for k, v in peft_model.named_parameters() if v.requires_grad)


# ---- the tool-call parser vLLM runs: ours, as a plugin ------------------------------------------
# Replies from the GPU run of SmolLM2-135M that vLLM's hermes parser left as text ("Extra data",
# "string indices must be integers") and mcprl.model.chat_format.parse_tool_calls reads.
HERMES_REJECTS = [
    '<tool_call>\n{"name": "add", "arguments": {"a": 2, "b": 3}}\nI will add the numbers.\n</tool_call>',
    '<tool_call>\n{"name": "add", "arguments": "{\\"a\\": 2, \\"b\\": 3}"}\n</tool_call>',
    '<tool_call>\n{"name": "add", "parameters": {"a": 2, "b": 3}}\n</tool_call>',
]


def test_vllm_parses_tool_calls_with_our_parser():
    """Where vLLM is installed (the GPU stack): load the plugin file as `vllm serve
    --tool-parser-plugin` does and check it returns exactly what the CPU endpoint does."""
    pytest.importorskip("vllm.tool_parsers", reason="vLLM is not installed (the GPU stack)")
    texts = [
        *HERMES_REJECTS,
        "no call here",
        "<tool_call>{not json</tool_call>",
        'ok <tool_call>{"name": "f", "arguments": {}}</tool_call>',
    ]
    code = f"""
import json
from vllm.tool_parsers import ToolParserManager
from mcprl.model.chat_format import parse_tool_calls
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
