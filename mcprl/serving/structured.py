"""Structured outputs: OpenAI's `response_format` enforced by grammar-constrained decoding.

llguidance (the library vLLM's `guidance` backend uses) turns a JSON Schema into a grammar and,
at each decoding step, into the set of tokens that can come next; the sampler sets every other
token's logit to -inf before it computes probabilities. Why llguidance and not xgrammar or
outlines-core: docs/benchmarks.md, "Structured outputs".

Rules (also in docs/benchmarks.md, "Structured outputs"):
- The JSON is written on one line with `", "` and `": "` between items (no free whitespace, so a
  small model cannot wander off into blank space).
- `strict: true`: a schema keyword llguidance does not implement (`not`, `if`/`then`, ...) is a
  400. Otherwise such keywords are ignored (the output may then break them) and logged.
- An object schema with `properties` and no `additionalProperties` allows no other keys (as
  vLLM's default xgrammar backend and OpenAI's strict mode do; plain JSON Schema would allow
  them, and a small model then invents keys until the budget ends). Say
  `"additionalProperties": true` to allow them.
- The end-of-sequence token is allowed only where the grammar accepts, so a complete answer ends
  with finish_reason "stop"; a budget that runs out first gives "length" and an incomplete text.
- `structural_tag` (vLLM's): free text, until a trigger is written; from there the text must
  complete one of the structures that begin with it (its begin string, JSON valid against its
  schema, its end string), then free text again. llguidance's `StructTag` builds the grammar
  (lazy lexemes: the trigger is matched on the decoded text, however it is tokenized). Its
  schemas are always lenient: they are tools' input schemas, written by the tools' authors.
- Logprobs stay those of the model's own distribution (see `mcprl.serving.sampler`): the grammar
  decides which tokens can be drawn, not what they are recorded as.
"""

from __future__ import annotations

import functools
import json
import logging
from typing import Any

import jsonschema
import llguidance
import llguidance.hf
import torch

from mcprl.serving.protocol import ResponseFormat

log = logging.getLogger(__name__)

COMPILE_TIMEOUT_S = 10.0  # llguidance's own fuel limits end pathological schemas well before this
JSON_OPTIONS = {"item_separator": ", ", "key_separator": ": ", "whitespace_flexible": False}
_SHIFTS = torch.arange(32, dtype=torch.int32)


class SchemaError(ValueError):
    """A response_format that cannot be enforced; the message says why (an HTTP 400)."""


class Constraint:
    """One row's grammar state: which tokens may come next, advanced with each sampled token."""

    def __init__(self, matcher: llguidance.LLMatcher, eos_ids: list[int]):
        self.matcher = matcher
        self.eos_ids = eos_ids

    def advance(self, token: int) -> None:
        # A rejected token (only possible through float rounding at the CDF's very end) leaves the
        # matcher in its error state, where `allowed_tokens` allows only eos: the row then stops.
        self.matcher.consume_token(token)


class Grammars:
    """Compile `response_format`s for one tokenizer, caching compiled grammars by format."""

    def __init__(self, tokenizer, eos_ids: set[int], vocab_size: int):
        self.tokenizer = tokenizer
        self.eos_ids = sorted(eos_ids)
        self.vocab_size = vocab_size
        self._matcher = functools.lru_cache(maxsize=256)(self._compile)

    @functools.cached_property
    def lltokenizer(self) -> llguidance.LLTokenizer:
        """The model's own HF tokenizer as llguidance sees it (~0.5 s to build, so once)."""
        return llguidance.hf.from_tokenizer(self.tokenizer, n_vocab=self.vocab_size, eos_token=self.eos_ids)

    def compile(self, fmt: ResponseFormat) -> Constraint | None:
        """The constraint for `fmt` in its start state, to `fork` for each row (None for type "text");
        SchemaError if the schema is unusable. Checks, grammar and matcher are cached by the format
        as sent (key order kept: the grammar writes properties in that order), so a rollout's turns,
        which all send the same tools, pay for them once."""
        if fmt.type == "text":
            return None
        return Constraint(self._matcher(fmt.model_dump_json(by_alias=True, exclude_none=True)), self.eos_ids)

    @staticmethod
    def fork(constraint: Constraint | None) -> Constraint | None:
        """A row's own copy of a start-state constraint (each sample walks the grammar on its own)."""
        return None if constraint is None else Constraint(constraint.matcher.deep_copy(), constraint.eos_ids)

    def _compile(self, fmt_json: str) -> llguidance.LLMatcher:
        fmt = ResponseFormat.model_validate_json(fmt_json)
        strict = False
        if fmt.type == "structural_tag":
            source, kind = self._tags_grammar(fmt), "lark"
        else:
            schema: dict[str, Any] = {"type": "object"}  # json_object
            if fmt.type == "json_schema":
                assert fmt.json_schema is not None  # the protocol model requires it for this type
                schema, strict = fmt.json_schema.schema_, bool(fmt.json_schema.strict)
                check_schema(schema)
                schema = closed_objects(schema)
            source, kind = json.dumps(schema), "json"
        try:
            if kind == "lark":
                grammar = llguidance.LLMatcher.grammar_from_lark(source)
            else:
                grammar = llguidance.LLMatcher.grammar_from_json_schema(
                    source, defaults={**JSON_OPTIONS, "lenient": not strict}
                )
        except ValueError as e:
            raise SchemaError(f"response_format schema: {e}") from None
        matcher = llguidance.LLMatcher(self.lltokenizer, grammar, log_level=0)
        if matcher.is_error():
            hint = "" if strict else "; simplify the schema"
            raise SchemaError(f"response_format schema cannot be enforced: {matcher.get_error()}{hint}")
        if warnings := matcher.get_grammar_warnings():
            log.warning("response_format: %s (ignored; output may not satisfy them)", "; ".join(warnings))
        return matcher

    def _tags_grammar(self, fmt: ResponseFormat) -> str:
        """The Lark grammar of a structural_tag format: free text and the tagged structures, each
        schema checked first. Its schemas are always lenient (tools' input schemas)."""
        assert fmt.structures and fmt.triggers  # the protocol model requires them for this type
        for i, st in enumerate(fmt.structures):
            check_schema(st.schema_, where=f"response_format.structures[{i}].schema")
        triggers = sorted(fmt.triggers, key=len, reverse=True)  # the longest trigger a begin starts with
        tags = [
            llguidance.StructTag(
                trigger=next(t for t in triggers if st.begin.startswith(t)),
                begin=st.begin,
                end=st.end,
                grammar={**closed_objects(st.schema_), "x-guidance": {**JSON_OPTIONS, "lenient": True}},
            )
            for st in fmt.structures
        ]
        # A trigger that is one special token (Llama's <|python_tag|>) is matched as that token;
        # otherwise as text, which is how a tool-less template's `<tool_call>` comes out.
        special = set(self.tokenizer.all_special_tokens)
        return llguidance.StructTag.to_grammar(tags, assume_special=any(t in special for t in triggers))


