"""How a grounded task is worded: from the tool's title (else its name's words) and the call's
values, never its description pasted (`said`, `Said`: an order where the title starts with a verb,
"Convert temperature 14 from F to C. What is the value?"; a question about the thing a title names or
gets, "What is the sum of 7 and 3?", "In the git log, what is the author where ...?"); as an expression
where the call's one value is one ("What is 98 + 51?") or its description states one over every argument
(`mcprl.scenarios.expressions`, `FORMULA_ASKS`); a record's field by name, by the call, or by what a search was about
(`NAME_ASKS`, `Said.asks_field`, `TOPIC_ASKS`); and a generator's rephrasing, used only where it keeps
every value of the template and does not give the answer away (`keeps`, `phrase`)."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

import anyio

from mcprl.checks import holds_answer, numbers
from mcprl.errors import UserError
from mcprl.llm import LLMError, complete, extract_json
from mcprl.scenarios.isolation import may_write
from mcprl.scenarios.lexicon import (
    ABOUT_IT,
    ABOUT_ONLY,
    BARE_NAMES,
    DETERMINERS,
    DONE_BY_ITSELF,
    ENDS,
    FILES,
    FILLER,
    GETS,
    HOW,
    IDENTIFYING,
    KINDS,
    LOCATING,
    NAME_KEYS,
    OPERANDS,
    PATHS,
    PLACES,
    PREPOSITIONS,
    VERBS,
    WRITE_WORDS,
    head,
    participle,
    plural,
    singular,
    spoken,
    who,
    words_of,
)
from mcprl.types import Scenario

TASK_VERBS = frozenset("get list search find read show describe fetch lookup look query retrieve view".split())


def first_sentence(description: str) -> str:
    """A tool description's first sentence, without its final stop."""
    first = re.split(r"(?<=[.!?])\s|\n", description.strip(), maxsplit=1)[0]
    return first.rstrip(".!? ")


def task_titles(tools: list[dict[str, Any]]) -> dict[str, str]:
    """The words a task names each titled tool by: its title (or its annotations'), up to a word of `HOW` where no
    other tool's title comes to the same words ("Get Current Time with Optional Location" -> "Get Current Time"); a
    name that shortens its description's opening verb by that verb (`div` -> "divide"); an untitled tool that may
    write, where every tool's name starts with one word that is no verb (the server's: `sympy_factorial`), by its
    name's other words where they do not start with a verb: that word says whose the tool is, not what it does
    ("Sympy factorial 5" read it as an order; "What is the factorial of 5?")."""
    # (a title that is its name's words again says nothing more: FastMCP titles `sympy_binomial` "Sympy Binomial")
    titles = {
        t["name"]: title
        for t in tools
        if (title := t.get("title") or (t.get("annotations") or {}).get("title"))
        and words_of(title) != words_of(t["name"])
    }
    # an untitled tool whose name shortens the verb its description opens with (`div`, "Divide two numbers"): by
    # that verb ("Divide 18 by 5.5", not "the div of 18 and 5.5")
    for t in tools:
        words, opening = words_of(t["name"]), words_of(first_sentence(t.get("description") or ""))[:1]
        shortened = len(words) == 1 and len(words[0]) >= 3 and opening and opening[0] != words[0]
        if t["name"] not in titles and shortened and opening[0] in VERBS and opening[0].startswith(words[0]):
            titles[t["name"]] = opening[0]
    firsts = {(words_of(t["name"]) or [""])[0] for t in tools}
    if len(tools) > 2 and len(firsts) == 1 and (prefix := firsts.pop()) and prefix not in VERBS:
        for t in tools:
            words = words_of(t["name"])
            # (not before a verb, whose object it is: `task_create` creates a task)
            if t["name"] not in titles and may_write(t) and len(words) > 1 and words[1] not in VERBS:
                titles[t["name"]] = " ".join(words[1:])

    def head(title: str) -> str:
        words = title.split()
        return " ".join(words[: next((i for i, w in enumerate(words) if i and w.lower() in HOW), len(words))])

    heads = Counter(head(title) for title in titles.values())
    return {name: head(title) if heads[head(title)] == 1 else title for name, title in titles.items()}


