"""Which grounded tasks a run gets: one per meaning, however worded or however its chain found its
answer (`meaning`: the field it asks for, its answer, the values it states, but not the values of
filters that changed nothing), the most focused of them kept (`focus`: the answer in the fewest
records, then the fewest calls and arguments), spread over the tools and, within a tool, over what
they ask for (`select`)."""

from __future__ import annotations

import random
import re
from collections import Counter, defaultdict
from collections.abc import Mapping
from itertools import combinations
from typing import Any

from mcprl.checks import as_number, live_of, normalize_text
from mcprl.scenarios.lexicon import BOUND_WORDS, STAND_IN_WORDS, words_of
from mcprl.scenarios.phrasing import value_text
from mcprl.scenarios.record_tasks import MAX_LISTED
from mcprl.scenarios.values import call_key
from mcprl.types import Scenario


def focus(task: Scenario) -> tuple[int, int, int, int]:
    """How hard a grounded task's reference is to follow: the records of the result that holds its
    answer (one, or a listing to find a line in), then its calls, then the values they take (`parts`: a range's start
    and end are two), then the calls that prepare its state (a question asked of a fresh server is the plainer)."""
    return (
        task.metadata.get("records", 1),
        len(task.reference),
        sum(len(parts(c.arguments)) for c in task.reference),
        len(task.prepare),
    )


def parts(value: Any, path: str = "") -> dict[str, str]:
    """Arguments as the values they are made of, each by its path, however deep (a request's file and its range's
    start: "files.0.file_path", "files.0.ranges.0.start"), normalised; a list of plain values is one value (the
    names to open), and an argument that is one value keeps its name."""
    if isinstance(value, dict) and value:
        return {p: v for k, item in value.items() for p, v in parts(item, f"{path}.{k}" if path else str(k)).items()}
    if isinstance(value, (list, tuple)) and any(isinstance(item, dict) for item in value):
        return {p: v for at, item in enumerate(value) for p, v in parts(item, f"{path}.{at}").items()}
    return {path: normalize_text(value_text(value))}


def unstated(arguments: dict[str, Any], paths: set[str]) -> dict[str, Any]:
    """Arguments less the values at `paths` (`parts`' paths: "files.0.ranges.0.start"), and less what that leaves
    empty (a range with no bound, a list of none): what a task states where those changed no answer."""

    def left(value: Any, path: str) -> Any:
        if path in paths:
            return None
        if isinstance(value, dict):
            kept = {k: v for k, item in value.items() if (v := left(item, f"{path}.{k}" if path else k)) is not None}
            return kept or None
        if isinstance(value, list) and any(isinstance(item, dict) for item in value):
            kept_items = [v for at, item in enumerate(value) if (v := left(item, f"{path}.{at}")) is not None]
            return kept_items or None
        return value

    return left(arguments, "") or {}


def asks(task: Scenario) -> tuple[str, str]:
    """The tool a task's chain ends with and what it asks of its result (the field, else the kind of task)."""
    return task.reference[-1].tool, task.metadata.get("field") or task.metadata["kind"]


def answer_key(answer: Any) -> str:
    """An answer as one question's: a number by its value (-5.5 is not 5.5, "42.0" is 42), a list by its items in any
    order (a server that lists a set lists it in another order each process: one question), else its normalised
    text."""
    if isinstance(answer, list):
        return repr(sorted(map(answer_key, answer)))
    number = as_number(answer)
    return repr(number) if number is not None else normalize_text(str(answer))


# how often idle parameters are looked for again, each time without those found: enough for a range's start and end
IDLE_PASSES = 4


