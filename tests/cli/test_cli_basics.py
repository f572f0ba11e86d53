"""The CLI as a user meets it: instant help, models, serve, one-line errors."""

import os
import socket
import subprocess
import sys
import time

import httpx


def run(*args, env=None, timeout=120):
    return subprocess.run(
        [sys.executable, "-m", "mcprl.cli", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, **(env or {})},
    )


def test_help_imports_nothing_heavy():
    code = (
        "import sys, mcprl.cli.main; "
        "heavy = {'torch', 'transformers', 'litellm', 'langgraph', 'peft'} & set(sys.modules); print(sorted(heavy))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    assert out == "[]"
    r = run("--help")
    assert r.returncode == 0 and "train" in r.stdout and "autorl" in r.stdout


def test_models_list_shows_the_alias(smollm2_dir):
    r = run("models", "list", env={"MCPRL_HOME": str(smollm2_dir.parent.parent)})
    assert r.returncode == 0 and "smollm2-135m" in r.stdout and "yes" in r.stdout


def test_unknown_model_spec_is_one_line(tmp_path):
    r = run("serve", "--model", "no-such-model", "--port", "0", env={"MCPRL_HOME": str(tmp_path)})
    assert (
        r.returncode == 2
        and r.stderr.strip().startswith("error: unknown model 'no-such-model'")
        and "Traceback" not in r.stderr
    )


def test_serve_answers_and_enforces_its_key(tiny_model_dir):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    p = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "mcprl.cli",
            "serve",
            "--model",
            str(tiny_model_dir),
            "--port",
            str(port),
            "--api-key",
            "k3y",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        url = f"http://127.0.0.1:{port}/v1"
        for _ in range(300):
            try:
                r = httpx.get(f"{url}/models", headers={"Authorization": "Bearer k3y"}, timeout=1)
                break
            except httpx.HTTPError:
                time.sleep(0.2)
        assert r.status_code == 200 and r.json()["data"][0]["id"] == str(tiny_model_dir)
        assert httpx.get(f"{url}/models", timeout=5).status_code == 401
        # a second server on the same port: one line, exit 2
        busy = run("serve", "--model", str(tiny_model_dir), "--port", str(port))
        assert busy.returncode == 2 and f"port {port}" in busy.stderr and "busy" in busy.stderr
    finally:
        p.terminate()
        p.wait(timeout=30)