def value_text(value: Any) -> str:
    """A value as a person writes it: a list as its items ("a.txt, b.txt"), a record as its fields
    ("name Alice, type person"), not Python's repr of them."""
    # (the records of a list of several each in brackets: "(start 1, end 5), (start 9)")
    if isinstance(value, (list, tuple)):
        return ", ".join(
            f"({value_text(v)})" if isinstance(v, dict) and len(value) > 1 else value_text(v) for v in value
        )
    if isinstance(value, dict):
        return ", ".join(f"{spoken(str(k))} {value_text(v)}" for k, v in value.items())
    return str(value)


def quoted(value: Any) -> str:
    """A value as a task states it: a text with spaces or lines in quotes, a list's items each, a record in brackets,
    or by its name first where it has one ('"Weekly report" (entity type person)', not "(name Weekly report, ...)")."""
    if isinstance(value, (list, tuple)):
        items = [quoted(v) for v in value]
        return _listed(items) if value and all(named_record(v) for v in value) else ", ".join(items)
    if isinstance(value, dict):
        name = named_record(value)
        # (its fields each quoted as a value is: sentences apart, "observations "Send the draft.", "Book a room."")
        fields = ", ".join(f"{spoken(str(k))} {quoted(v)}" for k, v in value.items() if k != name)
        if name is not None:
            return f"{quoted(value[name])} ({fields})" if fields else quoted(value[name])
        return f"({fields})"
    # (and a word a task says of fields, which read bare as the parameter's name: 'column "name"', not "column name")
    return (
        f'"{value}"'
        if isinstance(value, str)
        and (not value or re.search(r"\s", value) or not value[0].isalnum() or value.lower() in NAME_KEYS | IDENTIFYING)
        else str(value)
    )


def named_record(value: Any) -> str | None:
    """The key a record's one name is under (`NAME_KEYS`), if it has one."""
    keys = [k for k, v in value.items() if k in NAME_KEYS and isinstance(v, str)] if isinstance(value, dict) else []
    return keys[0] if len(keys) == 1 else None


PREVIOUS = "the previous result"  # how a task says an argument that the previous call's result gave


def _listed(values: list[str]) -> str:
    """Values as a sentence lists them: "7 and 3", "1, 2 and 3"."""
    return " and ".join([", ".join(values[:-1]), values[-1]]) if len(values) > 1 else "".join(values)