def _compared(tasks: list[Scenario]) -> list[tuple[tuple[str, str], dict[str, str], tuple[Any, ...], str, str]]:
    """What `idle_parameters` and `unsaid_parameters` compare of each task: what it asks (`asks`), its call's values
    (`parts`), the values besides those that pick its record out, its answer (`answer_key`), and its call (`call_key`
    of the tool and arguments). Not a task asked of a state other tools' writes prepare."""
    asked = []
    for t in tasks:
        if t.read_back is not None:
            continue
        call = t.reference[-1]
        values = parts(call.arguments)
        sent = {*values.values(), *(normalize_text(value_text(v)) for v in call.arguments.values())}
        picks = (
            tuple(sorted({normalize_text(str(g)) for g in stated_values(t)} - sent)),
            t.metadata.get("place"),
            tuple(c.tool for c in t.prepare),
        )
        asked.append((asks(t), values, picks, answer_key(t.answer), call_key(call.tool, call.arguments)))
    return asked


def unsaid_parameters(tasks: list[Scenario]) -> dict[tuple[str, str], set[str]]:
    """(the call, `call_key`; what is asked, `asks`' field) -> the parts of that call's arguments a task asking it
    need not state: each a bound of a range (`lexicon.BOUNDS`), compared, for every task asking it of the call and the
    call's other parts held, across two values or more, all with one answer (a file's total lines, whichever line the
    read started at). Unlike `idle_parameters`, of the call's own comparisons alone: a range's start that changed no
    answer where one file was read past its end still picks the lines read of another. A part found is left out of
    the comparisons of the rest, made again."""
    asked = _compared(tasks)
    # (only a range's bounds, numbers: a search's words each matched its one record, and other words find nothing;
    # two documents of one page each, or tasks 3 and 5 both pending, are not one)
    bounds = [
        {k for k, v in values.items() if as_number(v) is not None and set(words_of(k.rpartition(".")[2])) & BOUND_WORDS}
        for _, values, *_ in asked
    ]
    unsaid: dict[int, set[str]] = defaultdict(set)
    for _ in range(IDLE_PASSES):
        groups: dict[tuple[Any, ...], dict[str, set[str]]] = defaultdict(lambda: defaultdict(set))
        members: dict[tuple[Any, ...], list[int]] = defaultdict(list)
        for i, ((tool, field), values, picks, answer, _) in enumerate(asked):
            rest = {k: v for k, v in values.items() if k not in unsaid[i]}
            for k, v in rest.items():
                group = (tool, field, k, tuple(sorted((k2, v2) for k2, v2 in rest.items() if k2 != k)), picks)
                groups[group][v].add(answer)
                members[group].append(i)
        found = [
            (g, i)
            for g, by_value in groups.items()
            if len(by_value) > 1 and len(set().union(*by_value.values())) == 1
            for i in members[g]
            if g[2] in bounds[i]
        ]
        if not found:
            break
        for g, i in found:
            unsaid[i].add(g[2])
    # (of every task asking it of the call: a start that changed no count of plums may change that of apples)
    each: dict[tuple[str, str], list[set[str]]] = defaultdict(list)
    for i, ((_, field), *_, call) in enumerate(asked):
        each[call, field].append(unsaid[i])
    return {key: common for key, sets in each.items() if (common := set.intersection(*sets))}


def idle_parameters(tasks: list[Scenario]) -> dict[tuple[str, str], set[str]]:
    """(tool, what is asked: `asks`) -> the parameters (`parts`, however deep) whose value changed no answer: tasks
    asking the same of the same tool, given the same values but for that one's, have one answer (a time difference is
    the same at 9:30 and at noon; a file's total lines whichever lines a request's range read), wherever it was varied.
    Where some of its values changed the answer (a target zone), it is not idle, even beside other values that did not
    (two names of one zone: UTC, Etc/UTC). A part found idle stays so and is left out of the comparisons of those not
    yet found, which are made again (a range's end, sent only beside starts that differ, compared once the start is
    known to change nothing); two found at once were each found with the other held. The
    values given are the call's and those that pick a record of its result out (the file of a diff where a line is
    added, the latest commit): a diff against any of five revisions adds that line to one file. Tasks asked of a state
    other tools' writes prepare (a file written before a listing) are not compared with the rest."""
    asked = _compared(tasks)
    idle: set[tuple[str, str, str]] = set()
    for _ in range(IDLE_PASSES):
        answers: dict[tuple[Any, ...], dict[str, str]] = defaultdict(dict)  # ... -> that part's value -> answer
        for (tool, field), values, picks, answer, _ in asked:
            rest = {k: v for k, v in values.items() if (tool, field, k) not in idle}
            for k, v in rest.items():
                others = tuple(sorted((k2, v2) for k2, v2 in rest.items() if k2 != k))
                answers[(tool, field, k, others, picks)][v] = answer
        varied, changed = set(), set()  # (tool, field, part): given two values or more; and so changing an answer
        for (tool, field, k, _, _), by_value in answers.items():
            if len(by_value) > 1:
                varied.add((tool, field, k))
                if len(set(by_value.values())) > 1:
                    changed.add((tool, field, k))
        if not varied - changed:
            break
        idle |= varied - changed
    found: dict[tuple[str, str], set[str]] = defaultdict(set)
    for tool, field, k in idle:
        found[tool, field].add(k)
    return found


