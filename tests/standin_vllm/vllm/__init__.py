"""A stand-in for vLLM where it cannot run (no GPU): see tests/standin_vllm/vllm/entrypoints/cli/main.py."""