@dataclass(frozen=True)
class Said:
    """A call in words, from its tool's title and the values it was given (`said`). `verb`: the order the
    title starts with ("convert"; None where the title names a thing: "git log", "sum"); `thing`: what the
    call acts on or gives ("temperature", "git log"); `operands`: the values it works on, each said alone
    ("7 and 3": arguments named by a letter or by `BARE_NAMES`); `named`: the one value naming what it looks
    at ('"./docs"': an argument named by `IDENTIFYING`, or by the thing's own word, alone or before a word
    that is not one of `KINDS`: `table_name` of "describe table", `move_san` of "make move"), `apposed`
    where it names the thing itself (the file "notes.txt", not the file info for "./docs": `ABOUT_IT`);
    `rest`: the others ("from F to C", "with branch type all"). A call whose query's meaning is known is
    said by what its result holds, `about` ("the columns of the orders table":
    mcprl.scenarios.lexicon.about), never by its query."""

    verb: str | None
    thing: str
    operands: str = ""
    named: str = ""
    apposed: bool = False
    rest: str = ""
    about: str | None = None
    of: Said | None = None  # what a thing that is only about another (`ABOUT_ONLY`: "file info") is of ("file")

    def order(self) -> str:
        """What the call does, as an order: "Convert temperature 14 from F to C", "Find the git log"."""
        if self.about is not None:
            return ABOUT_ACTION.format(about=self.about)
        phrase = self.phrase()
        if phrase is not None:
            return f"{(self.verb or 'find').capitalize()} {phrase}"
        thing, named = self.thing, self.named
        if self.apposed and named == PREVIOUS:  # (what the call before gave is the thing: "close that session")
            thing, named = f"that {thing}", ""
        text = " ".join(p for p in (self.verb or "", thing, self.operands, named, self.rest) if p)
        return text[:1].upper() + text[1:]

    def phrase(self, thing: str | None = None) -> str | None:
        """What the call gives, as a noun phrase ("the sum of 7 and 3", 'the file info for "./docs"'); None
        where its title orders something other than getting it ("convert ...", "search ..."), unless
        `thing` says what it gives (a listing's)."""
        if self.about is not None:
            return self.about
        if thing is None and (self.verb is not None and self.verb not in GETS or not self.thing):
            return None
        of = f"of {self.operands}" if self.operands else ""
        named = self.named if self.apposed or not self.named else f"for {self.named}"
        the = "the"
        if self.apposed and named == PREVIOUS:  # ("the size of that file")
            the, named = "that", ""
        return " ".join(p for p in (f"{the} {thing or self.thing}", of, named, self.rest) if p)

    def listing(self) -> str | None:
        """What a listing it gives holds, as a plural noun phrase: a title's things ("the allowed
        directories" of "list allowed directories"), or the plural of the thing a title names ("the git
        branches" of "git branch"); None otherwise (a file read: its lines are no plural of it)."""
        if self.about is not None:
            return self.about
        head, _, last = self.thing.rpartition(" ")
        if self.verb in {"list", *GETS} and last and singular(last) != last:
            return self.phrase(self.thing)
        if self.verb is not None or not last:
            return None
        return self.phrase(f"{head} {plural(singular(last))}".strip())

    def asks_result(self) -> tuple[str, ...]:
        """How a task asks for the call's one value ("What is the sum of 7 and 3?")."""
        phrase = self.phrase()
        if phrase is None:
            return tuple(a.format(self.order()) for a in ASKS)
        return tuple(a.format(phrase=phrase, be=be(self.about or self.thing)) for a in PHRASE_ASKS)

    def asks_text(self) -> tuple[str, ...]:
        """How a task asks for a text the call reads back whole, a note a write stored ("What does the file README.md
        say?")."""
        phrase = self.phrase()
        if phrase is None:
            return tuple(a.format(action=self.order()) for a in CALL_TEXT_ASKS)
        many = be(self.thing) == "are"  # ("What do the notes for ... say?")
        return tuple(
            a.format(phrase=phrase, do="do" if many else "does", says="say" if many else "says") for a in TEXT_ASKS
        )

    def asks_field(
        self, field: str, state: bool = False, counted: bool = False, listed: bool = False, dated: bool = False
    ) -> tuple[str, ...]:
        """How a task asks for a field of the one record the call gave: the call's value itself where the
        field is the thing it gives ("sum" of "get sum", "content" of "get text file contents"); a `state` as one
        ("What is modified in the git status?"), and how many are in it where it is `counted` ("How many files
        changed in the git diff?"); a date it was done on where `dated` ("When was the document created?", not "the
        created of"); where that record is the one thing a listing of them (`listed`) holds, as that
        thing's ("List tasks. What is the name of the task listed?", not "What is the name?")."""
        things = self.listing() if listed and not (state or counted or field in PREPOSITIONS) else None
        # (not a listing said as the one thing it holds already: "the update in the updates")
        if things is not None and singular(head(things)) != head(things):
            # (what each is: the head of the phrase, not what it is of or for: "the entry in the directory tree for
            # "/srv/docs"" lists entries, not "/srv/docs"s)
            one = singular(head(things))
            # (a field named for the thing, of the thing, by the rest of its name: "the name of the table listed", not
            # "the table name of the table listed")
            first, _, rest = field.partition(" ")
            field = rest if rest and singular(first) == one else field
            return tuple(a.format(**field_words(field), one=one, action=self.order()) for a in ONE_LISTED_ASKS)
        phrase = self.phrase()
        # (a field the thing's name ends in is the thing: "current mode" of "get current mode", not "the current mode
        # of the current mode")
        asked = [singular(w) for w in field.split(" ")]
        if phrase is not None and (
            field in GENERIC_FIELDS or [singular(w) for w in self.thing.split(" ")][-len(asked) :] == asked
        ):
            return self.asks_result()
        if phrase is not None and self.of is not None:  # (a field of the file info for X is the file's)
            phrase = self.of.phrase()
        if field in PREPOSITIONS:  # (said after what it is of, where that is said as a thing)
            asks = PREPOSITION_ASKS if phrase is not None else ()
        elif dated:
            asks = DATED_ASKS if phrase is not None else CALL_DATED_ASKS
        elif counted:
            asks = COUNTED_ASKS if phrase is not None else CALL_COUNTED_ASKS
        elif state:
            asks = STATE_ASKS if phrase is not None else CALL_STATE_ASKS
        else:
            asks = FIELD_ASKS if phrase is not None else CALL_ASKS
        return tuple(a.format(**field_words(field), phrase=phrase, action=self.order()) for a in asks)

    def asks_record(self, field: str, which: str, alone: bool = False, dated: bool = False) -> tuple[str, ...]:
        """How a task asks for a field of the line of a listing that `which` picks out ("where the message is
        "Fix typo"", "of the commit whose message is ...", "of the latest commit"); `alone`, without saying the
        call, where what picks the line out says it ("Who is the author of the latest commit?"), as people ask:
        a policy taught by "In the git log, ..." learns to pick a tool by its name in the question, which no
        person's question holds; a date it was done on where `dated` ("When was the first one listed created?")."""
        the = "" if participle(field) else "the "
        dated = dated and which.startswith("of ")  # (a line said as a thing: "of the first one listed")
        # (a field named for the thing a place picks out is that thing, its name: "What is the first sheet listed?",
        # not "the sheet of the first sheet listed")
        itself = not dated and which.startswith("of the ") and field in which.split(" ")[3:]
        if dated or itself:
            which = which.removeprefix("of ")
        call: dict[str, str | None] = {}  # what the templates say of the call, where they say it
        if alone:
            asks = RECORD_ALONE_DATED_ASKS if dated else RECORD_ALONE_ASKS
        else:
            # (in what it gives, or lists, or in the thing it names: "In the table products, what is the type where
            # ..."; not the things an order makes or changes, which it is said as: "Create entities ... What is ...")
            named = self.apposed and self.verb not in WRITE_WORDS
            phrase = self.phrase() or self.listing() or (self.phrase(self.thing) if named else None)
            if phrase is not None:
                asks = RECORD_IN_DATED_ASKS if dated else RECORD_IN_ASKS
            else:
                asks = RECORD_DATED_ASKS if dated else RECORD_ASKS
            call = {"phrase": phrase, "action": self.order()}
        if itself:
            asks = tuple(a.replace("{the}{field} ", "") for a in asks)
        return tuple(a.format(**field_words(field), **call, which=which, the=the) for a in asks)

    def asks_listing(self, within: bool = False) -> tuple[str, ...]:
        """How a task asks for every name the call lists ("What are the allowed directories?"); `within`, names a
        thing it read lists under its title (a note's items), not the things the call is named for, by the call."""
        listing = None if within else self.listing()
        if listing is not None:
            return tuple(a.format(about=listing) for a in ABOUT_LIST_ASKS)
        return tuple(a.format(action=self.order()) for a in LIST_ASKS)

    def asks_marked(self) -> tuple[str, ...]:
        """How a task asks for the one thing a listing marks as current (`* main` of "git branch"): "What is the
        current branch?"; none where what it lists has no name."""
        listing = self.listing()
        if listing is None:
            return ()
        return tuple(a.format(one=singular(head(listing))) for a in MARKED_ASKS)

    def asks_count(self, kind: str | None = None) -> tuple[str, ...]:
        """How a task asks how many things the call lists ("How many valid moves are there?"), or how many of a
        `kind` what it gives holds ("How many commits are in the git log?"); none where what it lists has no name."""
        if kind is not None and (phrase := self.phrase()) is not None:
            return tuple(a.format(things=plural(kind), phrase=phrase) for a in COUNT_IN_ASKS)
        listing = self.listing()
        if listing is None or not listing.startswith("the "):
            return ()
        return tuple(a.format(about=listing, things=listing.removeprefix("the ")) for a in COUNT_ASKS)