# a number of seven decimals or more: what a computation gave ("the sqrt of 8" as 2.8284271247461903), never what a
# person types; a task stating one asks for it by the call that gave it, or not at all
COMPUTED = re.compile(r"(?<![\w.])-?\d+\.\d{7,}")
# the values a question a person asks states, at most: one that states more recites a call's arguments ("... with
# thought 6, thought number 13, total thoughts 8 and branch from thought 21 ...", a unit, a city and a country sent
# to a tool that ignored them)
MAX_GIVEN = 3
# a thing asked of itself ("What is the current mode of the current mode?", "the sheet of the sheet "Ann Lee""): the
# field and the record it is asked of are one, which no one asks
OF_ITSELF = re.compile(r"\bthe (\w+(?: \w+){0,2}) of the \1(?! \w)", re.I)


def twice(task: Scenario, optional: Mapping[str, set[str]]) -> bool:
    """Whether a task's call is given one text twice as what it works on (not as `optional` filters, where
    one date as both bounds of a range asks for that day): converting a zone or a unit to itself asks nothing."""
    call = task.reference[-1]
    texts = [
        normalize_text(v)
        for k, v in call.arguments.items()
        if isinstance(v, str) and k not in optional.get(call.tool, ())
    ]
    return len(set(texts)) < len(texts)


def meaning(
    task: Scenario, optional: Mapping[str, set[str]], idle: Mapping[tuple[str, str], set[str]]
) -> tuple[Any, ...]:
    """What a task asks, whatever its wording or the chain that grounded it: the field it asks for (else
    the tool its chain ends with), its answer (where the server answers anew each time, where it is read), the
    place in a listing that picks its record out, and the values it states, but those of `optional`
    parameters (tool -> names) and `idle` ones (`idle_parameters`): a filter that left the answer where it
    was, or a value that changed no answer, does not make another question."""
    call, unchanged = task.reference[-1], idle.get(asks(task), set())
    filters = {
        normalize_text(value_text(v))
        for c in task.reference
        for k, v in c.arguments.items()
        if k in optional.get(c.tool, ()) or c is call and k in unchanged
    }
    # (a value made of parts, a request's file and range, stated by the parts that changed an answer)
    composed: dict[str, list[str]] = {}
    for k, v in call.arguments.items():
        if len(made := parts(v, k)) > 1:
            kept = [f"{p} {part}" for p, part in made.items() if p not in unchanged]
            composed[normalize_text(value_text(v))] = kept
            # (... and so where a task leaves some of those out: `unsaid_parameters`, "the total lines of todo.txt")
            idle_here = sorted(set(made) & unchanged)
            for n in range(1, len(idle_here) + 1):
                for left in combinations(idle_here, n):
                    if (less := unstated({k: v}, set(left)).get(k)) is not None:
                        composed.setdefault(normalize_text(value_text(less)), kept)
    given = [g for g in map(normalize_text, map(str, stated_values(task))) if g not in filters]
    live = live_of(task.check)
    return (
        task.metadata.get("field") or call.tool,
        answer_key(task.answer) if live is None else f"live {live.field}",  # a roll's sum, whichever it was once
        task.read_back is not None,
        tuple(sorted(part for g in given for part in composed.get(g, [g]))),
        task.metadata.get("place"),  # (the author of the latest commit and of the earliest: two questions)
    )