def json_depth(value: Any) -> int:
    """How deeply `value`'s lists and objects nest (a scalar is 0), without recursion: a hostile
    schema may nest deeper than Python's stack."""
    deepest, stack = 0, [(value, 1)] if isinstance(value, (dict, list)) else []
    while stack:
        v, depth = stack.pop()
        deepest = max(deepest, depth)
        for c in v.values() if isinstance(v, dict) else v:
            if isinstance(c, (dict, list)):
                stack.append((c, depth + 1))
    return deepest


def check_schema(schema: dict[str, Any], where: str = "response_format.json_schema.schema") -> None:
    """SchemaError unless `schema` is valid against its own draft's meta-schema (2020-12 by default)."""
    cls = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
    try:
        cls.check_schema(schema)
    except jsonschema.SchemaError as e:
        at = "/".join(str(p) for p in e.absolute_path) or "(root)"
        raise SchemaError(f"{where} is not a valid JSON Schema at {at}: {e.message}") from None


_SCHEMA_MAPS = ("properties", "patternProperties", "$defs", "definitions", "dependentSchemas")
_SCHEMA_LISTS = ("anyOf", "allOf", "oneOf", "prefixItems")
_SCHEMA_ONE = ("items", "additionalProperties", "contains", "not", "if", "then", "else", "propertyNames")


def closed_objects(schema: Any) -> Any:
    """A copy of `schema` where every object schema that lists `properties` and says nothing about
    other keys gets `additionalProperties: false`."""
    if not isinstance(schema, dict):
        return schema
    out = dict(schema)
    for key in _SCHEMA_MAPS:
        if isinstance(out.get(key), dict):
            out[key] = {name: closed_objects(sub) for name, sub in out[key].items()}
    for key in _SCHEMA_LISTS:
        if isinstance(out.get(key), list):
            out[key] = [closed_objects(sub) for sub in out[key]]
    for key in _SCHEMA_ONE:
        if key in out:
            out[key] = closed_objects(out[key])
    if "properties" in out and not {"additionalProperties", "patternProperties", "unevaluatedProperties"} & out.keys():
        out["additionalProperties"] = False
    return out


def allowed_tokens(constraints: list[Constraint | None], vocab: int) -> torch.Tensor:
    """[rows, vocab] bool: the tokens each row's grammar allows next (all of them in a row without one)."""
    words = (vocab + 31) // 32
    bitmask = torch.full((len(constraints), words), -1, dtype=torch.int32)  # unconstrained rows: all allowed
    # One row at a time: llguidance's thread-pool variant was slower on a few shared cores.
    for i, c in enumerate(constraints):
        if c is not None:
            c.matcher.unsafe_compute_mask_ptr(bitmask[i].data_ptr(), words * 4)  # bit t of the row: token t allowed
    allowed = ((bitmask.unsqueeze(-1) >> _SHIFTS) & 1).view(len(constraints), -1)[:, :vocab].bool()
    for i, c in enumerate(constraints):
        if c is not None and c.matcher.is_error():  # see Constraint.advance
            allowed[i] = False
            allowed[i, c.eos_ids] = True
    return allowed