def be(field: str) -> str:
    """ "are" for a plural field ("permissions"), "is" otherwise: by its `head` ("maximum size in megabytes" is one
    size)."""
    word = head(field)
    return "are" if singular(word) != word else "is"


def field_words(field: str) -> dict[str, str]:
    """How a template says a field: `field`, its verb `be` ("is", "are") and what it is asked as, `What`/`what`
    ("Who" for a person: mcprl.scenarios.lexicon.who); and, a date a participle names, when it was done as `was` and
    `done` say it ("was" ... "created"; "did" ... "join" where the thing did it itself, `DONE_BY_ITSELF`)."""
    asked = who(field)
    *before, last = field.split(" ")
    itself = DONE_BY_ITSELF.get(last)
    done = " ".join([*before, itself]) if itself else field
    return {
        "field": field,
        "be": be(field),
        "What": asked,
        "what": asked.lower(),
        "was": "did" if itself else "was",
        "done": done,
    }


def said(
    title: str,
    args: dict[str, Any],
    linked: frozenset[str] = frozenset(),
    settings: frozenset[str] = frozenset(),
    order: bool = False,
) -> Said:
    """A call in words (`Said`), from its tool's title (else its name's words) and what a task states of its
    arguments; a `linked` argument is "the previous result"; `settings`, parameters that set how the call works (its
    schema gives them a default), said by name ("with calendar hijri"), never as what the call is for. `order`: the
    tool may write, and a title of two words or more starts with what it does though the lexicon knows no such verb
    ("load csv", "request planning"): an order, not a thing to find."""
    title = re.sub(r"\s*\([^)]*\)", "", title) or title  # an aside: "Read File (Deprecated)"
    (key, value), *others = args.items() if args else [(None, None)]
    if not others and isinstance(value, list) and len(value) == 1:
        value = value[0]  # (a list of one request: the files to read, one file)
        if not isinstance(value, dict) and key not in linked:  # ... said as one ("path", not "paths")
            args = {singular(key): value}
    if not others and isinstance(value, dict) and value and key not in linked:
        args = value  # one object holding the call's parameters (a pydantic model's `request`): said as they are
    # ... and a list of one object among them (a request's `ranges`, one range) as the fields it holds ("start 5 and
    # end 7", not "ranges (start 5, end 7)"), where no other argument has one's name
    one_item = {
        k for k, v in args.items() if k not in linked and isinstance(v, list) and len(v) == 1 and isinstance(v[0], dict)
    }
    if one_item and all(args[k][0] for k in one_item):
        fields = [f for k in one_item for f in args[k][0]]
        if len(set(fields)) == len(fields) and not set(fields) & set(args):
            args = {f: v for k, item in args.items() for f, v in (item[0] if k in one_item else {k: item}).items()}
    words = [w for w in words_of(title) if w not in FILLER] or words_of(title)
    quantified = len(words) > 1 and words[0] in DETERMINERS  # a thing named by how much of it: no order
    if quantified:  # ("all table names" are the table names)
        words = words[1:]
    # (the one argument the call is about: where it looks, a repository's or a folder's path, is no such argument)
    about = [k for k in args if not set(words_of(k)) & LOCATING] if len(args) > 1 else list(args)
    one = [w for k in about for w in words_of(k)] if len(about) == 1 else []
    if len(words) > 2 and words[0] not in VERBS and words[1] in VERBS:  # a prefix naming the server: "github get issue"
        words = [words[1], words[0], *words[2:]]
    elif len(words) == 2 and words[0] not in VERBS and words[1] in GETS and one and one[-1] not in IDENTIFYING:
        # ... before a verb that gets, what it gets its one argument: "git show" of a revision gives the revision
        words = [words[1], *one]
    elif len(words) == 2 and words[0] not in VERBS and words[1] in VERBS and words[1] not in ABOUT_IT:
        # a thing, then what is done to it: "task create" ("git status" is a noun's)
        words = [words[1], plural(words[0]) if words[1] == "list" else words[0]]
    verb = words[0] if words and (words[0] in VERBS or order and not quantified and len(words) > 1) else None
    thing = " ".join(words[1:] if verb else words)
    head, _, state = thing.rpartition(" ")
    if head and participle(state):  # a state a name says after its thing ("git diff unstaged"), said before it
        thing = f"{state} {head}"
    # (an empty object, list or text states nothing: "Rename columns with session id ...", not "... and mapping ()")
    shown = {k: (PREVIOUS if k in linked else v) for k, v in args.items() if k in linked or v not in ({}, [], "")}
    names = {k: words_of(k) for k in shown}

    def text(v: Any) -> str:
        return v if v == PREVIOUS else quoted(v)

    def handle(k: str) -> str | None:
        """A handle, as what it is a handle of: "that session" of a `session_id` the previous result gave, "issue 12"
        of `issue_id` 12."""
        if not (names[k][1:] and names[k][-1] == "id"):
            return None
        kind = spoken(k).removesuffix(" id")
        return f"that {kind}" if shown[k] == PREVIOUS else f"{kind} {text(shown[k])}"

    def plain(v: Any) -> bool:
        return not isinstance(v, (bool, dict)) and not (isinstance(v, list) and any(isinstance(x, dict) for x in v))

    # operands: every argument named by a letter ("a", "b"), or the one named by `BARE_NAMES` ("numbers")
    letters = [k for k, v in shown.items() if len(k) == 1 and k.isalpha() and plain(v)]
    bare = [k for k, v in shown.items() if len(names[k]) == 1 and singular(spoken(k)) in BARE_NAMES and plain(v)]
    operands = letters if letters and not bare else bare if len(bare) == 1 and not letters else []
    values = [text(x) for k in operands for x in (shown[k] if isinstance(shown[k], list) else [shown[k]])]
    # named: the one argument named by `IDENTIFYING`, or by the thing's last word ("table name" of "describe table")
    last = thing.split(" ")[-1] if thing else ""
    naming = [
        k
        for k, v in shown.items()
        if k not in operands
        and plain(v)
        and not isinstance(v, list)
        and names[k]
        and (
            len(names[k]) == 1
            and names[k][0] in {*IDENTIFYING, last}
            or names[k][0] == last
            and names[k][-1] not in KINDS
        )
    ]
    # (else the one named by identifying words alone, `file_path`, `file_name`; or records, each named, that are the
    # things the title names: 'Create entities "Weekly report" (entity type person)', not "with entities (name ...)")
    naming = naming or [
        k
        for k, v in shown.items()
        if k not in operands
        and (
            plain(v)
            and not isinstance(v, list)
            and all(w in IDENTIFYING for w in names[k])
            or isinstance(v, list)
            and v
            and all(named_record(x) for x in v)
            and names[k] == [last]
        )
    ]
    # (two that name it: the one named for the thing itself, the object of "git show", where the other says where it
    # looks, said as where: "the object main in "/srv/r"")
    if len(naming) > 1 and len(own := [k for k in naming if names[k] == [last]]) == 1:
        naming = own
    named = naming if len(naming) == 1 else []
    apposed = bool(named) and last not in ABOUT_IT and (names[named[0]][-1] not in PATHS or singular(last) in PLACES)
    # ... or the one value of a call of a title that names what it gets: what it is for ("the weather for London", not
    # "with city London"), but for a kind of it ("the git branches with branch type local")
    only = next(iter(shown)) if len(shown) == 1 and not operands and not named and verb in {None, *GETS} else None
    plain_one = only is not None and plain(shown[only]) and not isinstance(shown[only], list)
    if plain_one and names[only] and names[only][-1] not in KINDS and only not in settings:
        named = [only]
    # a parameter whose name starts with a preposition (or a word for one: `ENDS`) no other one starts with: that
    # preposition and its value
    lead = {k: ENDS.get(n[0], n[0]) for k, n in names.items() if n}
    prepositions = Counter(p for p in lead.values() if p in PREPOSITIONS)
    placed = {
        k: f"{lead[k]} {text(v)}"
        for k, v in shown.items()
        if k not in operands and k not in named and plain(v) and k in lead and prepositions[lead[k]] == 1
    }
    # ... and where a call looks, beside the thing it names (not a file's path: "with file path README.md")
    where = [
        k
        for k, v in shown.items()
        if k not in {*named, *operands, *placed} and plain(v) and set(names[k]) & LOCATING and not set(names[k]) & FILES
    ]
    if named and len(where) == 1:
        placed[where[0]] = f"in {text(shown[where[0]])}"
    # ... and a handle the previous result gave, as what it is a handle of ("for that session", not "with session id
    # the previous result")
    for k in shown:
        if k not in {*named, *operands, *placed} and shown[k] == PREVIOUS and (of := handle(k)) is not None:
            placed[k] = f"for {of}"
    others = {k: v for k, v in shown.items() if k not in operands and k not in named and k not in placed}
    # the others by name and value ("with repo path /srv/r and max count 3"), a flag by its name alone, with or without
    # it ("with include untracked", "without stat"), not as True or False
    withs = [spoken(k) if v is True else f"{spoken(k)} {quoted(v)}" for k, v in others.items() if v is not False]
    withouts = [spoken(k) for k, v in others.items() if v is False]
    flags = ", ".join(p for p in (withs and f"with {_listed(withs)}", withouts and f"without {_listed(withouts)}") if p)
    rest = " ".join([*placed.values(), *([flags] if flags else [])])
    # two operands of an order whose order matters: the letters given in their order ("a", "b"), or one list's items
    ordered = bool(operands) and (operands == sorted(letters) or isinstance(shown[operands[0]], list))
    joined = OPERANDS.get(verb or "") if len(values) == 2 and ordered else None
    saying = Said(
        verb,
        thing,
        joined.format(*values) if joined else _listed(values),
        # (what a handle is of, where the title does not name that thing: "the history for that session", "the
        # comments for issue 12", not "the session info for that session" nor "close session that session")
        " ".join((None if set(names[k][:-1]) <= set(words_of(thing)) else handle(k)) or text(shown[k]) for k in named),
        apposed,
        rest.replace(f'"{PREVIOUS}"', PREVIOUS),
    )
    # (the file that a "file info" is about, the value named apposed where it names it: 'the file "/srv/docs"')
    head, _, tail = thing.rpartition(" ")
    if head and tail in ABOUT_ONLY and saying.named != PREVIOUS:
        apposed = bool(named) and (names[named[0]][-1] not in PATHS or singular(head.split(" ")[-1]) in PLACES)
        return replace(saying, of=replace(saying, thing=head, apposed=apposed))
    return saying


