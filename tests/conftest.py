"""Shared fixtures. Sections are grouped by owner; append, don't reorder."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

# ---- environment: never touch the user's cache or the network -----------------------------
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
# Under pytest-xdist (`make test`), workers share the cores: each, and the subprocesses its tests
# start, gets its share of threads instead of all of them (oversubscribed torch threads spin).
if workers := os.environ.get("PYTEST_XDIST_WORKER_COUNT"):
    os.environ.setdefault("OMP_NUM_THREADS", str(max(1, (os.cpu_count() or 1) // int(workers))))
# Tests share one model cache (the pulled SmolLM2 is reused across runs), but every test that
# writes checkpoints points MCPRL_HOME at its own tmp dir through the `home` fixture.
SHARED_HOME = Path(os.environ.get("MCPRL_TEST_HOME", Path.home() / ".cache" / "mcprl"))


@pytest.fixture
def anyio_backend():
    return "asyncio"


# ---- spine: models ---------------------------------------------------------------------------
@pytest.fixture(scope="session")
def smollm2_dir() -> Path:
    """The real SmolLM2-135M (pulled and converted once into the shared cache)."""
    old = os.environ.get("MCPRL_HOME")
    os.environ["MCPRL_HOME"] = str(SHARED_HOME)
    try:
        from mcprl.model import weights

        return weights.pull("smollm2-135m")
    finally:
        if old is None:
            os.environ.pop("MCPRL_HOME", None)
        else:
            os.environ["MCPRL_HOME"] = old


@pytest.fixture(scope="session")
def tiny_model_dir(smollm2_dir: Path, tmp_path_factory) -> Path:
    """A tiny randomly initialised Llama with SmolLM2's tokenizer and our tool template."""
    import torch
    from transformers import AutoTokenizer, LlamaConfig, LlamaForCausalLM

    out = tmp_path_factory.mktemp("tiny-llama")
    tok = AutoTokenizer.from_pretrained(smollm2_dir)
    cfg = LlamaConfig(
        vocab_size=len(tok),
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=2048,
        bos_token_id=tok.bos_token_id,
        eos_token_id=tok.eos_token_id,
        pad_token_id=tok.pad_token_id,
        tie_word_embeddings=True,
    )
    from mcprl.model.chat_format import tool_template

    tok.chat_template = tool_template()
    torch.manual_seed(0)
    LlamaForCausalLM(cfg).save_pretrained(out)
    tok.save_pretrained(out)
    return out


@pytest.fixture
def home(tmp_path, monkeypatch) -> Path:
    """A private MCPRL_HOME for checkpoints and runs."""
    monkeypatch.setenv("MCPRL_HOME", str(tmp_path / "home"))
    return tmp_path / "home"


# ---- mcp client and shipped servers (tests/tools/test_mcp_*.py, tests/servers/test_servers_*.py) ---------
REPO = Path(__file__).resolve().parents[1]
MCP1_VENV = REPO / ".venv-mcp1"


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait_listening(proc, port: int, timeout: float = 30.0) -> None:
    import socket
    import time

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"server exited with {proc.returncode} before listening on {port}")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
            return
        except OSError:
            time.sleep(0.1)
    raise RuntimeError(f"server not listening on {port} after {timeout} s")


class RunningServer:
    """A shipped server started as a subprocess on a free localhost port."""

    def __init__(self, proc, url: str) -> None:
        self.proc, self.url = proc, url

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait(timeout=10)


@pytest.fixture
def serve_http():
    """`serve_http("inventory", "http"|"sse", python=..., port=...)` -> RunningServer; all killed after the test."""
    import subprocess
    import sys

    started: list[RunningServer] = []

    def start(
        name: str, transport: str = "http", python: str = sys.executable, port: int | None = None
    ) -> RunningServer:
        port = port or _free_port()
        proc = subprocess.Popen(
            [python, "-m", f"mcprl.servers.{name}", "--transport", transport, "--port", str(port)],
            cwd=REPO,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        server = RunningServer(proc, f"http://127.0.0.1:{port}/{'mcp' if transport == 'http' else 'sse'}")
        started.append(server)
        _wait_listening(proc, port)
        return server

    yield start
    for server in started:
        server.kill()


@pytest.fixture(scope="session")
def mcp1_python() -> Path:
    """A python with mcp 1.x (the previous SDK generation) in /work/main/.venv-mcp1, made if missing."""
    import subprocess
    import sys

    python = MCP1_VENV / "bin" / "python"
    check = [str(python), "-c", "import mcp.server.fastmcp"]
    if python.exists() and subprocess.run(check, capture_output=True).returncode == 0:
        return python
    made = subprocess.run([sys.executable, "-m", "venv", str(MCP1_VENV)], capture_output=True, text=True)
    if made.returncode != 0:
        pytest.skip(f"cannot create {MCP1_VENV}: {made.stderr.strip()[-300:]}")
    pip = subprocess.run([str(python), "-m", "pip", "install", "-q", "mcp>=1.24,<2"], capture_output=True, text=True)
    if pip.returncode != 0 or subprocess.run(check, capture_output=True).returncode != 0:
        pytest.skip(f"pip install 'mcp>=1.24,<2' failed: {pip.stderr.strip()[-300:]}")
    return python


# ---- test servers' processes (tests/server_fork.py) --------------------------------------------
@pytest.fixture(scope="session", autouse=True)
def fork_server():
    """One process per test session that has imported the MCP SDK, from which the test servers of tests/data
    (which call `server_fork.hand_over()` first) are forked instead of each paying the imports anew."""
    import sys
    import time

    from tests.server_fork import PRELOAD, _socket_path, start

    proc = start(sys.executable, PRELOAD)
    # every test's servers forked, not only those started once it has made its imports
    deadline = time.monotonic() + 60
    while not os.path.exists(_socket_path(os.getpid())) and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    yield proc
    proc.terminate()
    proc.wait(timeout=30)
