"""vLLM as the GPU policy endpoint: the `vllm serve` command line built from settings, the
subprocess running it, the calls mcprl makes to it (LoRA load/unload, sleep/wake), and
`VllmEndpoint`, the GPU runtime's `Endpoint` part.

vLLM (0.26 to 0.33) answers chat completions in the shape our clients read (`return_token_ids`
gives a top-level `prompt_token_ids` and per-choice `token_ids`; `logprobs` the sampled tokens'
logprobs), so clients talk to it directly; mcprl only steers it through `VllmProcess`. Tool calls
are parsed by our own parser, loaded into vLLM as a tool-parser plugin (`vllm_tool_parser.py`).
Nothing here imports vllm: it runs in its own process.
"""

from __future__ import annotations

import atexit
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import anyio
import httpx
from pydantic import BaseModel, ConfigDict, Field

from mcprl.errors import UserError

# vLLM loads this file with --tool-parser-plugin; it registers our parser as "mcprl".
TOOL_PARSER_PLUGIN = Path(__file__).with_name("vllm_tool_parser.py")
# Set in our process by `import unsloth`/`unsloth_zoo` (allocator settings, a sitecustomize on
# PYTHONPATH, Triton flags, ...); the vLLM process starts from the environment as it was before.
UNSLOTH_PREFIXES = ("UNSLOTH_",)

# A vLLM process started under this prefix gets SIGTERM when the thread that started it ends, even when its
# process is SIGKILLed (Linux's parent-death signal, kept across exec; the pid passed is the parent's, in
# case it died before the signal was set): a killed run or Ray replica leaves no vLLM holding the GPU.
DIE_WITH_PARENT = [
    sys.executable,
    "-c",
    "import ctypes, os, signal, sys; ctypes.CDLL(None).prctl(1, signal.SIGTERM); "
    "os.getppid() == int(sys.argv[1]) or sys.exit(1); os.execvp(sys.argv[2], sys.argv[2:])",
]

# The values vLLM 0.26-0.33 accept for --max-lora-rank (vllm.config.lora.MaxLoRARanks).
LORA_RANKS = (1, 8, 16, 32, 64, 128, 256, 320, 512)


class VllmSettings(BaseModel):
    """Engine settings passed through to `vllm serve` (see `vllm serve --help=all`)."""

    model_config = ConfigDict(extra="forbid")

    # Fraction of the GPU's memory vLLM may take. None: 0.9 on a GPU of its own; when it shares
    # the trainer's GPU, 90% of what is free once the trainer's model is loaded.
    gpu_memory_utilization: float | None = Field(default=None, gt=0, le=1)
    max_model_len: int | None = Field(default=None, ge=16)
    # Adapters in one batch: during a swap the old and the new step are both live.
    max_loras: int = Field(default=2, ge=1)
    max_cpu_loras: int | None = Field(default=None, ge=1)
    max_num_seqs: int | None = Field(default=None, ge=1)
    enforce_eager: bool = False
    dtype: str = "auto"
    enable_prefix_caching: bool | None = None
    # Anything else, appended verbatim, e.g. ["--kv-cache-dtype", "fp8"].
    extra_args: list[str] = Field(default_factory=list)
    startup_timeout_s: float = Field(default=900, gt=0)


def lora_rank_bucket(rank: int) -> int:
    """The smallest --max-lora-rank vLLM accepts that holds an adapter of `rank`."""
    for r in LORA_RANKS:
        if r >= rank:
            return r
    raise UserError(f"LoRA rank {rank} is above vLLM's largest max_lora_rank ({LORA_RANKS[-1]}); use a smaller rank")