# How a task asks for a result: a few wordings, so that no one sentence shape is what the policy learns; after what
# the call does (`ASKS`), or of what it gives (`PHRASE_ASKS`: "What is the sum of 7 and 3?")
ASKS = ("{}. What is the result?", "{}: what do you get?", "{}, and tell me the result.")
PHRASE_ASKS = ("What {be} {phrase}?", "Tell me {phrase}.", "Find {phrase}.")
TEXT_ASKS = ("What {do} {phrase} say?", "Tell me what {phrase} {says}.")  # ... a text a read gives back whole
CALL_TEXT_ASKS = ("{action}. What does it say?", "{action} and tell me what it says.")
MARKED_ASKS = ("What is the current {one}?", "Which {one} is the current one?")  # ... the one a listing marks
DOES = ("{}.", "Please do this: {}.", "{}, please.")  # how a task asks for a change
FORMULA_ASKS = ("What is {}?", "Compute {}.", "Work out {}.", "{} = ?")  # how a task asks for an expression's value
WORDED_FORMULA_ASKS = ("What is {}?", "How much is {}?", "Work out {}.")  # ... said in words ("45 times 6")
# a field that is the call's value itself, whatever its tool gives ("result": "What is the sum of 7 and 3?")
GENERIC_FIELDS = frozenset("result value output answer".split())
# how a task asks for a field of the record a call gave: of what the call gives ("What is the temperature of the
# structured content with location ...?"), or after what the call does ("Git show with revision a11a100. What is
# the author?")
FIELD_ASKS = ("{What} {be} the {field} of {phrase}?", "Find {phrase} and tell me its {field}.")
CALL_ASKS = ("{action}. {What} {be} the {field}?", "{action} and tell me the {field}.")
ONE_LISTED_ASKS = (
    "{action}. {What} {be} the {field} of the {one} listed?",
    "{action} and tell me the {field} of the {one}.",
)
STATE_ASKS = ("What {be} {field} in {phrase}?",)  # ... and a state it is in ("What is modified in the git status?")
CALL_STATE_ASKS = ("{action}. What {be} {field}?",)
# ... and when it was done, a date a participle names ("created": "When was the document "a.docx" created?")
DATED_ASKS = ("When {was} {phrase} {done}?",)
CALL_DATED_ASKS = ("{action}. When {was} it {done}?",)
# ... and how many things are in a state, a number ("files changed": "How many files changed in the git diff?")
COUNTED_ASKS = ("How many {field} in {phrase}?",)
CALL_COUNTED_ASKS = ("{action}. How many {field}?",)
# ... and a field a preposition names, as people ask it ("Who is the email msg-0143 from?", not "the from of")
PREPOSITION_ASKS = ("{What} {be} {phrase} {field}?",)
PREPOSITION_NAME_ASKS = ('{What} {be} the {noun} "{name}" {field}?',)
# how a task asks for a field of one record, by its name: quoted or not, as people write ("What does the
# steel hammer cost?" names it bare); a policy that saw only quotes learnt to copy quoted words alone
NAME_ASKS = (
    '{What} {be} the {field} of the {noun} "{name}"?',
    "{What} {be} the {field} of the {name}?",
    "{What} {be} the {name}'s {field}?",
    "Find the {name} and tell me its {field}.",
)
# ... and a number of things it has ("pages": 880), how many: "How many pages does the novel "Middlemarch" have?"
COUNT_NAME_ASKS = ('How many {field} does the {noun} "{name}" have?', "How many {field} does the {name} have?")
DATED_NAME_ASKS = ('When {was} the {noun} "{name}" {done}?', "When {was} {name} {done}?")  # (a date it was done on)
STATE_NAME_ASKS = ('What {be} {field} in the {noun} "{name}"?', "What {be} {field} in {name}?")  # (a state: "added")
# ... and, a line of a listing, in what the call gives ("In the git log, who is the author of the commit whose message
# is ...?") or after what it does, by a field that picks the line out or by its place ("of the latest commit", as
# people ask for the latest entry of a log); alone where that says which line it is
# ("the" before a thing a field names, not before a state: "what is added where the file is VERSION?")
RECORD_IN_ASKS = ("In {phrase}, {what} {be} {the}{field} {which}?",)
RECORD_ASKS = ("{action}. {What} {be} {the}{field} {which}?",)
RECORD_ALONE_ASKS = ("{What} {be} {the}{field} {which}?",)
# ... and a date it was done on, which a participle names ("created": "When was the first one listed created?")
RECORD_IN_DATED_ASKS = ("In {phrase}, when {was} {which} {done}?",)
RECORD_DATED_ASKS = ("{action}. When {was} {which} {done}?",)
RECORD_ALONE_DATED_ASKS = ("When {was} {which} {done}?",)
# ... and by what a search that found it was about
TOPIC_ASKS = (
    "{What} {be} the {field} of the {noun} about {topic}?",
    "Find the {noun} about {topic} and tell me its {field}.",
)
# ... or by the value of one of its fields a filter was sent ("the todo with context phone")
FILTER_ASKS = (
    "{What} {be} the {field} of the {noun} with {filter} {topic}?",
    "Find the {noun} with {filter} {topic} and tell me its {field}.",
)
# how a task asks for every name a short listing gives: after what the call does ("List directory ".". What does it
# list?"), or by what it holds (mcprl.scenarios.lexicon.about of a known query, `Said.listing` of a title: "What are
# the git branches with branch type all?")
LIST_ASKS = ("{action}. What does it list?", "{action}: name everything it lists.")
ABOUT_LIST_ASKS = ("What are {about}?", "Name {about}.")
COUNT_ASKS = ("How many {things} are there?", "Count {about}.")
COUNT_IN_ASKS = ("How many {things} are in {phrase}?", "Count the {things} in {phrase}.")
ABOUT_ACTION = "Look at {about}"  # what a known query does, where a task states the call


def _noun_word(tool: str) -> str:
    words = [
        w
        for w in words_of(tool)
        if w not in TASK_VERBS and w not in FILLER and w not in {"by", "id", "all", *ABOUT_ONLY}
    ]
    return words[-1] if words else "result"


def noun_of(tool: str) -> str:
    """What a tool's results are about, from its name: `get_item` -> item, `search_emails` -> email,
    `list_projects_tool` -> project."""
    return singular(_noun_word(tool))


def names_each(tool: str) -> bool:
    """Whether a tool's name calls each record it lists what it is: its noun is a plural (`list_tasks`: each a task),
    not the whole the records are parts of (`read_range`: rows of a range, none of them "the range")."""
    word = _noun_word(tool)
    return singular(word) != word


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
