"""A grounded task made (`mcprl.scenarios.grounded`): what a value a result holds must be to be asked for (short,
in words and in characters, one number at most, not a yes or no nor encoded bytes; given away by no argument, unless
chosen from a list the call was given), and the Scenario of a question, its answer and the chain of calls that reached
it: its id, its `holds` check, its reference chain and the state it is prepared in."""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Sequence
from typing import Any

from mcprl.checks import Check, HoldsCheck, holds_answer, normalize_text, numbers
from mcprl.scenarios.explored import ExploredCall
from mcprl.scenarios.lexicon import FLAGS, UNKNOWN
from mcprl.scenarios.phrasing import value_text
from mcprl.scenarios.replay import needed
from mcprl.scenarios.results import ISO_DATE, MESSAGE, NOTHING, result_records
from mcprl.scenarios.values import sentence
from mcprl.tools.copies import SESSION_FOLDER
from mcprl.types import ReferenceCall, Scenario

MAX_ANSWER_WORDS = 8  # a longer value is prose, not an answer a check can hold
MAX_ANSWER_CHARS = 80  # ... and a value longer than a line is read off, not answered (a PATH of 200 characters)
ANSWER_LABEL_WORDS = 3  # words besides a result's one number that still make it that number ("Total: 42 USD")
# ... and a sentence's words besides its one number and the values its call was sent ("There are 42 units of SKU-3486
# in stock.")
SENTENCE_WORDS = 8
ANSWER_WORDS = 12  # words an answer may add around the value ("The confirmation code of the email is ZOE67V.")
BASE64 = re.compile(r"[A-Za-z0-9+/]{40,}={0,2}")
DIGEST = re.compile(r"[0-9a-fA-F]{40,}")  # a digest in hexadecimal (a SHA-256), which BASE64 holds too
# a number an operator joins to another term ("2*x", "9**19")
EXPRESSION = re.compile(r"\d\s*(?:\*\*|[*/^])\s*[\w(]|[\w)]\s*(?:\*\*|[*/^])\s*\d")
OPERATION = re.compile(r"[\w)]\s*(?:[*/^+=]+|\s-\s)\s*[\w(]")  # terms an operator joins ("6*x", "x + 1"; not "to-do")
# a function applied to its arguments, the whole text: an expression left unevaluated (`Derivative(5, x)`), whose
# numbers are what it was given, not what it came to (negated too: `-fresnels(1)`)
APPLIED = re.compile(r"[-+]?[A-Za-z_][\w.]*\(.*\)", re.S)


# a row of cells that commas join, no space between, one of them a word ("pear,7" of a CSV file's line; "1,000" is a
# number)
CELLS = re.compile(r"(?=\S*[A-Za-z])[^,\s]+(?:,[^,\s]+)+")
# a listing's line: a marker ("*", "-", "[FILE]"), then a name
LISTED = re.compile(r"(?:[^\w\s]+|\[\w+\])\s+(\S*[A-Za-z]{2}\S*)")
# a line that heads what follows: one that ends in a colon ("Execution in session 'default' (inline mode):"), or a
# word framed in markup ("--- Output ---", "## Result", "**Output**")
HEADING = re.compile(r".*:|#{1,6}\s+\S.*|[-=*]{2,}\s*\w[\w ]*?\s*[-=*]{2,}|\*\*\w[\w ]*\*\*:?")


def result_answer(text: str, sent: Sequence[str] = ()) -> Any | None:
    """The answer a short result gives (of the one line under its headings, where it has them): its one number when
    a line of a few words has exactly one ("Total: 42 USD"), or a sentence of a line has one besides the values its
    call was `sent` ("bolt weighs 204 g at scale 17" -> 204, sent "bolt" and 17; "Task 2 updated." none, sent 2), else
    the text itself when it is short; None when it is not an answer a check can hold (a text of lines, "Meeting at
    10am.\nBudget: 4500 USD", or a sentence, "Cache hit ratio 0.95, latency 150ms", is asked for by its labelled
    values, not as its one number)."""
    text = text.strip()
    # one line under headings: what the headings introduce ("Execution in session 'default':\n--- Output ---\n42");
    # not a labelled one, a field of a record ("README.md:\n# Project\nOwner: Dana Reyes"), asked for by its label
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    said = [line for line in lines if not HEADING.fullmatch(line)]
    if len(said) == 1 and len(lines) > 1 and ": " not in said[0]:
        text = said[0]
    # a row of a listing, a search that found nothing ("No matches found"), or a heading that introduces nothing
    # ("Staged changes:")
    if " | " in text or NOTHING.fullmatch(text) or text.endswith(":"):
        return None
    if marked := LISTED.fullmatch(text):  # a listing of one line: its name, not its marker ("[FILE] todo.txt")
        return marked[1]
    # a term over the symbols of an expression the call was sent ("7 x", LaTeX's product, of "x**1 + 6*x"): its
    # number is a coefficient, not what the call came to
    symbols = {w for v in sent if OPERATION.search(v) for w in re.findall(r"[A-Za-z_]\w*", v)}
    if (words := set(re.findall(r"[A-Za-z_]\w*", text))) and words <= symbols:
        return None
    if "\n" not in text:
        if not MESSAGE.fullmatch(text) and (number := one_number(text, words=ANSWER_LABEL_WORDS)) is not None:
            return number
        rest = text
        for value in filter(None, sent):
            rest = re.sub(rf"(?<![\w.]){re.escape(value)}(?!\w|\.\d)", " ", rest, flags=re.I)
        # (a sentence, or a line that says what it was asked: not a title's one number, "Invoice for March 2024")
        if (
            (MESSAGE.fullmatch(text) or rest != text)
            and not EXPRESSION.search(text)  # (a power the call was sent the exponent of, "9**19", is no 9)
            and len(text) <= 2 * MAX_ANSWER_CHARS
            and (number := one_number(rest, words=SENTENCE_WORDS)) is not None
        ):
            return number
    if MESSAGE.fullmatch(text):  # a message ("No items match.")
        return None
    if numbers(text) or not text or len(text.split()) > MAX_ANSWER_WORDS or "\n" in text:
        return None
    return text


