"""The slice of OpenAI's chat-completions API the policy endpoint speaks, plus vLLM's
`return_token_ids` extension (top-level `prompt_token_ids`, per-choice `token_ids`)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator


class JsonSchemaFormat(BaseModel):
    model_config = ConfigDict(populate_by_name=True)

    name: str = Field(min_length=1)
    description: str | None = None
    schema_: dict[str, Any] = Field(alias="schema")
    strict: bool | None = None


class TaggedStructure(BaseModel):
    """A structure inside free text: `begin`, then JSON valid against `schema`, then `end`."""

    model_config = ConfigDict(populate_by_name=True)

    begin: str = Field(min_length=1)
    schema_: dict[str, Any] = Field(alias="schema")
    end: str = ""


class ResponseFormat(BaseModel):
    """OpenAI's `response_format`, plus vLLM's `structural_tag` (free text, where each trigger
    starts one of the `structures`); enforced by grammar-constrained decoding (serving/structured.py)."""

    type: Literal["text", "json_object", "json_schema", "structural_tag"]
    json_schema: JsonSchemaFormat | None = None
    structures: list[TaggedStructure] | None = None
    triggers: list[str] | None = None

    @model_validator(mode="after")
    def _schema_given(self) -> ResponseFormat:
        if self.type == "json_schema" and self.json_schema is None:
            raise ValueError('type "json_schema" needs json_schema: {"name": ..., "schema": {...}}')
        if self.type == "structural_tag":
            if not self.structures or not self.triggers:
                raise ValueError(
                    'type "structural_tag" needs structures: [{"begin", "schema", "end"}] and triggers: [...]'
                )
            for i, s in enumerate(self.structures):
                if not any(s.begin.startswith(t) for t in self.triggers if t):
                    raise ValueError(
                        f"structures[{i}].begin {s.begin!r} starts with none of the triggers {self.triggers}"
                    )
        return self

    @property
    def is_json(self) -> bool:
        """The whole reply is one JSON value (no room for tool calls)."""
        return self.type in ("json_object", "json_schema")


class ChatRequest(BaseModel):
    # Unknown OpenAI fields (user, parallel_tool_calls, ...) are accepted and ignored.
    model_config = ConfigDict(extra="allow")

    model: str
    messages: list[dict[str, Any]] = Field(min_length=1)
    tools: list[dict[str, Any]] | None = None
    tool_choice: Literal["auto", "none"] | dict[str, Any] | str | None = None
    n: int = Field(default=1, ge=1)  # at most ServeLimits.max_n
    temperature: float = Field(default=1.0, ge=0.0, le=2.0)
    top_p: float = Field(default=1.0, gt=0.0, le=1.0)
    # vLLM's extensions, reproduced by the trainer (mcprl.serving.logits.truncation_cut); 0 or -1: no top-k.
    top_k: int = Field(default=0, ge=-1)
    min_p: float = Field(default=0.0, ge=0.0, le=1.0)
    # Accepted at their neutral values only: the trainer does not reproduce history-dependent penalties.
    presence_penalty: float = 0.0
    frequency_penalty: float = 0.0
    repetition_penalty: float = 1.0
    max_tokens: int | None = Field(default=None, ge=1)
    max_completion_tokens: int | None = Field(default=None, ge=1)
    stop: str | list[str] | None = None
    seed: int | None = Field(
        default=None, ge=-(2**63), le=2**63 - 1
    )  # what torch's generators take (seed + k for row k)
    logprobs: bool = False
    top_logprobs: int | None = None
    return_token_ids: bool = False
    stream: bool = False
    response_format: ResponseFormat | None = None

    @field_validator("messages")
    @classmethod
    def _roles(cls, messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
        for i, m in enumerate(messages):
            if m.get("role") not in {"system", "user", "assistant", "tool", "developer"}:
                raise ValueError(f"messages[{i}].role must be system, user, assistant or tool")
        return messages

    @field_validator("presence_penalty", "frequency_penalty", "repetition_penalty")
    @classmethod
    def _neutral_penalty(cls, v: float, info) -> float:
        neutral = 1.0 if info.field_name == "repetition_penalty" else 0.0
        if v != neutral:
            raise ValueError(
                f"sampling penalties are not reproduced by the trainer, so it would train on another "
                f"distribution than the one sampled; leave {info.field_name} at {neutral:g}"
            )
        return v

    @property
    def stops(self) -> list[str]:
        return [self.stop] if isinstance(self.stop, str) else list(self.stop or [])

    def max_new_tokens(self, default: int) -> int:
        return self.max_completion_tokens or self.max_tokens or default


class ServeLimits(BaseModel):
    """Bounds on the work and memory one request may cost the endpoint, each checked before that
    work starts; a request over one gets a 400 naming it and its `mcprl serve` flag. The token
    budgets bound the KV cache: a batch holds rows x (longest prompt + largest max_tokens) tokens
    (SmolLM2-135M: 23 KB a token in bfloat16, 46 KB in float32)."""

    model_config = ConfigDict(extra="forbid")

    max_body_bytes: int = Field(default=8 * 2**20, ge=1, description="largest request body, in bytes")
    max_messages: int = Field(default=1024, ge=1, description="most messages in one request")
    max_prompt_tokens: int | None = Field(
        default=None, ge=1, description="longest prompt in tokens (default: the model's context)"
    )
    max_tokens_limit: int = Field(default=4096, ge=1, description="largest max_tokens a request may ask for")
    max_n: int = Field(default=64, ge=1, description="most completions (n) in one request")
    # 20,480 tokens of SmolLM2-135M's float32 KV cache are 0.9 GB, beside ~0.9 GB of weights and
    # runtime (the soak that set these budgets: docs/reliability.md)
    max_request_tokens: int = Field(
        default=20480, ge=1, description="most tokens one request may hold: n x (prompt + max_tokens)"
    )
    max_batch_tokens: int = Field(
        default=20480, ge=1, description="most tokens one batch may hold: rows x (longest prompt + largest max_tokens)"
    )
    max_schema_bytes: int = Field(default=128 * 2**10, ge=1, description="largest response_format, in bytes of JSON")
    max_schema_depth: int = Field(default=64, ge=1, description="deepest nesting of a response_format's JSON")

    @staticmethod
    def flag(name: str) -> str:
        return "--" + name.replace("_", "-")

    def refuse(self, name: str, what: str) -> str:
        """The one-line refusal for a request over the limit `name`."""
        return (
            f"{what} is over this server's limit {name}={getattr(self, name)} "
            f"(raised with `mcprl serve {self.flag(name)}`)"
        )


def error_body(
    message: str, kind: str = "invalid_request_error", param: str | None = None, code: str | None = None
) -> dict:
    return {"error": {"message": message, "type": kind, "param": param, "code": code}}
