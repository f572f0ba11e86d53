"""Drop duplicate tasks: the same text once normalised, or near-duplicates whose character
3-gram sets overlap (Jaccard) at `threshold` or more and that mention the same numbers.

3-grams catch rewordings such as "What's the..." / "What is the..." that word sets miss, while
tasks that differ in a name ("weather in Paris" / "in Oslo") stay apart at the default 0.8.
Numbers are compared apart because one digit changes a task but barely moves the overlap:
"(12 + 5) * 3" and "(12 + 7) * 3" are different tasks."""

from __future__ import annotations

import re

from mcprl.checks import normalize_text

DEFAULT_THRESHOLD = 0.8
_NUMBER = re.compile(r"\d+(?:\.\d+)?")


def shingles(text: str, n: int = 3) -> frozenset[str]:
    norm = normalize_text(text)
    if len(norm) <= n:
        return frozenset({norm})
    return frozenset(norm[i : i + n] for i in range(len(norm) - n + 1))


def jaccard(x: frozenset[str], y: frozenset[str]) -> float:
    return len(x & y) / len(x | y) if x | y else 1.0


def similarity(a: str, b: str) -> float:
    """Jaccard similarity of the two texts' character 3-grams, in [0, 1]."""
    return jaccard(shingles(a), shingles(b))


class Deduper:
    """Remembers accepted texts and tells whether a new one duplicates any of them."""

    def __init__(self, threshold: float = DEFAULT_THRESHOLD):
        self.threshold = threshold
        # normalised text -> (original, its 3-grams, its numbers)
        self._seen: dict[str, tuple[str, frozenset[str], list[str]]] = {}

    def duplicate_of(self, text: str) -> str | None:
        """The accepted text `text` duplicates, or None (then `text` is accepted)."""
        norm = normalize_text(text)
        if norm in self._seen:
            return self._seen[norm][0]
        grams, numbers = shingles(text), sorted(_NUMBER.findall(text))
        for original, seen_grams, seen_numbers in self._seen.values():
            if numbers == seen_numbers and jaccard(grams, seen_grams) >= self.threshold:
                return original
        self._seen[norm] = (text, grams, numbers)
        return None