class VllmLaunch(BaseModel):
    """Everything one `vllm serve` process is started with."""

    settings: VllmSettings
    model_path: str
    served_name: str
    host: str = "127.0.0.1"
    port: int
    lora_rank: int
    gpus: list[str]  # CUDA_VISIBLE_DEVICES entries for the vLLM process (tensor parallel over all)
    gpu_memory_utilization: float
    sleep_mode: bool  # shares its GPU with the trainer: sleeps while it trains
    chat_template: Path | None = None  # a template with tools, when the model's own has none
    api_key: str

    @property
    def base_url(self) -> str:
        return f"http://{self.host}:{self.port}"

    def command(self) -> list[str]:
        s = self.settings
        cmd = [
            sys.executable,
            "-m",
            "vllm.entrypoints.cli.main",
            "serve",
            self.model_path,
            "--served-model-name",
            self.served_name,
            "--host",
            self.host,
            "--port",
            str(self.port),
            "--enable-lora",
            "--max-lora-rank",
            str(lora_rank_bucket(self.lora_rank)),
            "--max-loras",
            str(s.max_loras),
            # Our parser (mcprl.model.chat_format.parse_tool_calls), so both paths read the same calls.
            "--enable-auto-tool-choice",
            "--tool-parser-plugin",
            str(TOOL_PARSER_PLUGIN),
            "--tool-call-parser",
            "mcprl",
            "--exclude-tools-when-tool-choice-none",
            # Same sampling semantics as the CPU engine: the logprob of each sampled token under the
            # distribution it was drawn from (after temperature and top-p; the trainer divides its
            # logits by the same temperature), and no sampling defaults from the model's
            # generation_config.json (a request without temperature samples at 1.0).
            "--logprobs-mode",
            "processed_logprobs",
            "--generation-config",
            "vllm",
            "--gpu-memory-utilization",
            f"{self.gpu_memory_utilization:.2f}",
            "--dtype",
            s.dtype,
            "--tensor-parallel-size",
            str(len(self.gpus)),
        ]
        if self.chat_template is not None:
            cmd += ["--chat-template", str(self.chat_template)]
        if self.sleep_mode:
            cmd.append("--enable-sleep-mode")
        if s.max_model_len is not None:
            cmd += ["--max-model-len", str(s.max_model_len)]
        if s.max_cpu_loras is not None:
            cmd += ["--max-cpu-loras", str(s.max_cpu_loras)]
        if s.max_num_seqs is not None:
            cmd += ["--max-num-seqs", str(s.max_num_seqs)]
        if s.enforce_eager:
            cmd.append("--enforce-eager")
        if s.enable_prefix_caching is not None:
            cmd.append("--enable-prefix-caching" if s.enable_prefix_caching else "--no-enable-prefix-caching")
        return cmd + s.extra_args

    def env(self, base: Mapping[str, str]) -> dict[str, str]:
        """The vLLM process's environment: `base` (our environment before Unsloth changed it) without
        Unsloth's own variables, plus what vLLM needs. vLLM's compile caches follow VLLM_CACHE_ROOT
        and FLASHINFER_WORKSPACE_BASE when set (default: under ~/.cache), so only a first start pays."""
        env = {k: v for k, v in base.items() if not k.startswith(UNSLOTH_PREFIXES)}
        env.setdefault("VLLM_LOGGING_LEVEL", "INFO")
        env["VLLM_CONFIGURE_LOGGING"] = "1"  # its INFO log is how a slow start shows what it is doing
        env["CUDA_VISIBLE_DEVICES"] = ",".join(self.gpus)
        env["VLLM_ALLOW_RUNTIME_LORA_UPDATING"] = "True"  # /v1/load_lora_adapter and /v1/unload_lora_adapter
        env["VLLM_API_KEY"] = self.api_key  # in the environment, not argv: `ps` shows argv
        if self.sleep_mode:
            env["VLLM_SERVER_DEV_MODE"] = "1"  # /sleep and /wake_up are development endpoints
        return env


def free_port(host: str) -> int:
    with socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET) as s:
        s.bind((host, 0))
        return s.getsockname()[1]


class VllmError(RuntimeError):
    """vLLM refused or failed a control call."""


