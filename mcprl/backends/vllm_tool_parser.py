"""vLLM tool-parser plugin: the GPU path parses tool calls with the CPU path's parser.

vLLM loads this file in its own process (`vllm serve --tool-parser-plugin THIS_FILE
--tool-call-parser mcprl`, see `gpu_serving.VllmLaunch`); mcprl never imports it. The parser is
vLLM's hermes parser (request handling, streaming) with the non-streaming extraction replaced by
`mcprl.model.chat_format.parse_tool_calls`, which also takes what vLLM's rejects: a JSON value followed by
prose ("Extra data"), `parameters` for `arguments`, arguments given as a JSON string. Text that does
not parse stays as content, as on CPU. Streamed replies still go through the hermes parser.
"""

from __future__ import annotations

try:  # vLLM >= 0.12
    from vllm.tool_parsers import ToolParserManager
    from vllm.tool_parsers import hermes_tool_parser as hermes
except ImportError:  # older releases kept the parsers under the OpenAI entrypoint
    from vllm.entrypoints.openai.tool_parsers import ToolParserManager
    from vllm.entrypoints.openai.tool_parsers import hermes_tool_parser as hermes

from mcprl.model.chat_format import parse_tool_calls


def extract(model_output: str):
    """`parse_tool_calls` as vLLM's `ExtractedToolCallInformation` (the protocol classes the hermes
    parser of this vLLM release uses: their module moved between releases)."""
    parsed = parse_tool_calls(model_output)
    calls = [
        hermes.ToolCall(
            id=c["id"],
            type="function",
            function=hermes.FunctionCall(name=c["function"]["name"], arguments=c["function"]["arguments"]),
        )
        for c in parsed.tool_calls
    ]
    return hermes.ExtractedToolCallInformation(
        tools_called=bool(calls), tool_calls=calls, content=(parsed.content or None) if calls else model_output
    )


class McprlToolParser(hermes.Hermes2ProToolParser):
    def extract_tool_calls(self, model_output, request):
        return extract(model_output)


ToolParserManager.register_module("mcprl", module=McprlToolParser)
