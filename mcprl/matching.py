"""Value matching, below every stage: whether a text holds a value (numbers by value, text as whole
words, both normalised). Grounding (mcprl.scenarios) finds answers with it, the checks
(mcprl.judges.verify), the tool-use shaping, the demonstration and the task sets score with it, so
a task's answer is read the same way where it is written and where it is checked."""

from __future__ import annotations

import math
import re
import unicodedata
from typing import Any


def normalize_text(text: str) -> str:
    """Unicode-folded, lower-cased, punctuation replaced by spaces, whitespace collapsed."""
    text = unicodedata.normalize("NFKC", text).casefold()
    return " ".join(re.sub(r"[^\w\s]", " ", text).split())


# A number standing alone: not part of a token like SKU-1234 or A4. Thousands separators are
# dropped before reading (`THOUSANDS`).
NUMBER = re.compile(r"(?<![\w-])-?\d+(?:\.\d+)?(?![\w-])")
THOUSANDS = re.compile(r"(?<=\d),(?=\d{3}(?!\d))")


def numbers(text: str) -> set[float]:
    """The values of the numbers standing alone in `text`."""
    return {float(n) for n in NUMBER.findall(THOUSANDS.sub("", text))}


def as_number(value: Any) -> float | None:
    if isinstance(value, bool):
        return None
    try:
        number = float(str(value).strip().replace(",", ""))
    except ValueError:
        return None
    return number if math.isfinite(number) else None


def same_value(a: Any, b: Any) -> bool:
    """Equal as numbers when both read as numbers (so "42.0" matches 42), else as normalised text."""
    x, y = as_number(a), as_number(b)
    if x is not None and y is not None:
        return math.isclose(x, y, rel_tol=1e-9, abs_tol=1e-9)
    return normalize_text(str(a)) == normalize_text(str(b))


def words(text: str) -> list[str]:
    return normalize_text(text).split()


def holds_answer(text: str, answer: Any) -> bool:
    """Whether `text` holds `answer`: a number as a number of the same value ("$22.60" holds
    22.6, "SKU-1234" holds no 1234), anything else as whole words, both normalised."""
    number = as_number(answer)
    if number is not None:
        return any(math.isclose(n, number, abs_tol=1e-9) for n in numbers(text))
    needle = " ".join(words(str(answer)))
    return bool(needle) and f" {needle} " in f" {' '.join(words(text))} "