def stated_values(task: Scenario) -> list[Any]:
    """The values a task states: its `given` (none for a question said by what its query's result holds, "the rows
    of the department table", whichever query gave them), else its last call's arguments."""
    if "given" in task.metadata:
        return task.metadata["given"]
    return [value_text(v) for v in task.reference[-1].arguments.values()]


def stated_items(task: Scenario) -> Counter:
    """The values a task states (its `given`, else its call's arguments), a list's items each, normalised."""
    lists = {
        normalize_text(value_text(v)): v for c in task.reference for v in c.arguments.values() if isinstance(v, list)
    }
    given = stated_values(task)
    return Counter(normalize_text(value_text(item)) for g in given for item in lists.get(normalize_text(str(g)), [g]))


def _parameters(tool: dict[str, Any]) -> tuple[dict[str, Any], set[str]]:
    """A tool's input schema's properties and the names it requires."""
    schema = tool.get("inputSchema") or {}
    properties = schema.get("properties") if isinstance(schema.get("properties"), dict) else {}
    return properties, set(schema.get("required") or [])


def stand_in_parameters(tools: list[dict[str, Any]]) -> dict[str, set[str]]:
    """Each tool's parameters its input schema describes as changing nothing (`lexicon.STAND_IN_WORDS`: "Dummy
    parameter for no-parameter tools"): no task states what they were sent."""
    return {
        tool["name"]: {
            k
            for k, p in _parameters(tool)[0].items()
            if isinstance(p, dict) and STAND_IN_WORDS & set(words_of(str(p.get("description") or "")))
        }
        for tool in tools
    }


def optional_parameters(tools: list[dict[str, Any]]) -> dict[str, set[str]]:
    """Each tool's parameters that its input schema does not require."""
    out = {}
    for tool in tools:
        properties, required = _parameters(tool)
        out[tool["name"]] = set(properties) - required
    return out