NO_ANSWER = FLAGS | UNKNOWN  # (a yes or a no, and what says it is not known, normalised)


def answerable(value: Any, whole: bool = False) -> bool:
    """Whether a value can be an answer: short (in words and in characters), with something a check can hold (not
    marks alone: "___"), and not encoded bytes (a file's base64 `blob`: no one asks for it; but a digest in
    hexadecimal that is a call's `whole` result is what it computed, the SHA-256 of a text, where in a record it is an
    id, a commit's hash), and not a yes or no (a
    guess holds it half the time), nor one letter (sympy's identity matrix "I": any reply saying "I" or "a" would hold
    it), nor a program's name for an object (`<class 'sympy.core.numbers.Integer'>`, `<function f at 0x7f...>`), nor a
    folder the session was given (its home: another in the next session), nor a heading ("# Context Summary"), nor
    a message that nothing was found ("No relationships found for this item": what the result lacks), nor a value
    that says it is not known ("unknown", "n/a": `lexicon.UNKNOWN`)."""
    text = str(value).strip()
    digest = whole and DIGEST.fullmatch(text) is not None
    return (
        re.search(r"[^\W_]", text) is not None
        and normalize_text(text) not in NO_ANSWER
        and not re.fullmatch(r"[A-Za-z]", text)
        and len(text.split()) <= MAX_ANSWER_WORDS
        and len(text) <= (2 * MAX_ANSWER_CHARS if digest else MAX_ANSWER_CHARS)
        and len(numbers(text)) <= 1
        and not (BASE64.fullmatch(text) and not digest)
        and not text.endswith(":")
        and not re.fullmatch(r"<[^<>]*>", text)
        and not SESSION_FOLDER.search(text)
        and not re.match(r"#{1,6} ", text)
        and NOTHING.match(text) is None
    )


def stored_sentence(text: str, sent: Sequence[str], written: Sequence[Any]) -> str | None:
    """The one sentence of those `written` (the values the writes of a read's state were sent) that a read's `text`
    says back whole, with little else beside the values it was `sent` ("File: README.md" and "Send the draft to Sam
    by Friday."): what the store holds, not a message of the server's. None otherwise."""
    rest = normalize_text(text)
    for v in sent:
        rest = rest.replace(normalize_text(v), " ")
    stored = {
        v
        for v in written
        if sentence(v) and (said := normalize_text(v)) in rest and len(rest.replace(said, " ").split()) <= 3
    }
    return stored.pop() if len(stored) == 1 else None


def document_sentence(text: str, sent: Sequence[str] = ()) -> str | None:
    """The one sentence a document a read gave says, beside its headings, its labelled fields and the lines that name
    it (a note: "Daily/2024-03-01.md:", "# 2024-03-01", "Called Dana about the budget."): what a person asks the
    document says. None where nothing heads it (a sentence alone, or under a label, is a server's message), or where
    it says more than one."""
    lines = [line.strip() for line in text.splitlines() if line.strip() and not line.strip().startswith("```")]
    said = [line for line in lines if not HEADING.fullmatch(line) and not re.match(r"[\w ]{1,30}: \S", line)]
    named = any(line.startswith("#") or any(v and v in line for v in sent) for line in lines if line not in said)
    if not named or len(said) != 1 or not MESSAGE.fullmatch(said[0]) or len(said[0].split()) > MAX_ANSWER_WORDS:
        return None
    return said[0]


def one_number(text: str, words: int | None = None) -> float | int | None:
    """The one number a text holds; with `words`, only if it has at most that many words besides
    ("$88.88", "37 units", but not "48 hours in Porto", "Invoice for March 2024", nor a cell of a row, "pear,7")."""
    found = numbers(text)
    if len(found) != 1 or words is not None and len(re.findall(r"[A-Za-z]+", text)) > words:
        return None
    if words is not None and CELLS.fullmatch(text.strip()):
        return None
    if ISO_DATE.search(text):  # a date or a time is no number ("2026-12-02T06:00:00-05:00" is not 0)
        return None
    if EXPRESSION.search(text) or APPLIED.fullmatch(text.strip()):  # a term of an expression ("pi/4", "2*x")
        return None
    (value,) = found
    return int(value) if value.is_integer() else value


