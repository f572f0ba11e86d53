"""`python -m vllm.entrypoints.cli.main serve MODEL ...` where vLLM cannot run (no GPU), on PYTHONPATH
in the tests that need a vLLM process: our CPU engine behind our endpoint, with what mcprl asks of vLLM
besides chat completions: `/health`, runtime LoRA loading (`/v1/load_lora_adapter`,
`/v1/unload_lora_adapter`, vLLM's request and error shapes), the key from VLLM_API_KEY. It also answers
`GET /standin/launch`: the command line and the CUDA_VISIBLE_DEVICES it was started with, and its pid."""

from __future__ import annotations

import argparse
import os
import sys


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("command", choices=["serve"])
    parser.add_argument("model")
    parser.add_argument("--served-model-name", required=True)
    parser.add_argument("--host", required=True)
    parser.add_argument("--port", type=int, required=True)
    args, _ = parser.parse_known_args()

    import uvicorn
    from fastapi.responses import JSONResponse

    from mcprl.serving.app import create_app
    from mcprl.serving.engine import Engine

    engine = Engine(args.model, served_name=args.served_model_name)
    app = create_app(engine, os.environ["VLLM_API_KEY"])

    @app.post("/v1/load_lora_adapter")
    async def load(request: dict):
        try:
            engine.load_adapter(request["lora_name"], request["lora_path"])
        except Exception as e:
            return JSONResponse(
                {"error": {"message": f"Loading lora {request['lora_name']} failed: {e}", "code": 404}}, status_code=404
            )
        return f"Success: LoRA adapter '{request['lora_name']}' added successfully."

    @app.post("/v1/unload_lora_adapter")
    async def unload(request: dict):
        if request["lora_name"] not in engine.adapters:
            return JSONResponse(
                {"error": {"message": f"The lora adapter '{request['lora_name']}' cannot be found.", "code": 404}},
                status_code=404,
            )
        engine.unload_adapter(request["lora_name"])
        return f"Success: LoRA adapter '{request['lora_name']}' removed successfully."

    @app.get("/standin/launch")
    async def launch():
        return {
            "argv": sys.argv[1:],
            "cuda_visible_devices": os.environ.get("CUDA_VISIBLE_DEVICES"),
            "pid": os.getpid(),
        }

    print(f"INFO stand-in vLLM serving {args.model} on {args.host}:{args.port}", flush=True)
    uvicorn.run(app, host=args.host, port=args.port, log_level="warning")


if __name__ == "__main__":
    main()