class VllmProcess:
    """A running vLLM OpenAI-compatible endpoint (our subprocess, or any at `base_url`) and its control calls."""

    def __init__(
        self, base_url: str, api_key: str, process: subprocess.Popen | None = None, log_path: Path | None = None
    ):
        self.base_url = base_url.rstrip("/")
        self.api_key = api_key
        self.process = process
        self.log_path = log_path

    @classmethod
    def start(
        cls, command: list[str], env: Mapping[str, str], log_path: Path, base_url: str, api_key: str
    ) -> VllmProcess:
        """Start `command` in its own process group (vLLM forks engine workers), logging to `log_path`;
        on Linux it ends with the thread that started it (`DIE_WITH_PARENT`)."""
        log_path.parent.mkdir(parents=True, exist_ok=True)
        if sys.platform == "linux":
            command = [*DIE_WITH_PARENT, str(os.getpid()), *command]
        with log_path.open("wb") as log:
            proc = subprocess.Popen(
                command,
                env=dict(env),
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                start_new_session=True,
            )
        vllm = cls(base_url, api_key, proc, log_path)
        atexit.register(vllm.close)
        return vllm

    async def wait_ready(
        self, timeout_s: float, report: Callable[[str], None] | None = None, every_s: float = 15
    ) -> None:
        """Poll /health until it answers 200; fail at once if the process exits. Every `every_s`
        seconds, `report` gets how long it has been starting and vLLM's latest log line (a cold start
        takes minutes: torch.compile, CUDA graph capture, FlashInfer's JIT kernels)."""
        start = time.monotonic()
        deadline, next_report = start + timeout_s, start + every_s
        last_line, last_change = "", start
        async with httpx.AsyncClient(timeout=5) as client:
            while True:
                if report is not None and time.monotonic() >= next_report:
                    now = time.monotonic()
                    line = self.last_log_line()
                    if line != last_line:
                        last_line, last_change = line, now
                    quiet = f" (nothing logged for {now - last_change:.0f}s)" if now - last_change >= every_s else ""
                    report(f"vLLM starting, {now - start:.0f}s{quiet}: {line[:200]}")
                    next_report = now + every_s
                if self.process is not None and (rc := self.process.poll()) is not None:
                    raise UserError(
                        f"vLLM exited with code {rc} while starting: {self.last_log_line()} (log: {self.log_path})"
                    )
                try:
                    if (await client.get(f"{self.base_url}/health")).status_code == 200:
                        return
                except httpx.TransportError:
                    pass
                if time.monotonic() > deadline:
                    self.close()
                    raise UserError(
                        f"vLLM was not ready after {timeout_s:.0f}s; raise vllm.startup_timeout_s or see "
                        f"{self.log_path}"
                    )
                await anyio.sleep(0.5)

    def last_log_line(self) -> str:
        if self.log_path is None or not self.log_path.exists():
            return "no log"
        lines = [ln for ln in self.log_path.read_text(errors="replace").splitlines() if ln.strip()]
        return lines[-1].strip() if lines else "empty log"

    async def _call(self, method: str, path: str, *, timeout: float, **kwargs: Any) -> httpx.Response:
        headers = {"Authorization": f"Bearer {self.api_key}"}
        try:
            async with httpx.AsyncClient(timeout=timeout) as client:
                r = await client.request(method, f"{self.base_url}{path}", headers=headers, **kwargs)
        except httpx.TransportError as e:
            raise VllmError(f"vLLM at {self.base_url} did not answer {path}: {type(e).__name__}: {e}") from None
        if r.status_code != 200:
            try:
                body = r.json()
                err = body.get("error", body)
                message = err.get("message", str(err)) if isinstance(err, dict) else str(err)
            except ValueError:
                message = r.text
            raise VllmError(f"vLLM {path} failed ({r.status_code}): {message}")
        return r

    async def load_adapter(self, name: str, path: Path) -> None:
        """Serve the PEFT adapter at `path` as model `name` (the engine keeps running)."""
        await self._call("POST", "/v1/load_lora_adapter", json={"lora_name": name, "lora_path": str(path)}, timeout=600)

    async def unload_adapter(self, name: str) -> None:
        await self._call("POST", "/v1/unload_lora_adapter", json={"lora_name": name}, timeout=60)

    async def served_models(self) -> list[str]:
        r = await self._call("GET", "/v1/models", timeout=30)
        return [m["id"] for m in r.json()["data"]]

    async def sleep(self, level: int = 1) -> None:
        """Free the GPU for training: level 1 offloads the weights to CPU memory and drops the KV
        cache. mode=wait lets in-flight requests finish first; new ones queue until wake-up."""
        await self._call("POST", "/sleep", params={"level": level, "mode": "wait"}, timeout=1800)

    async def wake_up(self) -> None:
        """Reload the weights and the KV cache. vLLM answers 200 with an empty body, so whether it
        is awake is asked separately (`GET /is_sleeping`)."""
        await self._call("POST", "/wake_up", timeout=600)
        r = await self._call("GET", "/is_sleeping", timeout=60)
        try:
            asleep = r.json()["is_sleeping"]
        except (ValueError, KeyError, TypeError):
            raise VllmError(f'vLLM /is_sleeping answered {r.text[:200]!r}, not {{"is_sleeping": ...}}') from None
        if asleep:
            raise VllmError("vLLM still reports is_sleeping=true after /wake_up; see its log")

    def close(self) -> None:
        """Stop the subprocess and its workers (SIGTERM to its process group, SIGKILL after 30 s)."""
        proc, self.process = self.process, None
        if proc is None:
            return
        atexit.unregister(self.close)
        try:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGTERM)
                try:
                    proc.wait(timeout=30)
                except subprocess.TimeoutExpired:
                    pass
            os.killpg(proc.pid, signal.SIGKILL)  # workers that outlived the vLLM process hold GPU memory
        except ProcessLookupError:
            pass
        proc.wait(timeout=30)


class VllmEndpoint:
    """The GPU runtime's endpoint (`mcprl.backends.base.Endpoint`): vLLM steered through `vllm`.
    Where it shares the trainer's GPU (`shares_gpu`) it sleeps through each step at level 1."""

    reports_timings = True
    # vLLM applies a grammar's mask before it computes (processed) logprobs, so the trainer scores
    # constrained turns itself.
    masks_constrained_logprobs = True

    def __init__(self, vllm: VllmProcess, shares_gpu: bool):
        self.vllm = vllm
        self.shares_gpu = shares_gpu

    @property
    def base_url(self) -> str:
        return f"{self.vllm.base_url}/v1"

    @property
    def api_key(self) -> str:
        return self.vllm.api_key

    async def load_adapter(self, name: str, path: Path) -> None:
        await self.vllm.load_adapter(name, path)

    async def unload_adapter(self, name: str) -> None:
        await self.vllm.unload_adapter(name)

    async def sleep(self) -> bool:
        if self.shares_gpu:
            await self.vllm.sleep(level=1)
        return self.shares_gpu

    async def wake(self) -> None:
        await self.vllm.wake_up()

    def close(self) -> None:
        self.vllm.close()
