"""Prompt rendering that keeps earlier turns token-exact.

Re-rendering a conversation through the chat template re-tokenizes earlier assistant turns,
which need not give back the tokens that were sampled (JSON spacing, BPE merges, truncated
replies). The endpoint remembers the completion tokens it produced for each assistant message
it returned; when a later request carries that message again, its sampled tokens are spliced in
verbatim. Then a turn's prompt extends the previous prompt+completion token for token, and
the trainer can merge the whole episode into one sequence trained on exactly what was sampled.

A message is recognised together with the conversation before it, never by its text alone: a
demonstration written into every prompt (an example call `add(3, 4)`) must not pick up the tokens
of a sampled reply that happened to parse to the same call in another conversation (trailing
text and all), which would then sit in every later prompt.
"""

from __future__ import annotations

import hashlib
import json
from collections import OrderedDict
from threading import Lock
from typing import Any

from mcprl.types import content_text, message_key

SENTINEL = "\u2063MCPRL_TURN_{}\u2063"


def turn_keys(messages: list[dict[str, Any]]) -> list[str]:
    """The key of each message in its conversation: a digest of it and every message before it
    (role and text; assistant messages by `message_key`). One running hash, so a conversation's
    keys cost time linear in its length."""
    running, keys = hashlib.sha256(), []
    for m in messages:
        part = message_key(m) if m.get("role") == "assistant" else content_text(m.get("content"))
        running.update(
            json.dumps([m.get("role"), part], ensure_ascii=False).encode() + b"\n"
        )  # JSON has no raw newline
        keys.append(running.copy().hexdigest())
    return keys


class TurnCache:
    """Bounded LRU of `turn_key` (an assistant message in its conversation) -> the completion token
    ids that produced it."""

    def __init__(self, capacity: int = 20_000):
        self._items: OrderedDict[str, list[int]] = OrderedDict()
        self._capacity = capacity
        self._lock = Lock()

    def put(self, before: list[dict[str, Any]], message: dict[str, Any], token_ids: list[int]) -> None:
        """Remember `message`, sampled as the reply to the conversation `before`."""
        key = turn_keys([*before, message])[-1]  # message is an assistant message
        with self._lock:
            self._items[key] = token_ids
            self._items.move_to_end(key)
            while len(self._items) > self._capacity:
                self._items.popitem(last=False)

    def get(self, key: str) -> list[int] | None:
        """The tokens of the assistant message whose `turn_keys` entry is `key`."""
        with self._lock:
            return self._items.get(key)


def render_prompt(
    tokenizer, messages: list[dict[str, Any]], tools: list[dict] | None, cache: TurnCache | None
) -> list[int]:
    """Token ids of the prompt for the next assistant turn."""
    spliced: list[list[int]] = []
    msgs = []
    keys = turn_keys(messages) if cache is not None else []
    for i, m in enumerate(messages):
        m = dict(m)
        if m.get("role") == "developer":
            m["role"] = "system"
        ids = cache.get(keys[i]) if cache is not None and m.get("role") == "assistant" else None
        if ids is not None:
            m = {"role": "assistant", "content": SENTINEL.format(len(spliced))}
            spliced.append(ids)
        elif isinstance(m.get("content"), list):  # OpenAI content parts -> text
            m["content"] = content_text(m["content"])
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
