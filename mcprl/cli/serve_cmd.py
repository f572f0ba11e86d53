"""`mcprl serve`: the policy endpoint as a standalone OpenAI-compatible server."""

from __future__ import annotations

from pathlib import Path

import typer


def serve(
    model: str = typer.Option("smollm2-135m", "--model", help="alias, local directory or Hugging Face id"),
    adapter: list[Path] = typer.Option([], "--adapter", help="PEFT adapter dir to serve (a checkpoint dir serves as NAME@STEP); repeatable"),
    host: str = typer.Option("127.0.0.1", help="interface to bind; the default is loopback only"),
    port: int = typer.Option(8000, help="port to listen on"),
    api_key: str | None = typer.Option(None, "--api-key", envvar="MCPRL_API_KEY", help="require 'Authorization: Bearer KEY'"),
    max_batch_rows: int = typer.Option(32, help="most sequences sampled in one batch"),
) -> None:
    """Serve a model (and its LoRA adapters) over OpenAI's chat-completions API."""
    import uvicorn

    from mcprl.serving.app import create_app
    from mcprl.serving.engine import Engine
    from mcprl.serving.local import check_port_free
    from mcprl.train.checkpoints import adapter_name

    check_port_free(host, port)
    engine = Engine(model, max_batch_rows=max_batch_rows)
    for a in adapter:
        engine.load_adapter(adapter_name(a), a)
    print(f"serving {', '.join(engine.served_models())} at http://{host}:{port}/v1")
    uvicorn.run(create_app(engine, api_key), host=host, port=port, log_level="warning")