def schema_defaults(tools: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Each tool's parameters that its input schema gives a default, and that default."""
    return {
        tool["name"]: {
            k: p["default"] for k, p in _parameters(tool)[0].items() if isinstance(p, dict) and "default" in p
        }
        for tool in tools
    }


def select(
    tasks: list[Scenario], n: int, *, seed: int, optional: Mapping[str, set[str]] | None = None
) -> tuple[list[Scenario], Counter]:
    """At most `n` tasks, one per meaning (`meaning`: one question worded four ways, or asked with filters that
    change nothing, is one task; the most focused kept), spread over the tools
    their chains end with and,
    within a tool, over what they ask for (the field; round robin, each group's tasks shuffled by
    the seed): a mailbox's every email has a subject, few a confirmation code, and both are asked
    about as often. Also the count of those left out."""
    rng = random.Random(f"{seed}/grounded/select")
    dropped: Counter = Counter()
    best: dict[str, list[Scenario]] = {}  # a meaning -> the chains that answer it that a rollout can best follow
    every: dict[str, list[Scenario]] = defaultdict(list)  # a meaning -> every chain that answers it
    asked: dict[str, str] = {}  # a meaning -> what it asks and what answers it, whatever it states
    idle = idle_parameters(tasks)
    worded: dict[tuple[str, str], str] = {}  # a task's words and answer -> its meaning: one question, whichever tool
    for t in tasks:
        if twice(t, optional or {}):
            dropped["one text given twice"] += 1
            continue
        if COMPUTED.search(t.task):
            dropped["states a number only a computation gives"] += 1
            continue
        if len(t.metadata.get("given") or []) > MAX_GIVEN:
            dropped[f"states more than {MAX_GIVEN} values"] += 1
            continue
        if OF_ITSELF.search(t.task):
            dropped["asks a thing of itself"] += 1
            continue
        meant = meaning(t, optional or {}, idle)
        # (the same words with the same answer are one question, though two tools' chains ground it: a table's
        # columns, listed by a tool that describes it and by a query)
        key = worded.setdefault((normalize_text(t.task), str(meant[1])), repr(meant))
        # (... and a listing of two or more things stating the same values is one question, however worded and by
        # whichever tool or field: "What are the tables?" of one tool and "... of the database?" of a query)
        if isinstance(t.answer, list) and len(t.answer) > 1:
            key = worded.setdefault(("listing", str(meant[1]), repr(meant[2:4])), key)
        asked.setdefault(key, repr(meant[:3]))
        every[key].append(t)
        if key not in best:
            best[key] = [t]
            continue
        dropped["duplicate"] += 1
        # the answer in the fewest records (`get_item` over a listing's fifteenth line), then the fewest calls
        if focus(t) < focus(best[key][0]):
            best[key] = [t]
        elif focus(t) == focus(best[key][0]):
            best[key].append(t)
    # one that states what another of its field and answer states and more (a name beside made-up ones: the nodes
    # "Team meeting" and "hello world") asks what that one asks; not where the other states nothing (a listing's
    # line is not what a question naming its record asks)
    items = {key: stated_items(chains[0]) for key, chains in best.items()}
    for key in [k for k in best if any(asked[o] == asked[k] and items[o] and items[o] < items[k] for o in items)]:
        del best[key]
        dropped["duplicate"] += 1
    # of a meaning's chains, the one of the tool that fewest meanings end with so far: the run asks of more of the
    # server's tools (`read_text_file` and `read_file` read one file alike)
    ends = Counter(chains[0].reference[-1].tool for chains in best.values() if len(chains) == 1)
    unique: dict[str, Scenario] = {}
    for key, chains in best.items():
        unique[key] = min(chains, key=lambda c: ends[c.reference[-1].tool])
        # ... or, where that tool ends others and one that ends none answers it too, less plainly but in a listing a
        # reader goes through, that one's: the export of the rows a read listed asks of one tool more (the read's
        # own query with fewer rows, of none)
        tool = unique[key].reference[-1].tool
        if len(chains) == 1:
            ends[tool] -= 1
        unasked = [c for c in every[key] if not ends[c.reference[-1].tool] and focus(c)[0] <= MAX_LISTED]
        if ends[tool] and unasked:
            unique[key] = min(unasked, key=focus)
        ends[unique[key].reference[-1].tool] += 1
    # an answer of 0 is the likeliest guess (a count of none, an expression's imaginary part): those tasks are taken
    # only where no other is left, as a yes or no never is one
    zero = [t for t in unique.values() if as_number(t.answer) == 0]
    picked = _spread([t for t in unique.values() if as_number(t.answer) != 0], n, rng)
    picked += _spread(zero, n - len(picked), rng)
    if left := len(unique) - len(picked):
        dropped["beyond the number asked for"] += left
    return picked, dropped


def _spread(tasks: list[Scenario], n: int, rng: random.Random) -> list[Scenario]:
    """At most `n` of `tasks`, a tool at a time in turn and, within a tool, a field at a time (round robin)."""
    by_tool: dict[str, dict[str, list[Scenario]]] = defaultdict(lambda: defaultdict(list))
    for t in tasks:
        tool, field = asks(t)
        by_tool[tool][field].append(t)
    for groups in by_tool.values():
        for group in groups.values():
            rng.shuffle(group)
            group.sort(key=lambda t: t.difficulty or 1)  # easy first within a group: a curriculum's start
    turn = {tool: 0 for tool in by_tool}  # the next group of each tool's to take from

    def take(tool: str) -> Scenario:
        groups = [g for _, g in sorted(by_tool[tool].items()) if g]
        turn[tool] += 1
        return groups[(turn[tool] - 1) % len(groups)].pop(0)

    picked: list[Scenario] = []
    while len(picked) < n and any(g for groups in by_tool.values() for g in groups.values()):
        for tool in sorted(by_tool):
            if any(by_tool[tool].values()) and len(picked) < n:
                picked.append(take(tool))
    return picked
