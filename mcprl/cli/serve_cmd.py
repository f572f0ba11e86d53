"""`mcprl serve`: the policy endpoint as a standalone OpenAI-compatible server."""

from __future__ import annotations

from pathlib import Path

import typer

from mcprl.serving.protocol import ServeLimits
from mcprl.train.checkpoints import adapter_name


def _limit(name: str):
    """The flag of the ServeLimits field `name`: its default and description."""
    field = ServeLimits.model_fields[name]
    return typer.Option(
        field.default, ServeLimits.flag(name), help=field.description, rich_help_panel="Limits per request"
    )


def serve(
    model: str = typer.Option("smollm2-135m", "--model", help="alias, local directory or Hugging Face id"),
    adapter: list[Path] = typer.Option(
        [], "--adapter", help="PEFT adapter dir to serve (a checkpoint dir serves as NAME@STEP); repeatable"
    ),
    host: str = typer.Option("127.0.0.1", help="interface to bind; the default is loopback only"),
    port: int = typer.Option(8000, help="port to listen on"),
    api_key: str | None = typer.Option(
        None,
        "--api-key",
        envvar="MCPRL_API_KEY",
        help="require 'Authorization: Bearer KEY' on every path but /health; "
        "prefer the MCPRL_API_KEY variable (a flag shows in `ps`)",
    ),
    max_batch_rows: int = typer.Option(32, help="most sequences sampled in one batch"),
    max_body_bytes: int = _limit("max_body_bytes"),
    max_messages: int = _limit("max_messages"),
    max_prompt_tokens: int | None = _limit("max_prompt_tokens"),
    max_tokens_limit: int = _limit("max_tokens_limit"),
    max_n: int = _limit("max_n"),
    max_request_tokens: int = _limit("max_request_tokens"),
    max_batch_tokens: int = _limit("max_batch_tokens"),
    max_schema_bytes: int = _limit("max_schema_bytes"),
    max_schema_depth: int = _limit("max_schema_depth"),
) -> None:
    """Serve a model (and its LoRA adapters) over OpenAI's chat-completions API."""
    # Lazy: loaded when the command runs, so that `mcprl --help` stays fast
    import uvicorn

    from mcprl.serving.app import create_app
    from mcprl.serving.engine import Engine
    from mcprl.serving.local import SHUTDOWN_GRACE_S, check_port_free

    values = locals()
    limits = ServeLimits(**{name: values[name] for name in ServeLimits.model_fields})
    check_port_free(host, port)
    engine = Engine(model, max_batch_rows=max_batch_rows, limits=limits)
    for a in adapter:
        engine.load_adapter(adapter_name(a), a)
    print(f"serving {', '.join(engine.served_models())} at http://{host}:{port}/v1", flush=True)
    uvicorn.run(
        create_app(engine, api_key),
        host=host,
        port=port,
        log_level="warning",
        timeout_graceful_shutdown=SHUTDOWN_GRACE_S,
    )
