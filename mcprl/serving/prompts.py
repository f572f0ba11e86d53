"""Prompt rendering that keeps earlier turns token-exact.

Re-rendering a conversation through the chat template re-tokenizes earlier assistant turns,
which need not give back the tokens that were sampled (JSON spacing, BPE merges, truncated
replies). The endpoint remembers the completion tokens it produced for each assistant message
it returned; when a later request carries that message again, its sampled tokens are spliced in
verbatim. Then a turn's prompt extends the previous prompt+completion token for token, and
the trainer can merge the whole episode into one sequence trained on exactly what was sampled.
"""

from __future__ import annotations

import json
from collections import OrderedDict
from threading import Lock
from typing import Any

SENTINEL = "\u2063MCPRL_TURN_{}\u2063"


def message_key(message: dict[str, Any]) -> str:
    """What identifies an assistant message across re-serialisation by clients."""
    calls = []
    for tc in message.get("tool_calls") or []:
        fn = tc.get("function", tc)
        args = fn.get("arguments")
        if isinstance(args, str):
            try:
                args = json.loads(args)
            except json.JSONDecodeError:
                pass
        calls.append([fn.get("name"), args])
    return json.dumps([(message.get("content") or "").strip(), calls], sort_keys=True, ensure_ascii=False)


class TurnCache:
    """Bounded LRU of assistant message key -> the completion token ids that produced it."""

    def __init__(self, capacity: int = 20_000):
        self._items: OrderedDict[str, list[int]] = OrderedDict()
        self._capacity = capacity
        self._lock = Lock()

    def put(self, message: dict[str, Any], token_ids: list[int]) -> None:
        with self._lock:
            key = message_key(message)
            self._items[key] = token_ids
            self._items.move_to_end(key)
            while len(self._items) > self._capacity:
                self._items.popitem(last=False)

    def get(self, message: dict[str, Any]) -> list[int] | None:
        with self._lock:
            return self._items.get(message_key(message))


def render_prompt(tokenizer, messages: list[dict[str, Any]], tools: list[dict] | None, cache: TurnCache | None) -> list[int]:
    """Token ids of the prompt for the next assistant turn."""
    spliced: list[list[int]] = []
    msgs = []
    for m in messages:
        m = dict(m)
        if m.get("role") == "developer":
            m["role"] = "system"
        ids = cache.get(m) if cache is not None and m.get("role") == "assistant" else None
        if ids is not None:
            m = {"role": "assistant", "content": SENTINEL.format(len(spliced))}
            spliced.append(ids)
        elif isinstance(m.get("content"), list):  # OpenAI content parts -> text
            m["content"] = "".join(p.get("text", "") for p in m["content"] if isinstance(p, dict))
        msgs.append(m)
    text = tokenizer.apply_chat_template(msgs, tools=tools or None, tokenize=False, add_generation_prompt=True)
    if not spliced:
        return tokenizer(text, add_special_tokens=False)["input_ids"]
    out: list[int] = []
    eos = tokenizer.eos_token or ""
    for i, ids in enumerate(spliced):
        before, text = text.split(SENTINEL.format(i), 1)
        out += tokenizer(before, add_special_tokens=False)["input_ids"]
        out += ids
        # The sampled completion already ends with the end-of-turn token the template would add.
        if eos and ids and ids[-1] == tokenizer.eos_token_id and text.startswith(eos):
            text = text[len(eos) :]
    out += tokenizer(text, add_special_tokens=False)["input_ids"]
    return out