# a name, then in angle brackets where to reach it (an address, a URL): how mail and git write a person ("Ann Lee
# <ann@example.com>")
NAME_ADDRESS = re.compile(r"([^<>]*?[^\W\d_][^<>]*?)\s*<[^<>\s]*[@:/][^<>\s]*>")


# a name that ends in a number ("Heading 1", "Room 12"): the number names which one, it counts nothing
NUMBERED_NAME = re.compile(r"[A-Za-z][\w-]*\s+\d+")


def answer_of(value: Any) -> Any:
    """A field's value as a person answers with it: its one number ("37 units" -> 37), or of a name and its address
    the name ("Ann Lee <ann@example.com>" -> "Ann Lee", which the whole holds); else the value (an address whole:
    "http://127.0.0.1:8080" is no 8080; a numbered name whole: "Heading 1" is no 1)."""
    if not isinstance(value, str):
        return value
    numbered = NUMBERED_NAME.fullmatch(value.strip()) is not None
    if "://" not in value and not numbered and (number := one_number(value, words=1)) is not None:
        return number
    return named[1].strip() if (named := NAME_ADDRESS.fullmatch(value.strip())) else value


def chosen(arguments: dict[str, Any], answer: Any) -> bool:
    """Whether `answer` is one of the different values a list argument gives, and no other argument states it (the
    largest of 3, 8 and 5 is 8): a choice the task asks for, not an answer it gives away (nor is the list itself, said
    back). A list of objects is requests (line ranges to read), not values to choose among: what it states gives an
    answer away."""
    lists, others = [], []
    for v in arguments.values():
        values = isinstance(v, list) and all(isinstance(x, (str, int, float)) for x in v)
        (lists if values and len({value_text(x) for x in v}) >= 2 else others).append(v)
    in_a_list = any(holds_answer(value_text(x), answer) for v in lists for x in v)
    # (the list said back, its items on lines of their own, is none of them chosen: patterns "*" and "*.txt" built
    # into the query "*\n*.txt")
    pieces = {p.strip() for p in re.split(r"[\n,;]", str(answer)) if p.strip()}
    listed = len(pieces) > 1 and pieces <= {value_text(x).strip() for v in lists for x in v}
    return in_a_list and not listed and not holds_answer(" ".join(map(value_text, others)), answer)


def task_id(
    task: str, chain: list[ExploredCall] | list[ReferenceCall], prepare: list[ExploredCall] | None = None
) -> str:
    """A grounded task's id: its text's, its chain's and its prepared state's, so the same seed grounds the same ids
    (what a scenario is shown keys on it)."""
    state = [[[c.tool, c.arguments] for c in prepare]] if prepare else []
    key = json.dumps([task, [[c.tool, c.arguments] for c in chain], *state], sort_keys=True, default=str)
    return hashlib.sha256(key.encode()).hexdigest()[:12]


def grounded_scenario(
    task: str,
    answer: Any,
    chain: list[ExploredCall],
    kind: str,
    read_back: ExploredCall | None = None,
    field: str | None = None,
    given: list[str] | None = None,
    check: Check | None = None,
    prepare: list[ExploredCall] | None = None,
    place: str | None = None,
) -> Scenario:
    chain = needed(task, chain)
    return Scenario(
        id=task_id(task, chain, prepare),
        task=task,
        answer=answer,
        difficulty=min(5, len(chain)),
        tools=list(dict.fromkeys(c.tool for c in chain)),
        # a task that changes state is checked on the state it leaves (its read-back), a record: any numbers
        # an answer is a sentence around the value, not a pasted result (a recital held every field: trained on, it was
        # learnt)
        check=check
        or (
            HoldsCheck(max_words=len(str(answer).split()) + ANSWER_WORDS)
            if read_back is None
            else HoldsCheck(on="read_back", max_other_numbers=None)
        ),
        read_back=None if read_back is None else {"tool": read_back.tool, "arguments": read_back.arguments},
        metadata={
            "source": "grounded",
            "kind": kind,
            **({"field": field} if field else {}),
            # the values it states, which a rephrasing keeps (none: a question said by what its result holds)
            **({"given": given} if given is not None else {}),
            # the place in a dated listing that picks its record out ("latest commit"), as much what it asks as a value
            **({"place": place} if place else {}),
            # how many records the result that holds the answer has: one to read, or a line of a listing to find
            "records": len(result_records(chain[-1].data, chain[-1].structured)) if read_back is None else 1,
        },
        reference=[_reference(c) for c in chain],
        prepare=[_reference(c) for c in prepare or []],
    )


def _reference(call: ExploredCall) -> ReferenceCall:
    return ReferenceCall(
        tool=call.tool, arguments=call.arguments, result=call.text, writes=call.writes, sources=call.sources
    )
