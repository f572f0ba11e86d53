"""How a grounded task is worded: from the tool's title (else its name's words) and the call's
values, never its description pasted (`action`, `ASKS`, `DOES`, `noun_of`); as an expression where
the call's one value is one ("What is 98 + 51?") or its description states one over every argument
(`formula`, `FORMULA_ASKS`); a record's field by name, by the call, or by what a search was about
(`NAME_ASKS`, `CALL_ASKS`, `TOPIC_ASKS`); and a generator's rephrasing, used only where it keeps
every value of the template and does not give the answer away (`keeps`, `phrase`)."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from typing import Any

import anyio

from mcprl.checks import holds_answer, numbers
from mcprl.errors import UserError
from mcprl.llm import LLMError, complete, extract_json
from mcprl.scenarios.lexicon import BARE_NAMES, PREPOSITIONS, words_of
from mcprl.types import Scenario

TASK_VERBS = frozenset("get list search find read show describe fetch lookup look query retrieve view".split())


def first_sentence(description: str) -> str:
    """A tool description's first sentence, without its final stop."""
    first = re.split(r"(?<=[.!?])\s|\n", description.strip(), maxsplit=1)[0]
    return first.rstrip(".!? ")


def value_text(value: Any) -> str:
    """A value as a person writes it: a list as its items ("a.txt, b.txt"), a record as its fields
    ("name Alice, type person"), not Python's repr of them."""
    if isinstance(value, (list, tuple)):
        return ", ".join(value_text(v) for v in value)
    if isinstance(value, dict):
        return ", ".join(f"{' '.join(words_of(str(k)))} {value_text(v)}" for k, v in value.items())
    return str(value)


def quoted(value: Any) -> str:
    if isinstance(value, (list, tuple)):
        return ", ".join(quoted(v) for v in value)
    if isinstance(value, dict):
        return f"({value_text(value)})"
    return (
        f'"{value}"' if isinstance(value, str) and (not value or " " in value or not value[0].isalnum()) else str(value)
    )


def args_text(args: dict[str, Any]) -> str:
    """A call's arguments as words: "repo path /srv/r and max count 3"."""
    said = [f"{' '.join(words_of(k))} {quoted(v)}" for k, v in args.items()]
    return " and ".join([", ".join(said[:-1]), said[-1]]) if len(said) > 1 else "".join(said)


EXPRESSION = re.compile(r"[-+*/%^().\d\s]*\d\s*[-+*/%^]+\s*[-(\d][-+*/%^().\d\s]*")  # arithmetic: "(7 - 2) / 5"


def action(title: str, args: dict[str, Any], linked: frozenset[str] = frozenset()) -> str:
    """What a call does, in words from its tool's title and the call's values: "Git log with repo
    path /srv/r and max count 3", "Search nodes with query Alice", "Convert weight 2.5 from lb to kg"
    (a parameter named `value` said as its value alone, and one whose name starts with a preposition as
    that preposition and its value, where no other parameter is said the same way: `inline`). A `linked`
    argument is "the previous result"."""
    shown = {k: ("the previous result" if k in linked else v) for k, v in args.items()}
    text = title[:1].upper() + title[1:]
    said = inline(shown)
    named = {k: v for k, v in shown.items() if k not in said}
    parts = [text, *said.values(), *([f"with {args_text(named)}"] if named else [])]
    return " ".join(parts).replace('"the previous result"', "the previous result")


def inline(args: dict[str, Any]) -> dict[str, str]:
    """The arguments a task says without their names: the one named by a word of `BARE_NAMES` as its
    value, and each whose name starts with a preposition no other one starts with as that preposition
    and its value; a yes/no or a record always by its name."""
    said_as = {}
    for k, v in args.items():
        words = words_of(k)
        if isinstance(v, (bool, dict)) or not words:
            continue
        if len(words) == 1 and words[0] in BARE_NAMES:
            said_as[k] = ("", quoted(v))
        elif words[0] in PREPOSITIONS:
            said_as[k] = (words[0], f"{words[0]} {quoted(v)}")
    ways = Counter(way for way, _ in said_as.values())
    return {k: text for k, (way, text) in said_as.items() if ways[way] == 1}


def _fill(
    description: str, tool: str, args: dict[str, Any], linked: frozenset[str], previous: str
) -> tuple[str, dict[str, str]]:
    """The description's first sentence with the call's values in place of the argument names it
    mentions, and the arguments it does not mention."""
    text = first_sentence(description) or f"Use {tool}"
    rest: dict[str, str] = {}
    for name, value in args.items():
        shown = previous if name in linked else quoted(value)
        pattern = rf"(?<![\w-]){re.escape(name.replace('_', ' '))}(?![\w-])"
        if len(name) > 1:
            # a word, but never the first one: that is the verb ("Change an item's stock", argument `change`)
            text, hits = re.subn(rf"(?<=.){pattern}", lambda _: shown, text, flags=re.IGNORECASE)  # noqa: B023
        else:  # a letter: a variable everywhere when beside an operator ("a - b"), else only where no word
            # follows it, so that an article ("a number") stays
            operand = re.search(rf"(?<!\w){name}\s*[-+*/%^=<>]|[-+*/%^=<>]\s*{name}(?!\w)", text)
            text, hits = re.subn(pattern if operand else rf"{pattern}(?!\s+[A-Za-z]{{3}})", lambda _: shown, text)  # noqa: B023
        if not hits:
            rest[name.replace("_", " ")] = shown
    return text, rest


def formula(
    description: str, tool: str, args: dict[str, Any], linked: frozenset[str] = frozenset(), previous: str = ""
) -> str | None:
    """The call as an expression of its values, where its description states one over every
    argument ("Multiply two numbers and return a * b" -> "18.5 * 10"); a `linked` argument is the
    previous call's expression, `previous`, in brackets ("(18.5 * 10) - 3"); or the call's one value,
    where it is an expression itself ("98 + 51" of a calculator's `expression`). None otherwise."""
    if (
        not linked
        and len(args) == 1
        and isinstance(value := next(iter(args.values())), str)
        and EXPRESSION.fullmatch(value)
    ):
        return " ".join(value.split())
    text, rest = _fill(description, tool, args, linked, f"({previous})")
    if rest:
        return None
    for clause in re.split(r",\s*|;\s*|\s+and\s+", text):
        verb, _, body = clause.partition(" ")
        body = body if verb.isalpha() else clause  # "return 18.5 * 10": the expression after its verb
        if re.fullmatch(r"[-+*/%^().\d\s]+", body) and re.search(r"[\d)]\s*[-+*/%^]+\s*[-\d(]", body):
            return body.strip()
    return None


# How a task asks for a result: a few wordings, so that no one sentence shape is what the policy learns
ASKS = ("{}. What is the result?", "{}: what do you get?", "{}, and tell me the result.", "What is the result? {}.")
DOES = ("{}.", "Please do this: {}.", "{}, please.")  # how a task asks for a change
FORMULA_ASKS = ("What is {}?", "Compute {}.", "Work out {}.", "{} = ?")  # how a task asks for an expression's value
# how a task asks for a field of the record a call gave: after what the call does ("Git show with repo path
# /srv/r and revision a11a100. What is the author?")
CALL_ASKS = ("{action}. What is the {field}?", "{action} and tell me the {field}.")
# how a task asks for a field of one record, by its name: quoted or not, as people write ("What does the
# steel hammer cost?" names it bare); a policy that saw only quotes learnt to copy quoted words alone
NAME_ASKS = (
    'What is the {field} of the {noun} "{name}"?',
    "What is the {field} of the {name}?",
    "What is the {name}'s {field}?",
    "Find the {name} and tell me its {field}.",
)
# ... and, a line of a listing, by the call and a field that picks the line out
RECORD_ASKS = ("{action}. What is the {field} where {key} is {value}?",)
# ... and by the one value of a lookup's argument, bare ("What is the price of item SKU-3000?")
VALUE_ASKS = ("What is the {field} of {noun} {values}?",)
# ... and by what a search that found it was about
TOPIC_ASKS = (
    "What is the {field} in the {noun} about {topic}?",
    "Find the {noun} about {topic} and tell me its {field}.",
)
# how a task asks for every name a short listing gives ("Git branch with branch type all. What does it list?")
LIST_ASKS = ("{action}. What does it list?", "{action}: name everything it lists.")
# ... and where the call is a query whose meaning is known (mcprl.scenarios.lexicon.about): by what it lists
ABOUT_LIST_ASKS = ("What are {about}?", "Name {about}.")
ABOUT_ACTION = "Look at {about}"  # what a known query does, where a task states the call


def noun_of(tool: str) -> str:
    """What a tool's results are about, from its name: `get_item` -> item, `search_emails` -> email."""
    words = [w for w in words_of(tool) if w not in TASK_VERBS and w not in {"by", "id", "all", "details", "info"}]
    noun = words[-1] if words else "result"
    # a plural's "s", not the end of "status", "analysis" or "address"
    return noun[:-1] if noun.endswith("s") and not noun.endswith(("ss", "us", "is")) else noun


PHRASE_PROMPT = (
    "Rewrite the task as one short, natural question a user would ask an assistant that has tools. "
    "Keep every name, id and number in it exactly as written. Do not answer it."
)
PHRASE_SCHEMA = {
    "type": "object",
    "properties": {"question": {"type": "string", "minLength": 10, "maxLength": 200}},
    "required": ["question"],
    "additionalProperties": False,
}


def keeps(template: str, answer: Any, question: str, given: Sequence[str] = ()) -> bool:
    """Whether a rephrasing keeps what the task needs (every quoted value and number of the
    template, and the values it states bare: `given`) and does not give its answer away."""
    needed = [
        *re.findall(r'"([^"]+)"', template),
        *given,
        *(str(int(x) if x.is_integer() else x) for x in numbers(template)),
    ]
    # a template with no value to keep gives nothing to check a rewrite against: it stays
    return (
        bool(needed)
        and all(holds_answer(question, v) for v in needed)
        and (holds_answer(template, answer) or not holds_answer(question, answer))
    )


async def phrase(tasks: list[Scenario], model: str, *, api_base: str | None, seed: int) -> int:
    """Rephrase tasks with the generator model (JSON via `response_format`) where the rewrite
    `keeps` the task; the template stays otherwise, and in `metadata["template"]`. Returns how
    many were rephrased; a failed generator call leaves its task as it is."""
    done = 0
    limiter = anyio.CapacityLimiter(4)

    async def one(t: Scenario) -> None:
        nonlocal done
        messages = [{"role": "system", "content": PHRASE_PROMPT}, {"role": "user", "content": t.task}]
        async with limiter:
            try:
                reply = await complete(
                    model,
                    messages,
                    api_base=api_base,
                    json_schema=PHRASE_SCHEMA,
                    temperature=0.0,
                    max_tokens=96,
                    seed=seed,
                )
                question = str(extract_json(reply.text)["question"]).strip()
            except (LLMError, UserError, ValueError, KeyError, TypeError):
                return
        if keeps(t.task, t.answer, question, t.metadata.get("given", [])):
            t.metadata["template"], t.task, done = t.task, question, done + 1

    async with anyio.create_task_group() as tg:
        for t in tasks:
            tg.start_soon(one, t)
    return done
