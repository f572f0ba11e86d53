"""The tasks an exploration's record grounds, before verification (mcprl.scenarios.candidates,
mcprl.scenarios.record_tasks, mcprl.scenarios.grounded_task): what each asks, how it is worded, and what is no
answer."""

from __future__ import annotations

import datetime
import json
import re
import sys
from pathlib import Path

import pytest

from mcprl.scenarios.explored import ExploredCall
from mcprl.tools import ServerSpec, ToolPool
from mcprl.types import Scenario

pytestmark = pytest.mark.anyio


def test_a_short_listing_asks_for_every_name_it_gives_and_states_none():
    """A listing whose lines are names, none labelled (`git_branch`'s "  feature/alerts\n* main"), grounds a
    task asking for them all, markers left out, checked by the share the answer holds; the task states none
    of them. Prose lines, a listing of one line, or one of the values the call was sent ground none."""
    from mcprl.judges.verify import checker_for
    from mcprl.scenarios.candidates import candidates
    from mcprl.scenarios.explored import Exploration, ExploredCall
    from mcprl.types import Message, Trajectory

    def listing(text: str, arguments: dict | None = None) -> list:
        call = ExploredCall(index=0, session=0, tool="git_branch", arguments=arguments or {}, text=text)
        return [t for t in candidates(Exploration(calls=[call]), {}, seed=0) if t.metadata["kind"] == "listing"]

    (task,) = listing("  feature/alerts\n* main\n[DIR] docs")
    assert task.answer == ["feature/alerts", "main", "docs"] and task.check.kind == "contains"
    assert not any(name in task.task for name in task.answer)
    check = checker_for(task)

    def said(answer: str) -> float:
        return check(task, Trajectory(messages=[Message(role="assistant", content=answer)]))

    assert said("The branches are feature/alerts and main, and the folder docs.") == 1.0
    assert 0 < said("Only main.") < 1
    assert listing("Changes to be committed and more\nOn branch main") == []  # prose, not names
    assert listing("main") == []  # one line
    assert listing("main\ndev", {"name": "dev"}) == []  # a listing of what the call was given


def test_the_one_record_a_listing_gave_is_asked_for_as_what_each_record_is_not_as_what_the_call_was_sent():
    """@modelcontextprotocol/server-filesystem's `directory_tree` of a folder of one file: 'What is the name of the
    "/tmp/docs" listed?' said the folder as what was listed; the one entry is asked of as the entry in the tree."""
    from mcprl.scenarios.candidates import candidates
    from mcprl.scenarios.explored import Exploration, ExploredCall

    tree = json.dumps([{"name": "todo.txt", "type": "file"}])
    call = ExploredCall(index=0, session=0, tool="directory_tree", arguments={"path": "/srv/docs"}, text=tree)
    asked = {t.task for seed in range(8) for t in candidates(Exploration(calls=[call]), {}, seed=seed)}
    assert any(t.endswith('of the entry in the directory tree for "/srv/docs"?') for t in asked), asked
    assert not any(re.search(r'" listed\b', t) for t in asked), asked


def test_a_listing_whose_names_each_have_a_note_in_parentheses_asks_for_the_names():
    """office-word-mcp-server's `list_available_documents` ("Found 2 Word documents in .:", "- notes.docx (35.80
    KB)", ...) grounded nothing: a line with a size after its name read as no name."""
    from mcprl.scenarios.candidates import candidates
    from mcprl.scenarios.explored import Exploration, ExploredCall

    text = "Found 2 Word documents in .:\n- notes.docx (35.80 KB)\n- report.docx (36.03 KB)\n"
    call = ExploredCall(index=0, session=0, tool="list_available_documents", arguments={}, text=text)
    answers = {repr(t.answer) for seed in range(4) for t in candidates(Exploration(calls=[call]), {}, seed=seed)}
    assert answers == {repr(["notes.docx", "report.docx"])}, answers


def test_the_one_line_a_listing_marks_is_asked_as_the_current_one():
    """mcp-server-git's `git_branch` ("  feature/alerts", "* main"): its names were asked, never which is checked
    out, which hand-written questions ask ("Which branch is checked out right now?"). The one line a listing marks
    with `*`, the others unmarked, is asked as the current one; a list whose every line is marked (a Markdown list)
    marks none."""
    from mcprl.scenarios.candidates import candidates
    from mcprl.scenarios.explored import Exploration, ExploredCall

    def asked(text: str) -> dict[str, str]:
        call = ExploredCall(index=0, session=0, tool="git_branch", arguments={}, text=text)
        return {
            str(t.answer): t.task for seed in range(6) for t in candidates(Exploration(calls=[call]), {}, seed=seed)
        }

    found = asked("  feature/alerts\n* main\n  release\n")
    assert "current branch" in found["main"], found
    assert not any("current" in task for task in asked("* feature/alerts\n* main\n").values())


def test_a_record_that_is_its_name_alone_is_asked_its_name_only_where_the_call_picked_it_out():
    """`list_tables` of a database of one table, `[{"name": "books"}]`: "List tables. What is the name?" asks of
    nothing a person could name; a call sent what picks its one record out (`get_user` of id 7) is asked it."""
    from mcprl.scenarios.candidates import candidates
    from mcprl.scenarios.explored import Exploration, ExploredCall

    def tasks(tool: str, arguments: dict) -> list[str]:
        text = json.dumps([{"name": "books"}] if not arguments else {"name": "Ada Byron"})
        call = ExploredCall(index=0, session=0, tool=tool, arguments=arguments, text=text)
        return [t.task for t in candidates(Exploration(calls=[call]), {}, seed=0)]

    assert tasks("list_tables", {}) == []
    assert tasks("get_user", {"user_id": 7})


def test_no_task_states_a_filter_that_changed_nothing():
    """`git_log` with `end_timestamp` "README" said what `git_log` alone said: every task is asked of the
    plain call (its reference takes no filter, its wording states none); a filter that changed the answer
    stays."""
    from mcprl.scenarios.candidates import candidates
    from mcprl.scenarios.explored import Exploration, ExploredCall

    log = "Commit: a1\nAuthor: Ann Lee\nMessage: Initial commit\n\nCommit: b2\nAuthor: Bob Stone\nMessage: Add tests"
    calls = [
        ExploredCall(index=0, session=0, tool="git_log", arguments={"end_timestamp": "README"}, text=log),
        ExploredCall(index=1, session=0, tool="git_log", arguments={}, text=log),
        ExploredCall(index=2, session=0, tool="git_log", arguments={"max_count": 1}, text=log.split("\n\n")[0]),
    ]
    tasks = [t for seed in range(4) for t in candidates(Exploration(calls=calls), {}, seed=seed)]
    assert tasks and not any("README" in t.task or "end_timestamp" in t.reference[-1].arguments for t in tasks)
    assert any(t.reference[-1].arguments == {"max_count": 1} for t in tasks)  # it changed what the call said


def test_no_task_states_a_value_that_changes_nothing_the_tool_says():
    """memory-bank-mcp's tools take a `random_string` (some clients need every tool to take a parameter): "Name the
    memory bank files with random string dummy." Values that answered alike wherever compared (one state, the same
    other arguments) change nothing, and no task states them; a filter whose values list other things in one state
    is stated, and so is a value the text says back."""
    from mcprl.scenarios.candidates import candidates
    from mcprl.scenarios.explored import Exploration, ExploredCall

    files = "Files in Memory Bank:\nactive-context.md\ndecision-log.md\nprogress.md"
    tasks = {"pending": '[{"title": "Renew passport"}]', "done": '[{"title": "Book a room"}, {"title": "Pay rent"}]'}
    calls = [
        ExploredCall(index=i, session=i // 3, tool="list_files", arguments={"random_string": v}, text=files)
        for i, v in enumerate(["dummy", "Progress", "tools", "Decision Log", "x"])
    ]
    calls += [
        ExploredCall(index=5 + i, session=5, tool="list_tasks", arguments={"status": s}, text=tasks[s])
        for i, s in enumerate(["pending", "done", "pending"])
    ]
    # (a search that matched its one record by each of its words)
    flight = '[{"flight": "Porto to Lisbon", "seat": "12A", "gate": "B7"}]'
    calls += [
        ExploredCall(index=8 + i, session=6, tool="search", arguments={"query": q}, text=flight)
        for i, q in enumerate(["Porto", "Lisbon", "12A"])
    ]
    found = [t for seed in range(4) for t in candidates(Exploration(calls=calls), {}, seed=seed)]
    listed = [t for t in found if t.reference[-1].tool == "list_files"]
    assert listed and not any(v in t.task for t in listed for v in ["dummy", "Progress", "tools", "Decision Log"])
    assert len({t.task for t in listed}) < len(listed) or len(listed) == 1  # (one question, whatever was sent)
    by_status = [t for t in found if t.reference[-1].tool == "list_tasks"]
    assert by_status and all(t.reference[-1].arguments["status"] in t.task for t in by_status)
    searched = [t for t in found if t.reference[-1].tool == "search"]
    assert searched and all(t.reference[-1].arguments["query"] in t.task for t in searched)


def test_a_parameter_its_schema_describes_as_a_stand_in_is_stated_by_no_task():
    """memory-bank-mcp's `random_string` ("Dummy parameter for no-parameter tools"): `list_memory_bank_files` was sent
    one value at a time, each between writes, so no two were compared, and every task stated one ("Name the memory
    bank files with random string Progress."). A parameter its schema describes as changing nothing is stated by no
    task; one described otherwise is."""
    from mcprl.scenarios.candidates import candidates
    from mcprl.scenarios.explored import Exploration, ExploredCall
    from mcprl.scenarios.selection import stand_in_parameters

    dummy = {"type": "string", "description": "Dummy parameter for no-parameter tools"}
    tools = [
        {"name": "list_files", "inputSchema": {"properties": {"random_string": dummy}, "required": ["random_string"]}},
        {"name": "read_file", "inputSchema": {"properties": {"name": {"type": "string", "description": "the file"}}}},
    ]
    stand_ins = stand_in_parameters(tools)
    assert stand_ins == {"list_files": {"random_string"}, "read_file": set()}
    files = ["Files in Memory Bank:\nprogress.md", "Files in Memory Bank:\nREADME.md\nprogress.md"]
    calls = []
    for session, v in enumerate(["Decision Log", "System Patterns", "Progress"]):
        listed = {"session": session, "tool": "list_files", "arguments": {"random_string": v}}
        calls += [
            ExploredCall(index=3 * session, text=files[0], **listed),
            ExploredCall(
                index=3 * session + 1, session=session, tool="write_file", arguments={"filename": "README.md"},
                writes=True, text="written",
            ),
            ExploredCall(index=3 * session + 2, text=files[1], **listed),
        ]  # fmt: skip
    sent = ["Decision Log", "System Patterns", "Progress"]
    found = [t for seed in range(4) for t in candidates(Exploration(calls=calls), {}, seed=seed)]
    assert any(v in t.task for t in found for v in sent)  # (without the schema's word, as before)
    found = [t for seed in range(4) for t in candidates(Exploration(calls=calls), {}, seed=seed, stand_ins=stand_ins)]
    listed = [t for t in found if t.reference[-1].tool == "list_files"]
    assert listed and not any(v in t.task for t in listed for v in sent), [t.task for t in listed]


def test_no_task_states_a_value_the_server_said_back_in_place_of_its_default_and_did_not_use():
    """mcp-simple-timeserver's `get_utc` sent `server` "using" or "holiday" (words of other results) said what it
    said sent none, the default's name ("pool.ntp.org") put as the value sent, at another second of the clock:
    "What is the day of the utc time from an ntp server using?" was kept. Each is asked of the plain call; a value
    that changed what the call said stays."""
    from mcprl.scenarios.candidates import candidates
    from mcprl.scenarios.explored import Exploration, ExploredCall

    def utc(server: str, second: int, day: str = "Wednesday") -> str:
        now = datetime.datetime.now(datetime.UTC).replace(second=second)
        return f"Current UTC Time from {server}: {now:%Y-%m-%d %H:%M:%S}\nDay: {day}\n(Note: using local server time)"

    sent = [
        ({}, utc("pool.ntp.org", 1)),
        ({"server": "using"}, utc("using", 5)),
        ({"server": "holiday"}, utc("holiday", 9)),
    ]
    sent.append(({"server": "time.nist.gov"}, utc("time.nist.gov", 12, "Thursday")))  # (another answer: it is used)
    calls = [
        ExploredCall(index=i, session=0, tool="get_utc", arguments=arguments, text=text)
        for i, (arguments, text) in enumerate(sent)
    ]
    defaults = {"get_utc": {"server": "pool.ntp.org"}}
    tasks = [t for seed in range(4) for t in candidates(Exploration(calls=calls), {}, seed=seed, defaults=defaults)]
    stated = [f"{t.task} {[c.arguments for c in t.reference]}" for t in tasks]
    assert not any(w in said for said in stated for w in ("using", "holiday")), stated
    assert any(t.reference[-1].arguments == {} for t in tasks)
    assert any(t.reference[-1].arguments == {"server": "time.nist.gov"} for t in tasks)


def test_a_text_a_tool_gave_whatever_it_was_asked_answers_no_task():
    """A lookup that said "Task not found" for three ids answers that to anything: no task asks for it, for any of
    them; a record it found is still asked about, and a value three calls share that is a number (a sum) stays."""
    from mcprl.scenarios.candidates import candidates
    from mcprl.scenarios.explored import Exploration, ExploredCall

    calls = [
        ExploredCall(index=i, session=0, tool="task_get", arguments={"id": n}, text="Task not found")
        for i, n in enumerate((8, 18, 2))
    ]
    calls.append(
        ExploredCall(index=3, session=0, tool="task_get", arguments={"id": 1}, text='{"name": "Renew passport"}')
    )
    calls += [
        ExploredCall(index=4 + i, session=0, tool="add", arguments={"a": a, "b": b}, text="7")
        for i, (a, b) in enumerate(((3, 4), (2, 5), (1, 6)))
    ]
    tasks = [t for seed in range(4) for t in candidates(Exploration(calls=calls), {}, seed=seed)]
    assert {t.answer for t in tasks} == {"Renew passport", 7}, {(t.task, t.answer) for t in tasks}


def test_an_answer_picked_from_a_list_the_task_gives_is_asked_and_one_an_argument_states_is_not():
    """The largest of 3, 8 and 5 is 8, in a text or a JSON record: a choice the task asks for, so kept; a value a
    list holds once (no choice), one another argument states (`start` 7), or one a list of requests states (the
    line ranges of a file to read, `{"start": 37}`: each a request, not a value to choose among), still gives the
    answer away."""
    from mcprl.scenarios.candidates import candidates
    from mcprl.scenarios.explored import Exploration, ExploredCall

    calls = [
        ExploredCall(index=0, session=0, tool="max", arguments={"numbers": [3, 8, 5]}, text="8"),
        ExploredCall(
            index=1, session=0, tool="largest", arguments={"numbers": [4, 9]}, text='{"result": "9.0", "count": 2}'
        ),
        ExploredCall(index=2, session=0, tool="max", arguments={"numbers": [6, 6]}, text="6"),
        ExploredCall(index=3, session=0, tool="top", arguments={"numbers": [1, 7], "start": 7}, text="7"),
        ExploredCall(
            index=4,
            session=0,
            tool="read_lines",
            arguments={"ranges": [{"start": 37}, {"start": 2, "end": 4}]},
            text='{"start_line": 37, "end_line": 37, "lines_read": 0}',
        ),
    ]
    tasks = [t for seed in range(4) for t in candidates(Exploration(calls=calls), {}, seed=seed)]
    answers = {t.answer: t.task for t in tasks}
    assert {8, 9} <= set(answers) and not {6, 7, 37} & set(answers), answers
    assert re.search(r"\b3\b.*\b8\b.*\b5\b", answers[8]) and re.search(r"\b4\b.*\b9\b", answers[9])  # stated


def test_a_task_states_no_value_that_changed_none_of_its_answers_and_every_value_that_did():
    """mcp-text-editor's read takes a file and a range: "How many total lines in ... todo.txt with start 11?" stated
    a start that changes no file's length. A value compared, the call's others held, across two values or more with
    one answer is left out of the tasks asking that of the call ("How many lines are in todo.txt?"); where a start
    changed the lines read, or was never compared (b.txt), the task still states it."""
    from mcprl.scenarios.candidates import candidates
    from mcprl.scenarios.explored import Exploration, ExploredCall

    files = {"a.txt": ["one", "two", "three", "four"], "b.txt": ["alpha", "beta", "gamma"]}
    starts = [("a.txt", 1), ("a.txt", 2), ("a.txt", 3), ("b.txt", 2)]
    calls = [
        ExploredCall(
            index=i,
            session=0,
            tool="read_lines",
            arguments={"path": f"/srv/{name}", "range": {"start": start}},
            text=json.dumps({"lines": " / ".join(files[name][start - 1 :]), "total_lines": len(files[name])}),
        )
        for i, (name, start) in enumerate(starts)
    ]
    tasks = [t for seed in range(6) for t in candidates(Exploration(calls=calls), {}, seed=seed)]
    by = {
        (t.metadata.get("field"), t.reference[-1].arguments["path"], t.reference[-1].arguments["range"]["start"]): t
        for t in tasks
    }
    asked = [(k, t.task) for k, t in by.items()]
    totals = [t for (field, path, _), t in by.items() if field == "total_lines" and path == "/srv/a.txt"]
    assert totals and all("start" not in t.task and "a.txt" in t.task for t in totals), asked
    assert all(str(t.answer) == "4" for t in totals)
    others = [t for (field, path, _), t in by.items() if field == "lines" or path == "/srv/b.txt"]
    assert others and all(re.search(r"\bstart \d", t.task) for t in others), asked


def test_a_list_the_call_was_sent_said_back_whole_is_no_answer():
    """A query built of the patterns it was sent ("*" and "*.txt" -> "*\n*.txt"), in a record or alone: the task
    that states the patterns gives its answer away, though each pattern alone would be a choice among them."""
    from mcprl.scenarios.candidates import candidates
    from mcprl.scenarios.explored import Exploration, ExploredCall

    calls = [
        ExploredCall(
            index=0,
            session=0,
            tool="build_query",
            arguments={"language": "python", "patterns": ["*", "*.txt"]},
            text=json.dumps({"language": "python", "query": "*\n*.txt"}),
        ),
        ExploredCall(index=1, session=0, tool="join", arguments={"parts": ["tea", "cake"]}, text="tea, cake"),
        ExploredCall(index=2, session=0, tool="max", arguments={"numbers": [3, 8, 5]}, text="8"),
    ]
    tasks = [t for seed in range(4) for t in candidates(Exploration(calls=calls), {}, seed=seed)]
    assert {t.answer for t in tasks} == {8}, [(t.task, t.answer) for t in tasks]


def test_a_dated_listing_asks_for_its_latest_and_earliest_lines_by_their_dates():
    """A listing whose lines are dated, newest first or oldest first, asks for its first and last lines by place
    ("the latest commit"), and the answer is the field of the line with that date; a listing in no date order says
    only "the first one listed"; a line is picked out by words before a hash."""
    from mcprl.scenarios.candidates import candidates
    from mcprl.scenarios.explored import Exploration, ExploredCall

    people = ["Ann Lee", "Bob Stone", "Carla Diaz", "Dan Roe"]
    lines = [
        (("abc", "bcd", "cde", "def")[i] * 13 + str(i), people[i], f"2024-03-0{i + 1} 10:00:00+00:00", f"Change {i}")
        for i in range(4)
    ]

    def log(order: list[int]) -> str:
        return "\n\n".join(
            f"Commit: {lines[i][0]}\nAuthor: {lines[i][1]}\nDate: {lines[i][2]}\nMessage: {lines[i][3]}" for i in order
        )

    for order, latest, earliest in (([3, 2, 1, 0], 3, 0), ([0, 1, 2, 3], 3, 0), ([2, 0, 3, 1], None, None)):
        call = ExploredCall(index=0, session=0, tool="git_log", arguments={}, text=log(order))
        tasks = [t for seed in range(12) for t in candidates(Exploration(calls=[call]), {}, seed=seed)]
        placed = [t for t in tasks if re.search(r"\b(latest|earliest|first \w+ listed)\b", t.task)]
        places = {p for t in placed for p in ("latest", "earliest") if p in t.task}
        assert places == ({"latest", "earliest"} if latest is not None else set()), [t.task for t in placed]
        for t in placed:
            at = latest if "latest" in t.task else earliest if "earliest" in t.task else order[0]
            assert any(str(t.answer) in v for v in lines[at]), (t.task, t.answer)
            assert "Who" in t.task or "who" in t.task or "Author" not in t.task  # the author is asked who, not what
        # a hash picks a line out only where no value in words does
        assert not any(lines[i][0] in t.task for t in tasks for i in range(4)), [t.task for t in tasks]


def test_a_dated_listing_always_asks_of_its_latest_line_and_each_place_is_a_question_of_its_own():
    """Every seed's candidates of a listing in time order ask of its latest line by its place (what people ask of a
    log most); the same field of its latest and its earliest line, one person, are two questions, both kept."""
    from mcprl.scenarios.candidates import candidates
    from mcprl.scenarios.explored import Exploration, ExploredCall
    from mcprl.scenarios.selection import select

    people = ["Ann Lee", "Bob Stone", "Carla Diaz", "Ann Lee"]
    text = "\n\n".join(
        f"Commit: {'abcdef'[i] * 40}\nAuthor: {people[i]}\nDate: 2024-03-0{i + 1} 10:00:00+00:00\nMessage: Change {i}"
        for i in (3, 2, 1, 0)
    )
    call = ExploredCall(index=0, session=0, tool="git_log", arguments={}, text=text)
    every = []
    for seed in range(12):
        tasks = candidates(Exploration(calls=[call]), {}, seed=seed)
        assert any("latest" in t.task for t in tasks), [t.task for t in tasks]
        every += tasks
    authors = [t for t in every if "latest" in t.task and t.answer == "Ann Lee"]
    authors += [t for t in every if "earliest" in t.task and t.answer == "Ann Lee"][:1]
    assert {p for t in authors for p in ("latest", "earliest") if p in t.task} == {"latest", "earliest"}
    kept, _ = select(authors, 10, seed=0)
    assert {p for t in kept for p in ("latest", "earliest") if p in t.task} == {"latest", "earliest"}


def test_a_line_asked_for_by_a_place_that_names_no_kind_is_asked_in_what_the_call_gives():
    """mcp-knowledge-graph's `read_graph`, its entities' times of making in no order: "What is the name of the first
    one listed?" said neither the graph nor what is listed. A place that says what the line is ("the latest commit")
    is asked alone; one that does not is asked in what the call gives."""
    from mcprl.scenarios.candidates import candidates
    from mcprl.scenarios.explored import Exploration, ExploredCall

    made = [
        ("Weekly report", "2026-03-06T04:26:49Z"),
        ("Team meeting", "2026-03-06T04:26:52Z"),
        ("Garden", "2026-03-06T04:26:50Z"),
    ]
    graph = {"entities": [{"name": n, "entityType": "project", "createdAt": d, "version": 1} for n, d in made]}
    call = ExploredCall(index=0, session=0, tool="read_graph", arguments={}, text=json.dumps(graph))
    asked = {t.task for seed in range(10) for t in candidates(Exploration(calls=[call]), {}, seed=seed)}
    placed = [t for t in asked if "first entity listed" in t]  # (what is listed, said)
    assert placed and all("graph" in t for t in placed), asked


def test_a_text_of_lines_is_asked_for_by_its_labelled_values_not_its_one_number():
    from mcprl.scenarios.candidates import candidates
    from mcprl.scenarios.explored import Exploration, ExploredCall

    text = "Meeting at 10am with Dana.\nBudget: 4500 USD\n"
    call = ExploredCall(index=0, session=0, tool="read_text_file", arguments={"path": "notes.txt"}, text=text)
    tasks = [t for seed in range(4) for t in candidates(Exploration(calls=[call]), {}, seed=seed)]
    assert tasks and all("budget" in t.task for t in tasks if t.answer == 4500), [t.task for t in tasks]


def test_a_csv_table_is_asked_for_by_its_cells_not_as_lines():
    """A file that is a CSV table grounds tasks about one row's cell, picked out by another cell of that row, and
    no task asks for its lines as a listing."""
    from mcprl.scenarios.candidates import candidates
    from mcprl.scenarios.explored import Exploration, ExploredCall

    rows = [("apple", "3"), ("pear", "7"), ("plum", "12")]
    text = "name,qty\n" + "\n".join(",".join(r) for r in rows) + "\n"
    call = ExploredCall(index=0, session=0, tool="read_text_file", arguments={"path": "./data.csv"}, text=text)
    tasks = [t for seed in range(6) for t in candidates(Exploration(calls=[call]), {}, seed=seed)]
    assert tasks and not any(isinstance(t.answer, list) or "," in str(t.answer) for t in tasks)
    for t in tasks:  # the answer is a cell of the one row whose other cell the task names
        row = next(r for r in rows if any(re.search(rf"\b{c}\b", t.task) for c in r))
        assert str(t.answer) in row and not re.search(rf"\b{t.answer}\b", t.task), t.task
    # ... nor under the file's name as a heading (server-filesystem's `read_multiple_files`)
    many = call.model_copy(update={"tool": "read_multiple_files", "arguments": {"paths": ["data.csv"]}})
    headed = many.model_copy(update={"text": "data.csv:\n" + text})
    assert not any(
        isinstance(t.answer, list) for seed in range(6) for t in candidates(Exploration(calls=[headed]), {}, seed=seed)
    )


def test_a_csv_table_under_a_line_naming_it_is_asked_for_by_its_cells():
    """mcp-python-interpreter's `read_file` heads a file's text with its path ("File: /srv/work/data.csv", a blank
    line, then the CSV): no task used it, the text read as one record of a path and three unlabelled lines. Under a
    line naming it (that label, or a "data.csv:" heading), a CSV table grounds the tasks the table alone does."""
    from mcprl.scenarios.candidates import candidates
    from mcprl.scenarios.explored import Exploration, ExploredCall

    table = "name,qty\napple,3\npear,7\n"

    def asked(text: str) -> set[tuple[str, object]]:
        call = ExploredCall(
            index=0, session=0, tool="read_file", arguments={"file_path": "/srv/work/data.csv"}, text=text
        )
        found = [t for seed in range(6) for t in candidates(Exploration(calls=[call]), {}, seed=seed)]
        return {(t.metadata.get("field"), t.answer) for t in found}

    alone = asked(table)
    assert {a for _, a in alone} >= {3, 7, "apple", "pear"}, alone
    assert asked("File: /srv/work/data.csv\n\n" + table) == alone
    assert asked("data.csv:\n" + table) == alone
    # (a line above that is no heading, a sentence, leaves the text no table)
    assert not {a for _, a in asked("Read it twice and then stop now\n" + table)} & {3, 7}


def test_one_line_of_a_csv_file_is_not_asked_as_its_one_number():
    """mcp-text-editor read lines 3 to 20 of a CSV file, `{"content": "pear,7\n", ...}`: "Find the text file contents
    for data.csv with start 3 and end 20." -> 7, as a number with a unit ("37 units") is. A row of cells that commas
    join is no number; read whole, or as a sentence's result, it is no number either."""
    from mcprl.scenarios.candidates import candidates
    from mcprl.scenarios.explored import Exploration, ExploredCall

    ranges = {"data.csv": {"ranges": [{"content": "pear,7\n", "start": 3, "end": 20, "content_size": 12}]}}
    calls = [
        ExploredCall(
            index=0, session=0, tool="get_text", arguments={"path": "data.csv", "start": 3}, text=json.dumps(ranges)
        ),
        ExploredCall(index=1, session=0, tool="read_line", arguments={"path": "data.csv", "line": 3}, text="pear,7\n"),
    ]
    tasks = [t for seed in range(4) for t in candidates(Exploration(calls=calls), {}, seed=seed)]
    assert not any(t.answer == 7 for t in tasks), [(t.task, t.answer) for t in tasks]
    assert any(t.answer == 12 for t in tasks)  # (a number alone still is one: the size it says)


def test_a_field_that_tags_each_record_with_the_kind_the_call_names_is_not_asked():
    """@itseasy21/mcp-knowledge-graph tags each record with its kind, `"type": "entity"` of `update_entities` and
    of `read_graph`'s `{"entities": [...], "relations": [...]}` ("Update entities "Weekly report" and tell me the
    type." -> entity). A field whose every value is a kind the tool's name or its result's keys name is not asked;
    the record's own fields still are."""
    from mcprl.scenarios.candidates import candidates
    from mcprl.scenarios.explored import Exploration, ExploredCall

    def entity(name: str, kind: str) -> dict:
        return {"type": "entity", "name": name, "entityType": kind, "observations": [f"Call {name} on Monday."]}

    graph = {
        "entities": [entity("Ada", "person"), entity("Lisbon", "city"), entity("Apollo", "project")],
        "relations": [{"type": "relation", "from": "Ada", "to": "Lisbon", "relationType": "lives_in"}],
    }
    calls = [
        ExploredCall(index=0, session=0, tool="read_graph", arguments={}, text=json.dumps(graph)),
        *(
            ExploredCall(
                index=i,
                session=0,
                tool="update_entities",
                arguments={"entities": [{"name": name}]},
                text=json.dumps([entity(name, kind)]),
            )
            for i, (name, kind) in enumerate([("Ada", "person"), ("Apollo", "project")], start=1)
        ),
    ]
    tasks = [t for seed in range(4) for t in candidates(Exploration(calls=calls), {}, seed=seed)]
    assert not any(str(t.answer) in ("entity", "relation") for t in tasks), [(t.task, t.answer) for t in tasks]
    assert any(t.answer == "person" for t in tasks) and any(t.answer == "lives_in" for t in tasks)


def test_a_map_keyed_by_numbers_grounds_its_tasks_without_failing():
    """mcp-sympy's `factorint` prints a Python dict keyed by numbers (`{2: 3, 5: 1}`): reading what its keys name
    failed on a key that is no text, and ended the whole grounding. No task asks for a prime's power by its number."""
    from mcprl.scenarios.candidates import candidates
    from mcprl.scenarios.explored import Exploration

    call = ExploredCall(index=0, session=0, tool="factorint", arguments={"n": 40}, text="{2: 3, 5: 1}")
    assert candidates(Exploration(calls=[call]), {}, seed=0) == []


def test_a_key_that_is_a_cell_address_or_a_number_is_not_asked_as_a_field():
    """excel-mcp-server's `find_cells` maps each cell it found to its value, `{"matches": {"E3": "2024-03-05"}}`:
    "Find cells ... with query 4. What is the e 3?". A key that is a number, or a letter or two and a number, names
    no property; a sheet's own fields still are asked."""
    from mcprl.scenarios.candidates import candidates
    from mcprl.scenarios.explored import Exploration, ExploredCall

    found = [{"E3": "2024-03-05"}, {"B2": "Engineering", "C4": "Sales"}, {"12": "Ada"}]
    calls = [
        ExploredCall(index=i, session=0, tool="find_cells", arguments={"query": q}, text=json.dumps({"matches": m}))
        for i, (q, m) in enumerate(zip(["2024", "Eng", "Ada"], found))
    ]
    sheet = {"name": "Staff", "used_range": "A1:C4", "rows": 4}
    calls.append(
        ExploredCall(index=3, session=0, tool="describe_sheet", arguments={"sheet": "Staff"}, text=json.dumps(sheet))
    )
    tasks = [t for seed in range(4) for t in candidates(Exploration(calls=calls), {}, seed=seed)]
    # (the cells found are what it lists, asked for whole: no one of them is a field)
    fields = [t for t in tasks if t.tools == ["find_cells"] and t.metadata["kind"] != "listing"]
    assert not fields, [(t.task, t.answer) for t in fields]
    assert any(t.answer == "A1:C4" for t in tasks)


def test_no_answer_is_longer_than_a_line():
    from mcprl.scenarios.candidates import candidates
    from mcprl.scenarios.explored import Exploration, ExploredCall

    env = {"HOME": "/root", "SHELL": "/bin/bash", "PATH": ":".join(f"/opt/tool{i}/bin" for i in range(12))}
    call = ExploredCall(index=0, session=0, tool="get_env", arguments={}, text=json.dumps(env))
    tasks = [t for seed in range(6) for t in candidates(Exploration(calls=[call]), {}, seed=seed)]
    assert tasks and all(len(str(t.answer)) <= 80 for t in tasks), [t.answer for t in tasks]


def test_a_digest_a_call_computed_is_an_answer_of_any_length_and_one_sent_on_is_the_previous_result():
    """mcp-hashlib (PyPI): six of its 17 reads grounded a task. A SHA-512 a call computed (128 digits) was longer
    than a line, no answer; and where exploring sent one digest on to another tool (`hash_sha256` of `hash_md5`'s
    result), the task said it as "the previous result" yet counted it as a value it states, which no task may be
    (a digest is read, not said). Each is a task now: the answer the digest the call computed, no task stating one."""
    import hashlib

    from mcprl.scenarios.candidates import candidates
    from mcprl.scenarios.explored import Exploration, ExploredCall

    md5 = hashlib.md5(b"test").hexdigest()
    sha512 = hashlib.sha512(b"test").hexdigest()
    chained = hashlib.sha256(md5.encode()).hexdigest()
    calls = [
        ExploredCall(index=0, session=0, tool="hash_md5", arguments={"data": "test"}, text=md5),
        ExploredCall(index=1, session=0, tool="hash_sha512", arguments={"data": "test"}, text=sha512),
        ExploredCall(
            index=2, session=0, tool="hash_sha256", arguments={"data": md5}, text=chained,
            sources={"data": "result:0"}, parents=[0],
        ),
    ]  # fmt: skip
    tasks = [t for seed in range(6) for t in candidates(Exploration(calls=calls), {}, seed=seed)]
    assert {t.answer for t in tasks} == {md5, sha512, chained}, [(t.task, t.answer) for t in tasks]
    for t in tasks:
        assert not any(d in t.task for d in (md5, sha512, chained)) and "test" in t.task, t.task
        assert not {md5, sha512, chained} & set(t.metadata["given"]), t.metadata["given"]
    assert all("previous result" in t.task for t in tasks if t.answer == chained)


def test_a_task_that_states_a_value_needs_no_call_that_found_it():
    """Exploring found SKU-3000 by listing first; asked for by its sku, the item needs `get_item`
    alone, asked for by its name, the listing too (what the rollout must find)."""
    from mcprl.scenarios.candidates import candidates
    from mcprl.scenarios.explored import Exploration, ExploredCall

    listing = ExploredCall(
        index=0,
        session=0,
        tool="list_items",
        arguments={},
        text="SKU-3000 | mini hook | 167.07\nSKU-4000 | steel level | 53.63",
    )
    item = ExploredCall(
        index=1,
        session=0,
        tool="get_item",
        arguments={"sku": "SKU-3000"},
        sources={"sku": "result:0"},
        parents=[0],
        text='{"sku": "SKU-3000", "name": "mini hook", "price": 167.07, "stock": 40}',
    )
    found = {}
    for seed in range(8):  # both wordings: by the sku the call took, by the record's name
        for t in candidates(Exploration(calls=[listing, item]), {}, seed=seed):
            if t.reference[-1].tool == "get_item":
                found["SKU-3000" in t.task] = [c.tool for c in t.reference]
    assert found == {True: ["get_item"], False: ["list_items", "get_item"]}
    # a write the chain made stays: it made the state the read reads
    from mcprl.scenarios.replay import needed

    write = ExploredCall(
        index=2,
        session=0,
        tool="update_stock",
        arguments={"sku": "SKU-3000", "change": 7},
        writes=True,
        sources={"sku": "result:0"},
        parents=[0],
        text="SKU-3000 (mini hook): stock 40 -> 47",
    )
    read = item.model_copy(update={"index": 3})
    assert [c.tool for c in needed("What is the stock of the item with sku SKU-3000?", [listing, write, read])] == [
        "update_stock",
        "get_item",
    ]


def test_no_task_is_answered_by_our_rendering_or_by_its_own_wording():
    """Seen on @modelcontextprotocol/server-everything: an image's placeholder (`[image/png, 4 KB]`,
    written by our client) gave the answer 4, and a one-sentence result named its own record
    ('What is the sum of the sum "The sum of 10 and 20 is 30."?')."""
    from mcprl.checks import holds_answer
    from mcprl.scenarios.candidates import candidates
    from mcprl.scenarios.explored import Exploration, ExploredCall

    image = ExploredCall(
        index=0,
        session=0,
        tool="get-tiny-image",
        arguments={},
        text="Here's the image you requested:\n[image/png, 4 KB]\nThe image above is the MCP logo.",
        data_text="Here's the image you requested:\nThe image above is the MCP logo.",  # its text blocks
    )
    total = ExploredCall(
        index=1, session=0, tool="get-sum", arguments={"a": 10, "b": 20}, text="The sum of 10 and 20 is 30."
    )
    tasks = [
        t
        for seed in range(8)
        for t in candidates(
            Exploration(calls=[image, total]), {"get-sum": "Returns the sum of two numbers."}, seed=seed
        )
    ]
    assert not [t for t in tasks if t.reference[-1].tool == "get-tiny-image"]
    assert tasks and all(t.answer == 30 and not holds_answer(t.task, 30) for t in tasks), [t.task for t in tasks]


def test_a_listing_cut_by_max_result_chars_grounds_each_field_in_its_own_record():
    """A long listing is cut mid-record, and the client says so on a last line: neither the cut
    record nor that line is a record, the rest is still a listing (not one record whose keys repeat,
    which asked for one item's stock with another's), and a reference keeps the result whole."""
    from mcprl.scenarios.candidates import candidates
    from mcprl.scenarios.explored import Exploration, ExploredCall
    from mcprl.tools.convert import _BoundedText

    rows = [
        f"SKU-{1000 + i} | item {chr(97 + i)}{chr(97 + i)}x | tools | stock: {10 + i} | price: ${i}.50"
        for i in range(12)
    ]
    bounded = _BoundedText(300)
    bounded.add("\n".join(rows))
    listing = ExploredCall(index=0, session=0, tool="list_items", arguments={}, text=bounded.text())
    assert listing.text.endswith("more characters]")
    fields = [
        t
        for seed in range(6)
        for t in candidates(Exploration(calls=[listing]), {}, seed=seed)
        if t.metadata["kind"] == "field"
    ]
    assert fields
    for t in fields:
        name = t.metadata["given"][0]
        row = next(r for r in rows if f"| {name} |" in r)
        assert row in listing.text and str(t.answer) in row, (t.task, t.answer)
        assert t.reference[0].result == listing.text


def test_a_json_listing_cut_by_max_result_chars_is_its_whole_records_and_its_last_shown_is_not_the_earliest():
    """A JSON listing of commits, newest first, cut mid-record by the client: its records are the ones shown whole
    (not its lines, `"sha": "c1f0...",`), and its values, not its lines, feed calls. Each task's answer is a field of
    every record that has what the task names, in the whole listing (an author the lines shown have once may have
    more lines unshown: a record is picked out by an id then), and none asks for the earliest commit: the last one
    shown is not the last one there is."""
    import json

    from mcprl.scenarios.candidates import candidates
    from mcprl.scenarios.explored import Exploration, ExploredCall
    from mcprl.scenarios.results import result_values
    from mcprl.tools.convert import _BoundedText

    subjects = "Bump version,Fix rounding,Add forecast,Add alerts,Fix typo,Add tests,Drop Python 3.9,Add CLI".split(",")
    commits = [
        {"sha": f"c{i:02d}f0a9b{i}e", "author": name, "date": f"2024-03-{28 - 2 * i:02d}", "subject": subject}
        for i, (name, subject) in enumerate(zip(["Ann Lee", "Bob Stone", "Carla Diaz", "Dan Wu"] * 2, subjects))
    ]
    bounded = _BoundedText(700)
    bounded.add(json.dumps(commits, indent=2))
    log = ExploredCall(index=0, session=0, tool="git_log", arguments={}, text=bounded.text())
    assert log.text.endswith("more characters]")
    values = [v for _, v in result_values(log.data, None)]
    assert values and all(any(v == x for c in commits for x in c.values()) for v in values), values
    tasks = [t for seed in range(8) for t in candidates(Exploration(calls=[log]), {}, seed=seed)]
    assert tasks
    for t in tasks:
        assert "earliest" not in t.task and "oldest" not in t.task, t.task
        # a record picked out by its place in the listing: the latest commit, the first line
        listed = commits[:1] if t.metadata.get("place") else commits
        named = [c for c in listed if all(g in map(str, c.values()) for g in t.metadata.get("given", []))]
        assert named and all(t.answer in c.values() for c in named), (t.task, t.answer)


def test_prose_states_labelled_values_and_a_listing_may_end_with_a_note():
    """A message's body says what a person asks about ("Confirmation code: ZOE67V.", "Your
    reservation number is 4F2A9C01."); a search's listing ends with a note that is not a record;
    a one-sentence result is a message, not an answer; a subject that holds a number is a name."""
    from mcprl.scenarios.candidates import candidates
    from mcprl.scenarios.explored import Exploration, ExploredCall
    from mcprl.scenarios.results import result_records, sentence_fields

    assert sentence_fields(
        "Confirmation code: ZOE67V. Flight SW 764 to Porto is booked. Check in 24 hours before."
    ) == [("Confirmation code", "ZOE67V")]
    assert sentence_fields("Dear Alex, thank you. Your reservation number is 4F2A9C01. We look forward to it.") == [
        ("reservation number", "4F2A9C01")
    ]
    assert sentence_fields("The Wi-Fi password at Lake Cabin is k3j2h1x9. Enjoy!") == [("Wi-Fi password", "k3j2h1x9")]
    assert sentence_fields("Good news: your order is on its way. Please keep noise down after 10 PM.") == []
    # a clause labels its value by the noun it ends with; an expression is no value of the number it starts with
    assert sentence_fields("Task created successfully with ID: 2") == [("ID", "2")]
    assert sentence_fields("tags: 2 + 3") == []
    listing = (
        "msg-0296 | 2024-12-18 | SkyWay <b@sky.example> | Your flight to Porto is confirmed | Confirmation code: "
        "ZOE67V. Flight ...\n"
        "msg-0266 | 2024-11-14 | City Guides <h@cg.example> | 48 hours in Porto | Where to eat in Porto.\n"
        "(2 of 11 matching emails shown)"
    )
    assert len(result_records(listing, None)) == 2
    calls = [
        ExploredCall(index=0, session=0, tool="search_emails", arguments={"query": "Porto"}, text=listing),
        ExploredCall(index=1, session=0, tool="search_emails", arguments={"query": "Oslo"}, text="No emails match."),
    ]
    tasks = {t.task: t.answer for seed in range(6) for t in candidates(Exploration(calls=calls), {}, seed=seed)}
    assert tasks == {
        "Find the email about Porto and tell me its confirmation code.": "ZOE67V",  # what the search was about
        'What is the confirmation code of the email "Your flight to Porto is confirmed"?': "ZOE67V",
    }


def test_a_description_that_states_an_expression_words_the_task_as_that_expression():
    from mcprl.scenarios.expressions import formula

    assert formula("Multiply two numbers and return a * b.", "multiply", {"a": 18.5, "b": 10}) == "18.5 * 10"
    # the previous call's expression in brackets where its result is fed on
    assert (
        formula("Subtract b from a and return a - b.", "subtract", {"a": 184, "b": 6}, frozenset({"a"}), "18.5 * 10")
        == "(18.5 * 10) - 6"
    )
    assert (
        formula("Raise base to the power exponent and return base ** exponent.", "power", {"base": 2, "exponent": -1.5})
        == "2 ** -1.5"
    )
    # none where the description states no expression, or one without every argument
    assert formula("Convert an amount from one unit to another.", "convert", {"value": 3, "to_unit": "km"}) is None
    assert formula("Divide a by b and return a / b.", "divide", {"a": 2, "c": 1}) is None


def test_a_task_is_worded_as_an_expression_only_where_the_answer_is_its_value():
    """Seen on mcp-sympy: "What is 2 + 3?" was asked of `sympy_Not` (False) and `sympy_degree` (0), tools that do
    something else with an expression. "What is 2 + 3?" is asked only where the answer is 5 (a calculator's rounding
    to its decimals kept: 3.33 of 10 / 3); the other tools' tasks say what they do."""
    from mcprl.scenarios.candidates import candidates
    from mcprl.scenarios.explored import Exploration, ExploredCall

    said = [("calculate", "2 + 3", "5"), ("divide_text", "10 / 3", "3.33"), ("degree", "2 + 3", "0")]
    said += [("negate", "7 - 2", "-5"), ("int_divide", "7 / 2", "3")]
    calls = [
        ExploredCall(index=i, session=0, tool=tool, arguments={"expr": expr}, text=text)
        for i, (tool, expr, text) in enumerate(said)
    ]
    tasks = [t for seed in range(6) for t in candidates(Exploration(calls=calls), {}, seed=seed)]
    by_tool: dict[str, set[str]] = {}
    for t in tasks:
        by_tool.setdefault(t.reference[0].tool, set()).add(t.task)
    assert set(by_tool) == {tool for tool, _, _ in said}, by_tool
    as_expression = re.compile(r"(What is|Compute|Work out) [\d\s+*/()-]+[?.]|[\d\s+*/()-]+ = \?")
    for tool, worded in by_tool.items():
        assert any(as_expression.fullmatch(w) for w in worded) == (tool in {"calculate", "divide_text"}), (tool, worded)
    # the value of 2 + 3 is one question, whichever of the tools that computed it grounds it
    from mcprl.scenarios.selection import select

    again = [
        ExploredCall(index=9 + i, session=0, tool=t, arguments={"expr": "2 + 3"}, text="5") for i, t in enumerate("fg")
    ]
    kept, _ = select(candidates(Exploration(calls=calls[:1] + again), {}, seed=0), 8, seed=0)
    assert [t.answer for t in kept] == [5], [(t.task, t.reference[0].tool) for t in kept]


def test_a_sum_that_reads_left_to_right_is_asked_in_words_as_well_as_in_symbols():
    """A calculator run trained on "Compute 45 * 6." and "(7 - 2) / 48 = ?" alone, and people ask "What is 347 times
    29?": a sum that said left to right means what it computes is asked in words too (its operators as people say
    them), one whose words would change its meaning ("2 + 3 * 4", "(7 - 2) / 5") only in symbols; every task's words,
    read back as symbols, compute its answer."""
    from mcprl.scenarios.candidates import candidates
    from mcprl.scenarios.explored import Exploration, ExploredCall
    from mcprl.scenarios.expressions import arithmetic
    from mcprl.scenarios.lexicon import OPERATOR_WORDS

    said = {"45 * 6": "270", "9 - 3 - 2": "4", "2 + 3 * 4": "14", "(7 - 2) / 5": "1", "2 ^ 10": "1024"}
    calls = [
        ExploredCall(index=i, session=0, tool="calculate", arguments={"expression": e}, text=text)
        for i, (e, text) in enumerate(said.items())
    ]
    symbols = {w: s for s, w in OPERATOR_WORDS.items()}
    spoken: dict[str, set[bool]] = {}
    for seed in range(12):
        for t in candidates(Exploration(calls=calls), {}, seed=seed):
            worded = any(f" {w} " in t.task for w in symbols)
            spoken.setdefault(t.reference[0].arguments["expression"], set()).add(worded)
            if worded:
                sum_ = re.sub(r"^(What is|How much is|Work out) |[?.]$", "", t.task)
                for word, symbol in symbols.items():
                    sum_ = sum_.replace(f" {word} ", f" {symbol} ")
                assert arithmetic(sum_) == t.answer, (t.task, t.answer)
    assert spoken == {
        "45 * 6": {True, False}, "9 - 3 - 2": {True, False}, "2 ^ 10": {True, False},
        "2 + 3 * 4": {False}, "(7 - 2) / 5": {False},
    }, spoken  # fmt: skip


def test_no_answer_is_words_the_request_holds():
    """Seen on @executeautomation/database-server: a query's empty result printed as its header alone (`MAX(id)`)
    grounded "Which id in the insights table comes last?" -> "MAX(id)". A text the request's arguments hold is said
    back, no answer; a value the query found stays."""
    from mcprl.scenarios.candidates import candidates
    from mcprl.scenarios.explored import Exploration, ExploredCall

    calls = [
        ExploredCall(
            index=0, session=0, tool="read_query", arguments={"query": "SELECT MAX(id) FROM notes"}, text="MAX(id)\n"
        ),
        ExploredCall(
            index=1,
            session=0,
            tool="read_query",
            arguments={"query": "SELECT MAX(name) FROM products"},
            text="Steel bolt",
        ),
    ]
    tasks = [t for seed in range(4) for t in candidates(Exploration(calls=calls), {}, seed=seed)]
    assert {t.answer for t in tasks} == {"Steel bolt"}, {(t.task, t.answer) for t in tasks}


def test_a_result_that_found_nothing_answers_no_task():
    """Seen on @cyanheads/git-mcp-server: a log filtered by words of other results (`since` "version", `until`
    "alerts") matched nothing, `{"commits": [], "totalCount": 0, ...}`, and grounded "What is the total count of the
    git log ... since version until alerts?" -> 0. A JSON result of empty lists, zeros, flags and sentences found
    nothing; a result with a record in it still answers, a count of zero alone too."""
    from mcprl.scenarios.candidates import candidates
    from mcprl.scenarios.explored import Exploration, ExploredCall

    def log(index: int, since: str, commits: list) -> ExploredCall:
        note = "No commits matched the applied filters. Try removing filters." if not commits else "Done."
        result = {"success": True, "commits": commits, "totalCount": len(commits), "note": note}
        return ExploredCall(index=index, session=0, tool="git_log", arguments={"since": since}, text=json.dumps(result))

    calls = [
        log(0, "version", []),
        log(1, "2024-03-01", [{"hash": "fb2fd2a", "author": "Ann Lee", "message": "Document installation"}]),
        ExploredCall(index=2, session=0, tool="count_open", arguments={"label": "bug"}, text='{"count": 0}'),
    ]
    tasks = [t for seed in range(4) for t in candidates(Exploration(calls=calls), {}, seed=seed)]
    assert {t.reference[-1].arguments.get("since") for t in tasks if t.tools == ["git_log"]} == {"2024-03-01"}
    assert any(t.tools == ["count_open"] and t.answer == 0 for t in tasks), {(t.task, t.answer) for t in tasks}


def test_a_value_that_changed_no_answer_makes_no_other_question_and_one_text_given_twice_none():
    """Three times of day give one time difference: one question, not three. Converting a zone to itself
    asks nothing, where the zones are what the call works on. A value that changed the answer still makes
    its own question."""
    from mcprl.scenarios.candidates import candidates
    from mcprl.scenarios.explored import Exploration, ExploredCall
    from mcprl.scenarios.selection import select

    def convert(index: int, source: str, at: str, target: str, difference: float) -> ExploredCall:
        result = {"source": source, "target": target, "time_difference": f"{difference:+.1f}h"}
        arguments = {"source_timezone": source, "time": at, "target_timezone": target}
        return ExploredCall(index=index, session=0, tool="convert_time", arguments=arguments, text=json.dumps(result))

    calls = [
        *(convert(i, "America/New_York", at, "Europe/London", 5) for i, at in enumerate(["09:30", "12:00", "8:54"])),
        convert(3, "Asia/Tokyo", "09:30", "Europe/London", -9),
        convert(4, "Asia/Tokyo", "09:30", "Asia/Tokyo", 0),
        # two names of one zone change no answer; the target zone still does, so each target is its own question
        convert(5, "Asia/Kolkata", "12:00", "UTC", -5.5),
        convert(6, "Asia/Kolkata", "12:00", "Etc/UTC", -5.5),
        convert(7, "Asia/Kolkata", "09:30", "Asia/Tokyo", 3.5),
        convert(8, "Asia/Tokyo", "12:00", "Asia/Kolkata", -3.5),
    ]
    found = [
        t for t in candidates(Exploration(calls=calls), {}, seed=0) if t.metadata.get("field") == "time_difference"
    ]
    assert {t.reference[-1].arguments["time"] for t in found if t.answer == 5} == {"09:30", "12:00", "8:54"}
    kept, dropped = select(found, 10, seed=0)
    asked = sorted((t.reference[-1].arguments["source_timezone"], t.answer) for t in kept)
    assert asked == [
        ("America/New_York", 5),
        ("Asia/Kolkata", -5.5),
        ("Asia/Kolkata", -5.5),
        ("Asia/Kolkata", 3.5),
        ("Asia/Tokyo", -9),
        ("Asia/Tokyo", -3.5),
    ], [t.task for t in kept]
    assert dropped["one text given twice"] == 1
    # as filters, one value given twice narrows (one date as both bounds of a range asks for that day)
    _, dropped = select(found, 10, seed=0, optional={"convert_time": {"source_timezone", "target_timezone"}})
    assert not dropped["one text given twice"]


def test_the_previous_result_is_always_the_result_of_the_call_said_before():
    """A chain is said call after call, a value one call found given to the next as "the previous result": never
    where it came from an earlier call (`divide(a=<first sum>, b=<second sum>)` is not "divide the previous result by
    the previous result"), nor where it was one item of those the previous result listed (mcp-sympy: "Find the
    divisors of 4. Then find the factorial of the previous result." -> 24)."""
    from mcprl.scenarios.candidates import candidates
    from mcprl.scenarios.explored import Exploration, ExploredCall

    def made(index, tool, arguments, text, sources=None):
        parents = sorted({int(s.split(":")[1]) for s in (sources or {}).values()})
        return ExploredCall(
            index=index, session=0, tool=tool, arguments=arguments, text=text, sources=sources or {}, parents=parents
        )

    calls = [
        made(0, "add", {"a": 2, "b": 3}, "5"),
        made(1, "add", {"a": 16, "b": 34}, "50"),
        made(2, "divide", {"a": 5, "b": 50}, "0.1", {"a": "result:0", "b": "result:1"}),
        made(3, "multiply", {"a": 50, "b": 2}, "100", {"a": "result:1"}),
        # ... nor where it is one item of a listing: which of 1, 2 and 4 would "the previous result" be?
        made(4, "divisors", {"n": 4}, "[1, 2, 4]"),
        made(5, "factorial", {"n": 4}, "24", {"n": "result:4"}),
    ]
    tasks = [t for seed in range(8) for t in candidates(Exploration(calls=calls), {}, seed=seed)]
    assert not [t.task for t in tasks if t.answer in (0.1, 24) and "previous result" in t.task]
    assert any("previous result" in t.task for t in tasks if t.answer == 100), [t.task for t in tasks]


async def test_a_listing_too_long_to_name_is_asked_how_many_it_lists(tmp_path):
    """A listing of more values than a task would ask to name (12 legal moves) is asked how many it gives, the
    answer its number of values; not where the client cut it, where a value repeats, or where a short listing's
    names are asked for instead. Replayed, a count is kept where the listing gives as many again, not where it
    grew."""
    from mcprl.scenarios.candidates import candidates
    from mcprl.scenarios.explored import Exploration, ExploredCall
    from mcprl.scenarios.replay import replayed
    from mcprl.tools.convert import TRUNCATED
    from tests.scenarios.listings_server import MOVES as moves

    def listed(tool: str, values: list[str], cut: bool = False) -> ExploredCall:
        text = "\n".join(values) + ("\n[... truncated: 400 more characters]" if cut else "")
        assert bool(TRUNCATED.search(text)) == cut
        return ExploredCall(index=0, session=0, tool=tool, arguments={}, text=text)

    def counts(call: ExploredCall) -> list[Scenario]:
        return [t for t in candidates(Exploration(calls=[call]), {}, seed=0) if t.metadata.get("kind") == "count"]

    (task,), events = counts(listed("get_valid_moves", moves)), counts(listed("get_recent_events", moves[:10]))
    assert task.answer == len(moves) and str(task.answer) not in task.task and "valid moves" in task.task
    assert not counts(listed("get_valid_moves", moves, cut=True))
    assert not counts(listed("get_valid_moves", [*moves[:-1], moves[0]]))
    assert not counts(listed("get_valid_moves", moves[:5]))
    server = Path(__file__).with_name("listings_server.py")
    async with ToolPool(ServerSpec.parse(f"{sys.executable} {server} {tmp_path / 'seen'}")) as pool:
        kept, dropped = await replayed([task, *events], pool, say=lambda _: None)
    assert kept == [task] and dropped == {"answer not reproduced": 1}


def test_no_task_states_a_value_its_schema_gives_as_the_default():
    """@cyanheads/git-mcp-server's `git_log` sent `stat: false` and `maxCount: 10` (values that had worked in other
    calls, not drawn as defaults): the call is the same without them, so no task states them; the value that is not
    a default (`filePath`) is stated."""
    from mcprl.scenarios.candidates import candidates
    from mcprl.scenarios.explored import Exploration

    log = json.dumps({"commits": [{"shortHash": "3558577", "message": "Add config"}], "totalCount": 1})
    arguments = {"filePath": "TODO.md", "stat": False, "maxCount": 10}
    call = ExploredCall(
        index=0, session=0, tool="git_log", arguments=arguments, text=log, sources=dict.fromkeys(arguments, "worked")
    )
    defaults = {"git_log": {"stat": False, "maxCount": 10, "filePath": ""}}
    tasks = [t for seed in range(6) for t in candidates(Exploration(calls=[call]), {}, seed=seed, defaults=defaults)]
    assert tasks and all("TODO.md" in t.task for t in tasks)
    assert not any(re.search(r"\bstat\b|\b10\b|maximum count|False", t.task) for t in tasks), [t.task for t in tasks]
    # the reference call is the one exploring made
    assert all(t.reference[-1].arguments == arguments for t in tasks)


def test_a_field_that_says_back_a_parameters_default_the_call_was_not_sent_is_no_answer():
    """@cyanheads/git-mcp-server's `git_tag`, sent only a path, says `"mode": "list"`: its `mode` parameter's default,
    not a fact about the repository ("Git tag ... and tell me the mode"). What it says beside it is still asked."""
    from mcprl.scenarios.candidates import candidates
    from mcprl.scenarios.explored import Exploration

    said = json.dumps({"success": True, "mode": "list", "tags": ["v1.0", "v1.1"], "latest": "v1.1"})
    call = ExploredCall(index=0, session=0, tool="git_tag", arguments={"path": "/srv/r"}, text=said)

    def answers(defaults: dict) -> set:
        exploration = Exploration(calls=[call])
        return {
            str(t.answer)
            for seed in range(4)
            for t in candidates(exploration, {}, seed=seed, defaults={"git_tag": defaults})
        }

    assert "list" not in answers({"mode": "list"}) and "v1.1" in answers({"mode": "list"})
    assert "list" in answers({"mode": "create"})  # (a mode it was not given by default is what it did)
    # (mcp-mathematics' `get_calculation_history`, sent no `limit`: "What is the limit requested of the calculation
    # history?" -> 10, under a field named as the parameter and more)
    said = json.dumps({"limit_requested": 10, "limit_used": 10, "entries_count": 2, "last": "2 + 3 = 5"})
    history = ExploredCall(index=0, session=0, tool="history", arguments={}, text=said)
    found = {str(t.answer) for seed in range(4) for t in candidates(Exploration(calls=[history]), {}, seed=seed)}
    assert "10" in found  # (without the schema's default, as before)
    defaults = {"history": {"limit": 10}}
    found = [t for seed in range(4) for t in candidates(Exploration(calls=[history]), {}, seed=seed, defaults=defaults)]
    assert found and not any(t.answer == 10 for t in found), [t.task for t in found]


def test_a_count_of_the_list_a_call_was_sent_is_no_answer():
    """mcp-mathematics' `batch_calculate` says how many expressions it was sent: "Calculate batch "2 + 3" and "7 - 2".
    How many total expressions?" -> 2, the task's own count. Its results are still asked; a count of other things
    is too."""
    from mcprl.scenarios.candidates import candidates
    from mcprl.scenarios.explored import Exploration

    def batch(index: int, expressions: list[str], results: list[int]) -> ExploredCall:
        said = {
            "total_expressions": len(expressions),
            "succeeded": len(results),
            "results": [{"expression": e, "result": r} for e, r in zip(expressions, results, strict=True)],
        }
        return ExploredCall(
            index=index, session=0, tool="batch", arguments={"expressions": expressions}, text=json.dumps(said)
        )

    calls = [batch(0, ["2 + 3", "7 - 2"], [5, 5]), batch(1, ["4 * 4", "9 - 1", "6 / 3"], [16, 8, 2])]
    found = [t for seed in range(4) for t in candidates(Exploration(calls=calls), {}, seed=seed)]
    assert found and not any("total expressions" in t.task for t in found), [t.task for t in found]
    assert any(t.answer == 16 for t in found)


def test_a_count_of_things_in_a_state_is_asked_how_many():
    """@cyanheads/git-mcp-server's `git_diff` says `"filesChanged": 1`: "What is the files changed of the git diff?"
    reads as no question; it is asked how many files changed. A state that names a thing stays asked as one."""
    from mcprl.scenarios.candidates import candidates
    from mcprl.scenarios.explored import Exploration

    said = json.dumps({"filesChanged": 2, "insertions": 5, "modified": "TODO.md"})
    call = ExploredCall(index=0, session=0, tool="git_diff", arguments={"path": "/srv/r"}, text=said)
    tasks = {t.answer: t.task for seed in range(6) for t in candidates(Exploration(calls=[call]), {}, seed=seed)}
    assert re.search(r"^How many files changed\b", tasks[2]), tasks
    assert "How many" not in tasks["TODO.md"], tasks
    # (mcp-memory-keeper's: counts in lines of text, of a subject whose plural is not its first word, and of what
    # the call did, a participle alone: not "What is the critical items saved?", "What is the succeeded?")
    saved = "Prepared for compaction:\nCheckpoint: weekly\nCritical items saved: 3\nFiles tracked: 7"
    batch = json.dumps({"operation": "batch_save", "totalItems": 5, "succeeded": 4})
    calls = [
        ExploredCall(index=0, session=0, tool="prepare_compaction", arguments={}, text=saved),
        ExploredCall(index=1, session=0, tool="batch_save", arguments={"items": ["a", "b"]}, text=batch, writes=True),
    ]
    tasks = {t.answer: t.task for seed in range(8) for t in candidates(Exploration(calls=calls), {}, seed=seed)}
    assert re.search(r"^How many critical items saved\b", tasks[3]), tasks
    assert re.search(r"How many succeeded\?$", tasks[4]), tasks


def test_a_read_that_says_back_a_note_its_state_stored_is_asked_what_the_note_says():
    """memory-bank-mcp and mcp-python-interpreter: a file written "Send the draft to Sam by Friday." and read back
    ("File: README.md" and the sentence) grounded nothing: a sentence is a server's message, no answer. Read back
    whole after a write of the task's state, it is what the store holds: asked for, that write the task's `prepare`,
    and never stated. A read that holds it among much else is not asked for it."""
    from mcprl.scenarios.candidates import candidates
    from mcprl.scenarios.explored import Exploration, ExploredCall

    note = "Send the draft to Sam by Friday."
    write = {"file_path": "README.md", "content": note}
    many = "\n".join([f"README.md: {note}", "plan.md: Book a room for the review.", "todo.md: Renew the books."])
    calls = [
        ExploredCall(index=0, session=0, tool="write_file", arguments=write, text="Wrote README.md", writes=True),
        ExploredCall(
            index=1,
            session=0,
            tool="read_file",
            arguments={"file_path": "README.md"},
            text=f"File: README.md\n\n{note}",
        ),
        ExploredCall(index=2, session=0, tool="search_files", arguments={"pattern": "md"}, text=many),
    ]
    found = [t for seed in range(4) for t in candidates(Exploration(calls=calls, isolated=True), {}, seed=seed)]
    read = [t for t in found if t.reference[-1].tool == "read_file" and t.answer == note]
    assert read and all(note not in t.task and "README.md" in t.task for t in read), [t.task for t in found]
    assert all([(c.tool, c.arguments) for c in t.prepare] == [("write_file", write)] for t in read)
    assert not any(t.answer == note for t in found if t.reference[-1].tool == "search_files")


def test_a_document_that_says_one_sentence_under_its_headings_is_asked_what_it_says():
    """mcp-obsidian's `read_notes` of a daily note ("Daily/2024-03-01.md:", "# 2024-03-01", "Called Dana about the
    budget.") grounded nothing: a sentence was read as the server's message. Under a heading or the line naming it,
    a document's one sentence is what it says; a sentence alone, or two, are asked nothing of."""
    from mcprl.scenarios.candidates import candidates
    from mcprl.scenarios.explored import Exploration, ExploredCall

    def read(index: int, path: str, text: str) -> ExploredCall:
        return ExploredCall(index=index, session=0, tool="read_notes", arguments={"paths": [path]}, text=text)

    calls = [
        read(0, "Daily/2024-03-01.md", "Daily/2024-03-01.md:\n# 2024-03-01\nCalled Dana about the budget.\n"),
        read(1, "Garden.md", "Garden.md:\n# Garden plan\nPlant tomatoes in May.\nTags: #garden"),
        read(2, "todo.md", "The note was opened."),
        read(3, "notes.md", "notes.md:\nMeeting at ten.\nBring the report."),
    ]
    found = {(t.answer, t.task) for seed in range(6) for t in candidates(Exploration(calls=calls), {}, seed=seed)}
    answers = {a for a, _ in found}
    assert {"Called Dana about the budget.", "Plant tomatoes in May."} <= answers, found
    assert not answers & {"The note was opened.", "Meeting at ten.", "Bring the report."}, found
    assert all(" say" in task for a, task in found if a == "Called Dana about the budget."), found


def test_a_number_in_a_unit_is_asked_what_it_is_not_how_many_of_its_unit():
    """mcp-server-tree-sitter's `configure`: "Configure. How many maximum size in megabytes?" of `max_size_mb`: 100.
    A number of things is asked how many ("How many total files?"); one in a unit, what it is."""
    from mcprl.scenarios.candidates import candidates
    from mcprl.scenarios.explored import Exploration, ExploredCall

    config = {"cache": {"max_size_mb": 100}, "max_file_size_mb": 5, "total_files": 12}
    call = ExploredCall(index=0, session=0, tool="configure", arguments={}, text=json.dumps(config))
    asked = {t.answer: t.task for seed in range(10) for t in candidates(Exploration(calls=[call]), {}, seed=seed)}
    assert "How many total files" in asked[12] and "How many" not in asked[100] + asked[5], asked
    assert "size in megabytes" in asked[100], asked


def test_a_sentence_grounds_the_one_number_it_holds_besides_what_its_call_was_sent():
    """A server that answers in prose ("There are 42 units of SKU-3486 in stock.") grounds a task asking for the one
    number the sentence holds besides the values its call was sent, stating those values and not the answer; a
    sentence whose numbers are all the call's own ("Task 2 updated."), or a title-like line that echoes nothing
    ("Invoice for the March period 2024"), grounds no such task."""
    from mcprl.scenarios.candidates import candidates
    from mcprl.scenarios.explored import Exploration

    def asked(tool: str, arguments: dict, text: str) -> list[tuple[str, object]]:
        call = ExploredCall(index=0, session=0, tool=tool, arguments=arguments, text=text)
        return [(t.task, t.answer) for seed in range(4) for t in candidates(Exploration(calls=[call]), {}, seed=seed)]

    for tool, arguments, text, answer in (
        ("get_stock", {"sku": "SKU-3486"}, "There are 42 units of SKU-3486 in stock.", 42),
        ("get_weight", {"part": "bolt", "scale": 17}, "bolt weighs 204 g at scale 17", 204),
        ("get_weather", {"city": "London"}, "Temperature in London is 15°C", 15),
    ):
        tasks = asked(tool, arguments, text)
        assert tasks and all(a == answer for _, a in tasks), (text, tasks)
        for task, _ in tasks:
            assert all(str(v) in task for v in arguments.values()) and str(answer) not in task, task
    assert asked("update_task", {"id": 2, "status": "done"}, "Task 2 updated.") == []
    assert asked("get_invoice", {}, "Invoice for the March period 2024") == []
    # ... nor a sentence the tool gave to every call, its reply to anything
    stock = [
        ExploredCall(index=i, session=0, tool="get_status", arguments={"service": s}, text="Server v2 is running.")
        for i, s in enumerate(["web", "db", "queue"])
    ]
    assert [t.task for seed in range(4) for t in candidates(Exploration(calls=stock), {}, seed=seed)] == []


def test_no_write_is_checked_by_a_value_any_write_of_its_tool_leaves():
    """mcp-chess: after `make_move` e2e4 and after d2d4 (each in a fresh game), `get_turn` says "black": any move
    leaves it, so no task checks a move by it; the last move each leaves in the history is that move's alone, and
    checks it. A
    tool written once keeps the value it changed (nothing tells it apart from another write)."""
    from mcprl.scenarios.candidates import candidates
    from mcprl.scenarios.explored import Exploration

    calls: list[ExploredCall] = []

    def session(s: int, move: str, last: str) -> None:
        def add(tool: str, arguments: dict, text: str, **more) -> None:
            calls.append(ExploredCall(index=len(calls), session=s, tool=tool, arguments=arguments, text=text, **more))

        add("get_turn", {}, "white")
        add("get_history", {}, "Last move: none")
        add("make_move", {"move_uci": move}, f"Moved {move}.", writes=True)
        write = len(calls) - 1
        add("get_turn", {}, "black", reads_back=write, repeats=write - 2)
        add("get_history", {}, f"Last move: {last}", reads_back=write, repeats=write - 1)

    session(0, "e2e4", "e4")

    def checks(calls: list[ExploredCall]) -> set:
        tasks = [t for seed in range(8) for t in candidates(Exploration(calls=calls, isolated=True), {}, seed=seed)]
        return {(t.reference[-1].arguments["move_uci"], t.answer) for t in tasks if t.metadata["kind"] == "write"}

    assert ("e2e4", "black") in checks(calls)  # one move: nothing says "black" is any move's
    session(1, "d2d4", "d4")
    found = checks(calls)
    assert found and all(answer != "black" for _, answer in found), found
    assert {move for move, _ in found} == {"e2e4", "d2d4"}


def test_a_write_is_checked_only_by_what_it_changed_since_the_state_it_started_from():
    """mcp-todo: `task_get` 1 said "not found", `task_create` made task 1 ("Weekly report", tags family), nothing
    read it then, and `task_update` 1 set its tags again; `task_get` 1 read after the update differs from the read
    before the create by the create's doing: the update's task (whose `prepare` makes the create) may not be checked
    by the name, which holds with nothing done. Read after the create, the update's own change checks it."""
    from mcprl.scenarios.candidates import candidates
    from mcprl.scenarios.explored import Exploration

    record = '{{"id": 1, "name": "Weekly report", "tags": [{}]}}'

    def calls(read_between: bool, chained: bool = False) -> list[ExploredCall]:
        made: list[ExploredCall] = []

        def add(tool: str, arguments: dict, text: str, **more) -> int:
            made.append(ExploredCall(index=len(made), session=0, tool=tool, arguments=arguments, text=text, **more))
            return len(made) - 1

        read = add("task_get", {"id": 1}, "Task 1 not found")
        create = add("task_create", {"name": "Weekly report", "tags": ["family"]}, "Created task 1", writes=True)
        if read_between:
            read = add("task_get", {"id": 1}, record.format('"family"'))
        # (chained: the update's id came from the create's reply, which a task then states as its first step)
        more = {"sources": {"id": f"result:{create}"}, "parents": [create]} if chained else {}
        update = add("task_update", {"id": 1, "tags": ["family", "travel"]}, "Task 1 updated", writes=True, **more)
        add("task_get", {"id": 1}, record.format('"family", "travel"'), reads_back=update, repeats=read)
        return made

    def checks(made: list[ExploredCall]) -> set:
        tasks = [t for seed in range(8) for t in candidates(Exploration(calls=made, isolated=True), {}, seed=seed)]
        return {t.answer for t in tasks if t.metadata["kind"] == "write" and t.reference[-1].tool == "task_update"}

    assert checks(calls(read_between=False)) == set()
    assert checks(calls(read_between=True)) == {"travel"}
    # ... and a write before it that is a step of its task is the task's doing too
    assert "Weekly report" in checks(calls(read_between=False, chained=True))


def test_records_named_as_another_listing_said_its_things_are_asked_of_as_those_things():
    """mcp-server-sqlite: `describe_table` gave a table's columns as records (name, type); a known query had listed
    those names as the table's columns. A task picks a record out as the column it is ("the name of the column whose
    type is REAL"), never as "the name where the type is REAL"; records whose names no listing gave stay unnamed."""
    from mcprl.scenarios.candidates import candidates
    from mcprl.scenarios.explored import Exploration

    columns = [
        {"cid": 0, "name": "id", "type": "INTEGER"},
        {"cid": 1, "name": "label", "type": "TEXT"},
        {"cid": 2, "name": "price", "type": "REAL"},
    ]

    def tasks(listed: list[str]) -> list[str]:
        query = "SELECT name FROM pragma_table_info('products')"
        calls = [
            ExploredCall(index=0, session=0, tool="read_query", arguments={"query": query}, text=json.dumps(listed)),
            ExploredCall(
                index=1,
                session=0,
                tool="describe_table",
                arguments={"table_name": "products"},
                text=json.dumps(columns),
            ),
        ]
        found = [t for seed in range(8) for t in candidates(Exploration(calls=calls), {}, seed=seed)]
        return [t.task for t in found if t.reference[-1].tool == "describe_table"]

    named = tasks(["id", "label", "price"])
    assert any("of the column whose" in t for t in named) and not any(" where " in t for t in named), named
    unnamed = tasks(["id", "label", "stock"])  # (a listing of other names says nothing of these records)
    assert not any("column" in t for t in unnamed) and any(" where " in t for t in unnamed), unnamed
    # ... and a query's rows are each a row of its table: "the date of the order whose customer is Cleo"
    rows = [{"id": 1, "customer": "Ada", "date": "2024-03-02"}, {"id": 2, "customer": "Cleo", "date": "2024-03-11"}]
    call = ExploredCall(
        index=0,
        session=0,
        tool="read_query",
        arguments={"query": "SELECT * FROM orders LIMIT 5"},
        text=json.dumps(rows),
    )
    picked = [t.task for seed in range(8) for t in candidates(Exploration(calls=[call]), {}, seed=seed)]
    whose = [t for t in picked if "whose" in t or " where " in t]
    assert whose and all("of the order whose" in t for t in whose), picked


def test_a_call_sent_several_requests_at_once_grounds_no_task_and_one_sent_one_does():
    """mcp-text-editor's `get_text_file_contents` takes a list of files, each with its ranges: a read of three was
    worded "Find the text file contents with files (file path ..., ranges (start 14)), (file path ...), (...)". No
    task recites several unnamed requests; one file's read is asked, and named records (entities) are still said."""
    from mcprl.scenarios.candidates import candidates
    from mcprl.scenarios.explored import Exploration

    def tasks(tool: str, arguments: dict, text: str) -> list[str]:
        call = ExploredCall(index=0, session=0, tool=tool, arguments=arguments, text=text)
        return [t.task for seed in range(6) for t in candidates(Exploration(calls=[call]), {}, seed=seed)]

    read = "get_text_file_contents"
    one = {"files": [{"file_path": "/srv/notes.txt", "ranges": [{"start": 3, "end": 3}]}]}
    assert tasks(read, one, '{"content": "Next review: Friday", "hash": "0a1b"}')
    two = {"files": [one["files"][0], {"file_path": "/srv/todo.txt", "ranges": [{"start": 1}]}]}
    assert tasks(read, two, '{"content": "Next review: Friday\\nOwner: Ann", "hash": "0a1b"}') == []
    ranges = {"files": [{"file_path": "/srv/notes.txt", "ranges": [{"start": 1, "end": 2}, {"start": 9}]}]}
    assert tasks(read, ranges, '{"content": "Next review: Friday", "hash": "0a1b"}') == []
    people = {"entities": [{"name": "Ann", "entityType": "person"}, {"name": "Bob", "entityType": "person"}]}
    assert tasks("open_nodes", people, '{"entities": [{"name": "Ann", "observations": ["Lives in Oslo"]}]}')


def test_a_listing_an_object_wraps_is_asked_of_by_what_its_key_says_each_record_is_never_with_the_wrappers_total():
    """@cyanheads/git-mcp-server's `git_log` wraps its commits with what is said of them (`{"success": true,
    "commits": [...], "totalCount": 2}`): a task asks for a field of a commit as of a commit ("the author of the
    commit whose subject is ..."), and none asks for the total as a commit's ("the total count of the commit ...");
    the total is asked as how many commits the log holds."""
    from mcprl.scenarios.candidates import candidates
    from mcprl.scenarios.explored import Exploration

    commits = [
        {"hash": "ea67ad9f", "author": "Ann Lee", "timestamp": 1709287200, "subject": "Initial commit"},
        {"hash": "16a8aaf1", "author": "Bob Stone", "timestamp": 1709373600, "subject": "Add forecast module"},
    ]
    log = {"success": True, "commits": commits, "totalCount": 2}
    call = ExploredCall(
        index=0, session=0, tool="git_log", arguments={"path": "/srv/repo"}, text=json.dumps(log), structured=log
    )
    tasks = [t for seed in range(6) for t in candidates(Exploration(calls=[call]), {}, seed=seed)]
    records = [t for t in tasks if any(c["subject"] in t.task or c["hash"] in t.task for c in commits)]
    assert records and all(re.search(r"\bcommit\b", t.task) for t in records), [t.task for t in records]
    assert not any("total" in t.task for t in records), [t.task for t in records]
    assert any(re.search(r"how many commits|count the commits", t.task, re.I) and t.answer == 2 for t in tasks), [
        t.task for t in tasks
    ]


def test_a_writes_word_that_it_was_done_answers_no_task_and_is_sent_nowhere():
    """A write's reply that says only that it was done ("Insight added", "All caches cleared", `"status":
    "success"`) is the same for any write of its tool: no task asks for it, whatever the write was sent; what the
    write's reply holds of the state (the id it gave) is still asked for, and a read's words are as they were."""
    from mcprl.scenarios.candidates import candidates
    from mcprl.scenarios.explored import Exploration

    replies = [
        ({"insight": "orders grew"}, '{"success": true, "message": "Insight added"}'),
        ({"insight": "stock is low"}, '{"success": true, "message": "Insight added"}'),
        ({}, '{"status": "success", "message": "All caches cleared"}'),
        ({"title": "Renew passport"}, '{"status": "success", "id": 41, "message": "Task created"}'),
    ]
    calls = [
        ExploredCall(index=i, session=i, tool=f"write_{i // 2}", arguments=a, text=t, writes=True)
        for i, (a, t) in enumerate(replies)
    ]
    calls.append(
        ExploredCall(index=4, session=4, tool="task_status", arguments={"id": 7}, text='{"status": "completed"}')
    )
    tasks = [t for seed in range(8) for t in candidates(Exploration(calls=calls), {}, seed=seed)]
    assert {t.answer for t in tasks} == {41, "completed"}, {(t.task, t.answer) for t in tasks}


def test_what_a_write_made_is_asked_for_by_the_write_not_by_its_name():
    """A write that made a record ("register the project Team meeting") and said what it holds: a task asks for the
    write and what it gave ("Register project ... and tell me its last scan"), never of "the project Team meeting"
    as if it were there before; a read of a record a write made earlier names it."""
    from mcprl.scenarios.candidates import candidates
    from mcprl.scenarios.explored import Exploration

    made = '{"name": "Team meeting", "root": "/srv/repo", "files": 12, "languages": 3}'
    calls = [
        ExploredCall(
            index=0,
            session=0,
            tool="register_project",
            arguments={"path": "/srv/repo", "name": "Team meeting"},
            text=made,
            writes=True,
        ),
        ExploredCall(
            index=1,
            session=1,
            tool="list_projects",
            arguments={},
            text='[{"name": "Garden plan", "files": 7}, {"name": "Tax return", "files": 4}]',
        ),
    ]
    tasks = [t for seed in range(8) for t in candidates(Exploration(calls=calls), {}, seed=seed)]
    writes = [t for t in tasks if t.reference[-1].tool == "register_project"]
    assert writes and not [t.task for t in writes if "of the project" in t.task or "project's" in t.task]
    assert any("Garden plan" in t.task for t in tasks if t.reference[-1].tool == "list_projects")


def test_a_folder_the_session_was_given_is_no_answer():
    """A server that prints its environment gives the home and working folder its session was given: another in
    each session (the next rollout's, a scenarios file asked again), so no task asks for them; the rest stays."""
    import tempfile

    from mcprl.scenarios.candidates import candidates
    from mcprl.scenarios.explored import Exploration
    from mcprl.tools.copies import HOME_PREFIX, WORKDIR_PREFIX

    home, workdir = tempfile.mkdtemp(prefix=HOME_PREFIX), tempfile.mkdtemp(prefix=WORKDIR_PREFIX)
    env = json.dumps({"HOME": home, "PWD": f"{workdir}/data", "SHELL": "/bin/bash", "TERM": "xterm-256color"})
    calls = [ExploredCall(index=0, session=0, tool="print_environment", arguments={}, text=env)]
    tasks = [t for seed in range(8) for t in candidates(Exploration(calls=calls), {}, seed=seed)]
    answers = {str(t.answer) for t in tasks}
    assert answers and not [a for a in answers if home in a or workdir in a], answers


def test_what_a_result_says_went_wrong_is_no_answer_and_no_value_to_send():
    """mcp-server-tree-sitter's `diagnose_config` answers `{"file_content": ..., "error": "YAML parser ..."}`: its
    error's text is neither asked for nor offered as a value (it was sent as the next call's path); a count of
    errors is a number of the data, asked for as any."""
    from mcprl.scenarios.candidates import candidates
    from mcprl.scenarios.explored import Exploration
    from mcprl.scenarios.results import result_values

    text = json.dumps({"file_content": "1.2.0", "error": "YAML parser returned non-dict: <class 'str'>", "errors": 3})
    assert ("error", "YAML parser returned non-dict: <class 'str'>") not in result_values(text, None)
    assert ("errors", 3) in result_values(text, None)
    call = ExploredCall(index=0, session=0, tool="diagnose", arguments={"path": "/srv/VERSION"}, text=text)
    tasks = [t for seed in range(8) for t in candidates(Exploration(calls=[call]), {}, seed=seed)]
    assert {t.answer for t in tasks} == {"1.2.0", 3}, [(t.task, t.answer) for t in tasks]


def test_a_programs_name_for_an_object_is_no_answer():
    """mcp-sympy's `func` of "1 + 6" answered `<class 'sympy.core.numbers.Integer'>`: a program's name for an
    object, no fact a person asks for; the number a sibling call gave still answers."""
    from mcprl.scenarios.candidates import candidates
    from mcprl.scenarios.explored import Exploration

    calls = [
        ExploredCall(
            index=0, session=0, tool="sympy_func", arguments={"expr": "1 + 6"}, text="<class 'sympy.Integer'>"
        ),
        ExploredCall(index=1, session=0, tool="sympy_eval", arguments={"expr": "1 + 6"}, text="7"),
        ExploredCall(index=2, session=0, tool="lookup", arguments={"x": "f"}, text='{"f": "<function f at 0x7f3a>"}'),
    ]
    tasks = [t for seed in range(8) for t in candidates(Exploration(calls=calls), {}, seed=seed)]
    assert {t.answer for t in tasks} == {7}, [(t.task, t.answer) for t in tasks]


def test_a_search_that_found_nothing_says_back_what_it_was_asked_and_answers_no_task():
    """dbhub's `search_objects` that matched nothing wraps its request said back (with its schema's default for a
    parameter not sent), a zero count and an empty list in `data`: no task asks for that zero; a search that found
    something is asked for its count."""
    from mcprl.scenarios.candidates import candidates
    from mcprl.scenarios.explored import Exploration

    def reply(kind: str, pattern: str, found: list) -> str:
        data = {"object_type": kind, "pattern": pattern, "detail_level": "names", "count": len(found), "results": found}
        return json.dumps({"success": True, "data": data})

    calls = [
        ExploredCall(
            index=0, session=0, tool="search_objects", arguments={"object_type": "column", "pattern": "PRIMARY"},
            text=reply("column", "PRIMARY", []),
        ),
        ExploredCall(
            index=1, session=0, tool="search_objects", arguments={"object_type": "table", "pattern": "dept%"},
            text=reply("table", "dept%", [{"name": "dept_emp"}, {"name": "dept_manager"}]),
        ),
    ]  # fmt: skip
    defaults = {"search_objects": {"detail_level": "names"}}
    tasks = [t for seed in range(8) for t in candidates(Exploration(calls=calls), {}, seed=seed, defaults=defaults)]
    assert tasks and all(t.reference[-1].arguments["pattern"] == "dept%" for t in tasks), [
        (t.task, t.answer) for t in tasks
    ]


def test_a_key_that_is_a_value_names_no_field_to_ask_for():
    """excel-mcp-server's `list_workbooks` maps file names to sizes (`{"shop.xlsx": 5627}`): "What is the shop xlsx?"
    asks for nothing a person could name. A key that is a file's name, a path, a number or a share grounds no task,
    nor one that is a preposition alone (a relation's `to`) where nothing names what it is of ("Describe files. What
    is the to?"); the fields beside it that have names do."""
    from mcprl.scenarios.candidates import candidates
    from mcprl.scenarios.explored import Exploration, ExploredCall

    mapped = {"shop.xlsx": 5627, "/srv/notes.txt": 120, "50%": 3.5, "2024-03": 7, "to": "Ann", "used_range": "A1:C4"}
    call = ExploredCall(index=0, session=0, tool="describe_files", arguments={}, text=json.dumps(mapped))
    tasks = candidates(Exploration(calls=[call]), {}, seed=0)
    assert tasks and {str(t.answer) for t in tasks} == {"A1:C4"}, [(t.task, t.answer) for t in tasks]
    # a preposition's field is asked after what it is of, as people ask it: never "the from of the email"
    text = "From: Aisha Bello\nTo: Alex Morgan\nSince: 2019\nSubject: Lunch on Tuesday?"
    call = ExploredCall(index=0, session=0, tool="read_email", arguments={"email_id": "msg-0143"}, text=text)
    relations = json.dumps([{"from": "Bob", "type": "knows"}, {"from": "Ann Lee", "type": "manages"}])
    listed = ExploredCall(index=1, session=0, tool="read_graph", arguments={}, text=relations)
    tasks = [t for seed in range(4) for t in candidates(Exploration(calls=[call, listed]), {}, seed=seed)]
    assert {"Aisha Bello", "Alex Morgan", "knows"} <= {t.answer for t in tasks}
    said = r"\bthe (?:from|to|since) (?:of|is)\b| since\?$| of (?:from|to)\b"
    assert not any(re.search(said, t.task) for t in tasks), [t.task for t in tasks]


def test_the_keys_of_a_tally_are_values_and_name_no_field_to_ask_for():
    """mcp-server-tree-sitter's `analyze_project` counts files by language and by extension (`"languages":
    {"markdown": 3, "python": 1}`, `"file_counts": {".md": 3, ".py": 1}`): "What is the markdown of the project?"
    asks for nothing a person names. Keys the server listed or held as values elsewhere (`list_languages`), or that
    are extensions, or the folders of files listed, ground no task; the fields beside them do, and a tally of keys
    listed nowhere is fields."""
    from mcprl.scenarios.candidates import candidates
    from mcprl.scenarios.explored import Exploration

    analysis = {
        "name": "site",
        "languages": {"markdown": 3, "python": 1},
        "file_counts": {".md": 3, ".py": 1},
        "total_files": 4,
    }
    stats = {"sizes": {"lines": 120, "words": 800}}

    def answers(listing: list[str]) -> set:
        calls = [
            ExploredCall(
                index=0, session=0, tool="list_languages", arguments={}, text=json.dumps({"available": listing})
            ),
            ExploredCall(
                index=1, session=0, tool="analyze_project", arguments={"project": "site"}, text=json.dumps(analysis)
            ),
            ExploredCall(
                index=2, session=0, tool="file_stats", arguments={"path": "/srv/a.txt"}, text=json.dumps(stats)
            ),
        ]
        found = [t for seed in range(8) for t in candidates(Exploration(calls=calls), {}, seed=seed)]
        return {
            (t.reference[-1].tool, t.metadata.get("field"), t.answer)
            for t in found
            if t.reference[-1].tool != "list_languages"
        }

    asked = answers(["bash", "markdown", "python"])
    assert ("analyze_project", "total_files", 4) in asked and ("file_stats", "lines", 120) in asked, asked
    assert not any(field in ("markdown", "python", "md", "py", ".md", ".py") for _, field, _ in asked), asked
    assert ("analyze_project", "markdown", 3) in answers(["bash", "go"])
    # ... a tally of one key too (tree-sitter's project of Python files alone: "What is the python?" -> 3)
    analysis["languages"] = {"python": 3}
    assert not any(field == "python" for _, field, _ in answers(["bash", "markdown", "python"]))
    # ... nor keys another result held as values (csv-editor's `top_10_values` of the names its load's preview rows
    # held: "What is the apple of the column statistics?")
    calls = [
        ExploredCall(
            index=0,
            session=0,
            tool="load_table",
            arguments={"content": "name,price"},
            text=json.dumps({"rows": 2, "preview": [{"name": "apple", "price": 0.5}, {"name": "pear", "price": 0.8}]}),
        ),
        ExploredCall(
            index=1,
            session=0,
            tool="column_statistics",
            arguments={"column": "name"},
            text=json.dumps({"unique_count": 2, "top_values": {"apple": 1, "pear": 1}}),
        ),
    ]
    fields = {t.metadata.get("field") for seed in range(8) for t in candidates(Exploration(calls=calls), {}, seed=seed)}
    assert "unique_count" in fields and not fields & {"apple", "pear"}, fields
    # ... nor keys that are the folders of files a result held, nor the "" of the project's own (its
    # `"dir_counts": {"": 1, "pkg": 0}` beside a match in "pkg/shop.py": "... and tell me the pkg." -> 0)
    analysis = {"name": "site", "dir_counts": {"": 1, "pkg": 0}, "total_files": 3}
    calls = [
        ExploredCall(
            index=0,
            session=0,
            tool="find_text",
            arguments={"project": "site", "pattern": "total"},
            text=json.dumps({"file": "pkg/shop.py", "line": 12, "text": "def total(self):"}),
        ),
        ExploredCall(
            index=1, session=0, tool="analyze_project", arguments={"project": "site"}, text=json.dumps(analysis)
        ),
    ]
    fields = {t.metadata.get("field") for seed in range(8) for t in candidates(Exploration(calls=calls), {}, seed=seed)}
    assert "total_files" in fields and not fields & {"pkg", ""}, fields


def test_no_write_task_states_a_path_where_its_write_asks_for_no_path():
    """A knowledge-graph server named its file on the command line, and exploring sent that path first to any string
    (`create_relations` "to /srv/memory.jsonl"): no person writes a relation to a file. A write that was sent a path
    where nothing named a path (nor where a move starts or ends) is asked for grounds no write task; one sent names
    does, as does a path where a path is asked for."""
    from mcprl.scenarios.candidates import candidates
    from mcprl.scenarios.explored import Exploration

    def write_tasks(tool: str, arguments: dict) -> list:
        graph = '{"relations": []}'
        calls = [
            ExploredCall(index=0, session=0, tool="read_graph", arguments={}, text=graph),
            ExploredCall(index=1, session=0, tool=tool, arguments=arguments, text="done", writes=True),
            ExploredCall(
                index=2,
                session=0,
                tool="read_graph",
                arguments={},
                text=f'{{"relations": [{json.dumps(arguments)}]}}',
                reads_back=1,
                repeats=0,
            ),  # fmt: skip
        ]
        tasks = [t for seed in range(4) for t in candidates(Exploration(calls=calls, isolated=True), {}, seed=seed)]
        return [t for t in tasks if t.metadata["kind"] == "write"]

    assert write_tasks("create_relations", {"relations": [{"from": "Ann Lee", "to": "Porto office"}]})
    assert not write_tasks("create_relations", {"relations": [{"from": "Ann Lee", "to": "/srv/memory.jsonl"}]})
    assert write_tasks("copy_file", {"source": "/srv/a.txt", "destination": "/srv/b.txt"})
    # nor is a read that was sent one so asked for, nor a field that holds what a write was sent so
    node = json.dumps({"name": "Garden plan", "entityType": "place"})
    opened = ExploredCall(index=0, session=0, tool="open_nodes", arguments={"names": ["/srv/memory.jsonl"]}, text=node)
    made = {"relations": [{"from": "/srv/memory.jsonl", "relationType": "event"}]}
    write = ExploredCall(index=1, session=0, tool="create_relations", arguments=made, text="made", writes=True)
    listed = [made["relations"][0], {"from": "Ann Lee", "relationType": "knows"}]
    graph = ExploredCall(index=2, session=0, tool="read_graph", arguments={}, text=json.dumps(listed))
    tasks = [t for seed in range(4) for t in candidates(Exploration(calls=[opened, write, graph]), {}, seed=seed)]
    # ... but a path sent where one is asked too is the user's file, stated where a task asks of it (excel-mcp-server's
    # workbook, sent also as a sheet by a write)
    book = ExploredCall(
        index=3,
        session=1,
        tool="clear_range",
        arguments={"path": "/srv/a.xlsx", "sheet": "/srv/a.xlsx"},
        text="{}",
        writes=True,
    )
    read = ExploredCall(
        index=4, session=2, tool="describe_sheet", arguments={"path": "/srv/a.xlsx"}, text='{"used_range": "A1:C4"}'
    )
    assert any("/srv/a.xlsx" in t.task for t in candidates(Exploration(calls=[book, read]), {}, seed=0))
    assert tasks and not any("open_nodes" in t.tools or "/srv/memory.jsonl" in f"{t.task} {t.answer}" for t in tasks), [
        (t.task, t.answer) for t in tasks
    ]


def test_a_record_read_again_after_a_write_or_with_its_clock_moved_is_no_other_record():
    """mcp-server-filesystem's `get_file_info` of a folder, before a write (`created: <now>` in JavaScript's way),
    after it (its `modified` now too), in a fresh session, and of "." (the same folder): its size held one value in
    four records, so it read as a constant (a flag) and grounded nothing. A call made again asks no other thing, and
    a record that differs only in the clock is the same record: the size is asked for."""
    from mcprl.scenarios.candidates import candidates
    from mcprl.scenarios.explored import Exploration
    from mcprl.scenarios.results import clock_spans

    def info(modified: str) -> str:
        now = datetime.datetime.now(datetime.UTC).strftime("%a %b %d %Y %H:%M:%S GMT+0000 (Coordinated Universal Time)")
        return f"size: 4096\ncreated: {now}\nmodified: {modified}\nisDirectory: true\npermissions: 755"

    assert len(clock_spans(info("Sun Mar 10 2024 10:00:00 GMT+0000"))) == 1  # (now, not a date long ago)
    old = "Sun Mar 10 2024 10:00:00 GMT+0000 (Coordinated Universal Time)"
    texts = [(0, "/srv/d", info(old)), (0, "/srv/d", info("x")), (1, "/srv/d", info(old)), (2, ".", info(old))]
    calls = [
        ExploredCall(index=i, session=s, tool="get_file_info", arguments={"path": p}, text=t)
        for i, (s, p, t) in enumerate(texts)
    ]
    calls.insert(1, ExploredCall(index=9, session=0, tool="create_directory", arguments={"path": "x"}, text="made"))
    calls[2] = calls[2].model_copy(update={"reads_back": 9, "repeats": 0})
    tasks = candidates(Exploration(calls=calls, isolated=True), {}, seed=0)
    assert 4096 in {t.answer for t in tasks}, [(t.task, t.answer) for t in tasks]


def test_a_weekday_every_call_read_off_the_clock_at_one_hour_is_no_constant():
    """mcp-server-time's `get_current_time`, called for four zones between 05:00 and 15:00 UTC, says the same weekday
    for each (a flag likewise): read as a constant, the tool grounded nothing at that hour and the clock test failed
    there. A value of a record that states the clock's date, of the kind the clock gives, is asked for (live where
    it moves with the clock)."""
    from mcprl.scenarios.candidates import candidates
    from mcprl.scenarios.explored import Exploration

    now = datetime.datetime.now(datetime.UTC)
    weekday = now.strftime("%A")
    calls = [
        ExploredCall(
            index=i,
            session=0,
            tool="get_current_time",
            arguments={"timezone": zone},
            text=json.dumps({"timezone": zone, "datetime": now.isoformat(), "day_of_week": weekday, "is_dst": False}),
        )
        for i, zone in enumerate(["Europe/London", "Etc/UTC", "America/New_York", "Asia/Tokyo"])
    ]
    tasks = candidates(Exploration(calls=calls), {}, seed=0)
    assert weekday in {t.answer for t in tasks}, [(t.task, t.answer) for t in tasks]
    old = [c.model_copy(update={"text": c.text.replace(now.isoformat(), "2024-03-10T10:00:00")}) for c in calls]
    assert weekday not in {t.answer for t in candidates(Exploration(calls=old), {}, seed=0)}  # no clock: a constant


def test_a_value_said_the_same_only_where_it_was_asked_for_is_no_constant():
    """mcp-alchemy's `schema_definitions` says "price: REAL, nullable" in every call that asked for the products table
    (three of four): read as a constant, like a status every call says, the tool grounded nothing. A field one value of
    which only the calls that asked for it hold is asked about; one every call holds alike stays unasked."""
    from mcprl.scenarios.candidates import candidates
    from mcprl.scenarios.explored import Exploration

    products = "products:\n    id: INTEGER, primary key\n    price: REAL, nullable\n    stock: INTEGER, nullable"
    orders = "orders:\n    id: INTEGER, primary key\n    customer: TEXT, nullable"
    asked = [["products"], ["products", "orders"], ["orders", "products"], ["orders"]]
    texts = [products, f"{products}\n{orders}", f"{orders}\n{products}", orders]
    calls = [
        ExploredCall(index=i, session=0, tool="schema_definitions", arguments={"table_names": names}, text=text)
        for i, (names, text) in enumerate(zip(asked, texts))
    ]
    tasks = [t for seed in range(4) for t in candidates(Exploration(calls=calls), {}, seed=seed)]
    assert any(t.answer == "REAL, nullable" for t in tasks), [(t.task, t.answer) for t in tasks]
    assert not any(t.answer == "INTEGER, primary key" for t in tasks), [t.task for t in tasks]
    # ... nor is a value every whole result says, missing only from one the client cut before its end (dbhub's
    # `"source_id": "default"` after a statement's rows: "Find the rows of ... and tell me its source id.")
    rows = [{"customer": f"c{i}", "total": 10 + i, "source_id": "main-db"} for i in range(4)]
    texts = [json.dumps(r) for r in rows]
    texts[3] = texts[3][: texts[3].index(', "source_id"')] + "\n[... truncated: 24 more characters]"
    calls = [
        ExploredCall(index=i, session=0, tool="get_order", arguments={"id": i}, text=t) for i, t in enumerate(texts)
    ]
    tasks = [t for seed in range(4) for t in candidates(Exploration(calls=calls), {}, seed=seed)]
    assert tasks and not any(t.answer == "main-db" for t in tasks), [t.task for t in tasks]


def test_a_listing_beside_the_properties_of_what_holds_it_is_its_records_each_named_by_its_name():
    """excel-mcp-server's `describe_workbook`: `{"sheets": [...], "doc_properties": {...}}` was read as one record
    whose `name` and `used_range` came twice, so it grounded nothing. A list of objects beside objects of properties
    is a listing: each sheet's fields are asked for, the sheet named by its name."""
    from mcprl.scenarios.candidates import candidates
    from mcprl.scenarios.explored import Exploration

    book = {
        "sheets": [{"name": "Orders", "used_range": "A1:E5", "active": True}, {"name": "Staff", "used_range": "A1:C4"}],
        "doc_properties": {"author": "openpyxl"},
    }
    call = ExploredCall(
        index=0, session=0, tool="describe_workbook", arguments={"path": "/srv/a.xlsx"}, text=json.dumps(book)
    )
    tasks = candidates(Exploration(calls=[call]), {}, seed=0)
    ranges = {t.answer: t.task for t in tasks if t.answer in ("A1:E5", "A1:C4")}
    assert set(ranges) == {"A1:E5", "A1:C4"} and "Orders" in ranges["A1:E5"], [t.task for t in tasks]


def test_a_read_made_again_before_the_writes_the_copies_keep_grounds_what_it_read_after_them_did_not():
    """A read that answered only after a write that changed the user's files (withheld: no task asks after it) is
    made again in a later session before any write; it said the same, and the plainest of the reads alike was the
    first, after the write, so nothing was asked. The one read clean grounds the tasks."""
    from mcprl.scenarios.candidates import candidates
    from mcprl.scenarios.explored import Exploration

    rows = json.dumps({"range": "A1:B3", "values": [["product", "qty"], ["Steel bolt", 50], ["Oak plank", 2]]})
    read = {"path": "/srv/shop.xlsx", "sheet": "Orders"}
    calls = [
        ExploredCall(index=0, session=0, tool="clear_range", arguments={"range": "Z9"}, text="{}", writes=True),
        ExploredCall(index=1, session=0, tool="read_range", arguments=read, text=rows),
        ExploredCall(index=2, session=1, tool="read_range", arguments=read, text=rows, repeats=1),
    ]
    withheld = Exploration(calls=calls, isolated=True, withheld=["clear_range"])
    assert {t.answer for t in candidates(withheld, {}, seed=0)} >= {50, 2}
    assert not candidates(Exploration(calls=calls[:2], isolated=True, withheld=["clear_range"]), {}, seed=0)


def test_an_object_holding_listings_of_two_kinds_asks_of_each_by_what_its_key_says():
    """A knowledge graph's `read_graph`, `{"entities": [...], "relations": [...]}`, was read as one record whose
    fields came from both ("What is the name of the graph?", three times with three answers). Each listing is read on
    its own, its records called what its key says."""
    from mcprl.scenarios.candidates import candidates
    from mcprl.scenarios.explored import Exploration

    graph = {
        "entities": [
            {"name": "Weekly report", "entityType": "project"},
            {"name": "Garden plan", "entityType": "place"},
        ],
        "relations": [{"from": "Weekly report", "to": "Garden plan", "relationType": "depends on"}],
    }
    call = ExploredCall(index=0, session=0, tool="read_graph", arguments={}, text=json.dumps(graph))
    tasks = [t for seed in range(4) for t in candidates(Exploration(calls=[call]), {}, seed=seed)]
    kinds = {t.answer: t.task for t in tasks if t.answer in ("project", "place")}
    assert set(kinds) == {"project", "place"} and all("entity" in task for task in kinds.values()), kinds
    assert not any("name of the graph" in t.task for t in tasks), [t.task for t in tasks]


def test_a_listings_line_picked_out_by_its_name_is_asked_for_by_that_name():
    """A database server's `describe_table` lists each column as a line with its `name` and `type`: a line picked
    out by its name is asked for by that name, as a record is ("In the table products, what is the type of
    price?"), never by what its name field holds ("... where the name is price"); the answer is the line's own."""
    from mcprl.scenarios.candidates import candidates
    from mcprl.scenarios.explored import Exploration, ExploredCall

    columns = [("id", "INTEGER"), ("name", "TEXT"), ("price", "REAL"), ("stock", "INTEGER")]
    text = json.dumps([{"cid": i, "name": n, "type": t, "notnull": 0} for i, (n, t) in enumerate(columns)])
    call = ExploredCall(index=0, session=0, tool="describe_table", arguments={"table_name": "products"}, text=text)
    picked = [
        t
        for seed in range(8)
        for t in candidates(Exploration(calls=[call]), {}, seed=seed)
        if t.metadata.get("field") == "type" and any(n in t.metadata.get("given", []) for n, _ in columns)
    ]
    assert picked
    for t in picked:
        (name,) = [n for n, _ in columns if n in t.metadata["given"]]
        assert t.answer == dict(columns)[name] and not re.search(r"\bthe name is\b", t.task), t.task


def test_a_handle_the_call_before_was_sent_is_stated_and_one_the_server_issued_is_not():
    """mcp-server-tree-sitter's tools take a `project` registered first (a handle: made-up names were refused), and
    `register_project_tool` is sent the name it registers: its tasks read "Register project ... Then get the file
    ... with project the previous result". A handle whose value the call before was sent is the user's own: the
    task states it and the environment registers it before the episode (its `prepare`); one the server issued (a
    session's id) stays unsaid, its call said as "the previous result"."""
    from mcprl.scenarios.candidates import candidates
    from mcprl.scenarios.explored import Exploration, ExploredCall

    def chain(handle: str, sent: dict) -> Exploration:
        made = json.dumps({"name": handle, "root_path": "/srv/r"})
        read = json.dumps({"path": "VERSION", "size": 6, "line_count": 1, "owner": "Ann Lee"})
        calls = [
            ExploredCall(index=0, session=0, tool="register_project", arguments=sent, text=made, writes=True),
            ExploredCall(
                index=1,
                session=0,
                tool="get_file_metadata",
                arguments={"project": handle, "path": "VERSION"},
                text=read,
                sources={"project": "result:0"},
                parents=[0],
            ),
        ]
        return Exploration(calls=calls, handles=["project"], isolated=True)

    def reads(exploration: Exploration) -> list:
        found = [t for seed in range(4) for t in candidates(exploration, {}, seed=seed)]
        return [t for t in found if t.reference[-1].tool == "get_file_metadata"]

    named = reads(chain("Weekly report", {"path": ".", "name": "Weekly report"}))
    assert named and all("the previous result" not in t.task for t in named), [t.task for t in named]
    assert any("Weekly report" in t.task for t in named)  # (by the call: a file named alone states no project)
    assert all([c.tool for c in t.prepare] == ["register_project"] for t in named), [t.task for t in named]
    issued = reads(chain("prj-8f2a", {"path": "."}))
    assert issued and all("prj-8f2a" not in t.task and not t.prepare for t in issued)  # (the rollout registers it)
    assert all([c.tool for c in t.reference] == ["register_project", "get_file_metadata"] for t in issued)


def test_a_time_on_the_hour_is_no_number():
    """mcp-server-time's `get_current_time` at six o'clock gave "datetime": "2026-12-02T06:00:00-05:00", whose one
    number (its zeros) was taken for the answer: "Find the current time for America/New_York and tell me its
    datetime." -> 0, which every later result holds. A date or a time is never answered by a number in it."""
    from mcprl.scenarios.candidates import candidates
    from mcprl.scenarios.explored import Exploration, ExploredCall

    for stamp in ("2026-12-02T06:00:00-05:00", "2024-03-07", "2024-03-07 10:00"):
        record = {"timezone": "America/New_York", "datetime": stamp, "is_dst": False, "offset_hours": -5}
        call = ExploredCall(
            index=0,
            session=0,
            tool="get_current_time",
            arguments={"timezone": "America/New_York"},
            text=json.dumps(record),
        )
        for seed in range(4):
            for t in candidates(Exploration(calls=[call]), {}, seed=seed):
                assert t.metadata.get("field") != "datetime" or isinstance(t.answer, str), (t.task, t.answer)


def test_a_listing_of_one_line_is_answered_by_its_name_not_its_marker():
    """server-filesystem's `list_directory` of a folder holding one file gave "[FILE] todo.txt", taken whole for the
    answer ("List directory docs, and tell me the result." -> "[FILE] todo.txt"): a reply naming todo.txt did not
    hold it. A listing's one line answers by its name."""
    from mcprl.scenarios.candidates import candidates
    from mcprl.scenarios.explored import Exploration, ExploredCall

    call = ExploredCall(index=0, session=0, tool="list_directory", arguments={"path": "docs"}, text="[FILE] todo.txt")
    answers = {str(t.answer) for seed in range(4) for t in candidates(Exploration(calls=[call]), {}, seed=seed)}
    assert answers == {"todo.txt"}, answers


def test_a_listings_total_beside_it_is_asked_as_how_many_it_lists():
    """A listing wrapped with its total (`{"tables": [...], "count": 3}`) was asked for the total as a field of the
    listing ("Find the tables of the database and tell me its count."), as no one asks. Where the call names what it
    lists, a total that counts its records is asked as how many there are, and answered by that many."""
    from mcprl.scenarios.candidates import candidates
    from mcprl.scenarios.explored import Exploration, ExploredCall

    tables = [{"name": n, "rows": r} for n, r in (("orders", 4), ("products", 5), ("staff", 2))]
    for total in ("count", "totalCount", "num_tables"):
        call = ExploredCall(
            index=0,
            session=0,
            tool="list_tables",
            arguments={"schema": "main"},
            text=json.dumps({"tables": tables, total: 3}),
        )
        found = [t for seed in range(4) for t in candidates(Exploration(calls=[call]), {}, seed=seed)]
        counted = [t for t in found if t.metadata["kind"] == "count"]
        assert counted and all(t.answer == 3 and "how many" in t.task.lower() for t in counted), found
        assert not any(t.metadata.get("field") == total.lower() for t in found), [t.task for t in found]
    # (... and so is a statement's count beside its rows, two objects deep: dbhub's `execute_sql`)
    query = "SELECT name FROM pragma_table_info('department')"
    rows = [{"name": "dept_no"}, {"name": "dept_name"}]
    reply = {"success": True, "data": {"statements": [{"sql": query, "rows": rows, "count": 2}], "source_id": "x"}}
    call = ExploredCall(index=0, session=0, tool="execute_sql", arguments={"sql": query}, text=json.dumps(reply))
    found = [t for seed in range(4) for t in candidates(Exploration(calls=[call]), {}, seed=seed)]
    assert any(t.metadata["kind"] == "count" and t.answer == 2 for t in found), [t.task for t in found]
    assert not any(t.metadata.get("field") == "count" for t in found), [t.task for t in found]
    # (and its replay, listing as many, gives the count: a count is in no text, so it came back by none)
    from mcprl.scenarios.replay import gives_answer

    counted = [t for t in found if t.metadata["kind"] == "count"]
    assert all(gives_answer(t, json.dumps(reply)) for t in counted)
    fewer = {**reply, "data": {"statements": [{"sql": query, "rows": rows[:1], "count": 1}], "source_id": "x"}}
    assert not any(gives_answer(t, json.dumps(fewer)) for t in counted)
    # (a number that only happens to equal how many records there are, in what no key or query names, counts nothing:
    # mcp-text-editor's three ranges of a file of 3 lines, "How many text file contents ... are there?" -> 3)
    ranges = [{"content": f"line {i}\n", "start_line": i, "total_lines": 3} for i in (1, 2, 3)]
    read = ExploredCall(
        index=0,
        session=0,
        tool="get_text_file_contents",
        arguments={"file_path": "/srv/a.txt", "ranges": [{"start": i} for i in (1, 2, 3)]},
        text=json.dumps({"/srv/a.txt": {"ranges": ranges, "file_hash": "54506a1e" * 8}}),
    )
    found = [t for seed in range(4) for t in candidates(Exploration(calls=[read]), {}, seed=seed)]
    assert not any(t.metadata["kind"] == "count" for t in found), [t.task for t in found]


def test_a_field_that_is_what_the_call_gives_is_asked_as_that():
    """mcp-text-editor's `get_text_file_contents` gives each range's "content": asked as "What is the content of the
    text file contents for ...?". A field that is the thing the call gives, in the singular or the plural, is asked
    as the call's value."""
    from mcprl.scenarios.candidates import candidates
    from mcprl.scenarios.explored import Exploration, ExploredCall

    line = {"content": "second line\n", "start_line": 2, "end_line": 2, "total_lines": 5, "content_size": 12}
    ranges = {"ranges": [{**line, "range_hash": "d34c8645" * 8}]}
    call = ExploredCall(
        index=0,
        session=0,
        tool="get_text_file_contents",
        arguments={"files": [{"file_path": "/srv/a.txt", "ranges": [{"start": 2, "end": 3}]}]},
        text=json.dumps({"/srv/a.txt": {**ranges, "file_hash": "54506a1e" * 8}}),
    )
    found = [t for seed in range(16) for t in candidates(Exploration(calls=[call]), {}, seed=seed)]
    asked = [t.task for t in found if t.answer == "second line\n"]
    assert asked and not any(re.search(r"\bcontent of|its content\b", t) for t in asked), asked


def test_what_every_tool_of_the_server_says_alike_and_times_in_seconds_answer_nothing():
    """excel-tools-mcp says `"backend": "openpyxl"` in every reply, whatever it was asked ("Inspect excel ... and
    tell me the backend."), and each tool's one word of success; mcp-server-tree-sitter gives times as seconds since
    1970 ("What is the last scan time of the project ...?" -> 1796218191), and a sheet's pattern of merged cells as
    "___". None of these answers a task; what differs with what was asked still does."""
    from mcprl.scenarios.candidates import candidates
    from mcprl.scenarios.explored import Exploration, ExploredCall

    def reply(said: str, **fields: object) -> str:
        return json.dumps({"status": True, "status_message": said, "tool_result": {**fields, "backend": "openpyxl"}})

    calls = [
        ExploredCall(
            index=0,
            session=0,
            tool="excel_inspect",
            arguments={"file_path": "/srv/shop.xlsx"},
            text=reply("检查成功", file_size_bytes=5592, sheet_count=2, modified=1796214252.86),
        ),
        *(
            ExploredCall(
                index=i,
                session=0,
                tool="excel_profile_structure",
                arguments={"file_path": "/srv/shop.xlsx", "sheet": sheet},
                text=reply("分析成功", sheet=sheet, total_rows_in_sheet=rows, merged="___", last_scan_time=1796218191),
            )
            for i, (sheet, rows) in enumerate((("Orders", 5), ("Staff", 4)), start=1)
        ),
    ]
    found = [t for seed in range(8) for t in candidates(Exploration(calls=calls), {}, seed=seed)]
    answers = {str(t.answer) for t in found}
    unasked = {"openpyxl", "检查成功", "分析成功", "___", "1796218191", "1796214252.86"}
    assert not answers & unasked, [(t.task, t.answer) for t in found]
    assert {"5592", "5", "4"} & answers, [(t.task, t.answer) for t in found]
    # (where a tool answers without it, the one value is a fact some tools say: the one backend may be asked for)
    other = ExploredCall(index=3, session=0, tool="excel_sheets", arguments={}, text='["Orders", "Staff"]')
    found = [t for seed in range(8) for t in candidates(Exploration(calls=[*calls, other]), {}, seed=seed)]
    assert "openpyxl" in {str(t.answer) for t in found}


def test_a_value_a_result_labelled_as_something_else_is_never_said_as_the_previous_result():
    """csv-mcp-server's `health_check` said "max_sessions": 100, which exploring sent on as a session id: "Check
    health. Then load csv ... with session id the previous result." A value a result labelled neither as a name,
    an id or a path nor as the parameter's kind of thing is never "the previous result"; one it labelled so is."""
    from mcprl.scenarios.candidates import candidates
    from mcprl.scenarios.explored import Exploration, ExploredCall

    def tasks(first: dict, sent: object) -> list:
        calls = [
            ExploredCall(index=0, session=0, tool="health_check", arguments={}, text=json.dumps(first)),
            ExploredCall(
                index=1,
                session=0,
                tool="get_session_info",
                arguments={"session_id": sent},
                text=json.dumps({"rows": 3, "columns": 2, "created": "2024-03-01"}),
                sources={"session_id": "result:0"},
                parents=[0],
            ),
        ]
        exploration = Exploration(calls=calls, handles=["session_id"])  # (a session's id: never stated)
        found = [t for seed in range(4) for t in candidates(exploration, {}, seed=seed)]
        return [t for t in found if len(t.reference) == 2]

    assert not tasks({"status": "healthy", "max_sessions": 100, "uptime_seconds": 42}, 100)
    for labelled in ({"status": "healthy", "session_id": "s-91"}, {"status": "healthy", "id": "s-91"}):
        chained = tasks(labelled, "s-91")
        assert chained and all("the previous result" in t.task for t in chained), [t.task for t in chained]


def test_a_listings_record_asked_for_by_its_name_is_called_what_the_tool_calls_each_record_never_the_whole():
    """excel-mcp-server's `read_range` gives a range's rows: "What are the hours of the range "Ann Lee"?" called a
    row by the whole it is part of. A record asked for by its name is called what the tool's name calls each record
    (`list_members`: "the member "Ann Lee""), else by the call that gave it, never by a noun the
    tool's name gives in the singular."""
    from mcprl.scenarios.candidates import candidates
    from mcprl.scenarios.explored import Exploration, ExploredCall

    rows = [["name", "team", "hours"], ["Ann Lee", "Engineering", 38], ["Bob Stone", "Support", 35]]
    rows += [["Carla Diaz", "Sales", 31]]
    text = json.dumps({"range": "A1:C4", "values": rows})

    def tasks(tool: str) -> list:
        call = ExploredCall(index=0, session=0, tool=tool, arguments={}, text=text)
        found = [t for seed in range(12) for t in candidates(Exploration(calls=[call]), {}, seed=seed)]
        return [t for t in found if t.metadata.get("field") in ("team", "hours")]

    whole = tasks("read_range")
    assert whole and not any(re.search(r"\brange\W+\"?(Ann|Bob|Carla)", t.task) for t in whole), [t.task for t in whole]
    each = tasks("list_members")
    assert any(re.search(r"\bmember \"(Ann Lee|Bob Stone|Carla Diaz)\"", t.task) for t in each), [t.task for t in each]


def test_a_path_the_server_named_a_thing_by_is_that_things_name_and_one_a_call_made_up_is_not():
    """mcp-server-tree-sitter's `register_project_tool` sent a path and no `name` names the project by the path
    ("name": "/srv/repo"): every task on the project (`project` "/srv/repo") was dropped as stating a path where
    none is asked for, and the server grounded 7 tasks instead of 14. A path the server itself named a thing by,
    where the write that made it was sent no name, is that thing's name; a path a call was sent as a name
    (`create_entities` of "/srv/memory.jsonl") still grounds nothing."""
    from mcprl.scenarios.candidates import candidates
    from mcprl.scenarios.explored import Exploration

    def tasks(register: dict, registered: str) -> list:
        calls = [
            ExploredCall(
                index=0,
                session=0,
                tool="register_project",
                arguments=register,
                text=json.dumps({"name": registered, "root_path": "/srv/repo"}),
                writes=True,
            ),
            ExploredCall(
                index=1,
                session=0,
                tool="get_file_metadata",
                arguments={"project": registered, "path": "app.py"},
                text=json.dumps({"path": "app.py", "size": 72, "line_count": 2}),
                sources={"project": "result:0"},
                parents=[0],
            ),
        ]
        found = [t for seed in range(4) for t in candidates(Exploration(calls=calls, isolated=True), {}, seed=seed)]
        return [t for t in found if t.reference[-1].tool == "get_file_metadata"]

    assert tasks({"path": "/srv/repo"}, "/srv/repo")  # (the server named it)
    named = tasks({"path": "/srv/repo", "name": "Weekly report"}, "Weekly report")
    # (and a record a tool gives metadata of is called the thing it is about: "the file "app.py"", never "the
    # metadata "app.py"")
    assert named and not any(re.search(r"\bmetadata \"", t.task) for t in named), [t.task for t in named]
    assert not tasks({"path": "/srv/repo", "name": "/srv/memory.jsonl"}, "/srv/memory.jsonl")  # (a made-up name)


def test_a_search_is_asked_where_it_found_what_it_was_sent_where_that_place_varies():
    """excel-mcp-server's `find_cells` answers where it found a value (`{"matches": {"Staff": {"C2": 38}}}`): the
    address is a key, no field a task asked for, so the tool grounded nothing. Where two calls of a tool found what
    they were sent at one place in the result under different keys, the tool (named for the things it finds) is
    asked which one holds the value, the key the answer, never stated; a record that holds a value it was sent under
    the same field each time (a customer found by name), or records of a list found by different fields of theirs
    (an entity by its name, another by its type), are asked no such thing."""
    from mcprl.checks import holds_answer
    from mcprl.scenarios.candidates import candidates
    from mcprl.scenarios.explored import Exploration

    def call(index: int, tool: str, query: object, result: dict) -> ExploredCall:
        arguments = {"path": "/srv/shop.xlsx", "query": query}
        return ExploredCall(index=index, session=index, tool=tool, arguments=arguments, text=json.dumps(result))

    calls = [
        call(0, "find_cells", 38, {"matches": {"Staff": {"C2": 38}}}),
        call(1, "find_cells", "Ben", {"matches": {"Orders": {"D3": "Ben"}}}),
        call(2, "find_customers", "Ben", {"found": {"customer": "Ben", "orders": 2}}),
        call(3, "find_customers", "Ada", {"found": {"customer": "Ada", "orders": 5}}),
        # (server-memory's search: each entity found by another of its fields, the fields of a list's records)
        call(4, "search_nodes", "event", {"entities": [{"name": "Tax return", "entityType": "event"}]}),
        call(5, "search_nodes", "Tax return", {"entities": [{"name": "Tax return", "entityType": "event"}]}),
    ]
    found = [t for seed in range(4) for t in candidates(Exploration(calls=calls), {}, seed=seed)]
    cells = {(t.task, t.answer) for t in found if t.reference[-1].tool == "find_cells"}
    assert {answer for _, answer in cells} == {"C2", "D3"}, cells
    assert all("cell holds" in task and not holds_answer(task, answer) for task, answer in cells), cells
    assert not any(t.answer in ("customer", "query", "name", "entityType") for t in found), [
        (t.task, t.answer) for t in found
    ]


def test_a_record_a_listing_of_one_holds_is_asked_only_for_its_own_fields():
    """dbhub's `search_objects` gives `{"data": {"count": 1, "results": [{"name": "PRIMARY", ...}]}}`: "What is the
    count of the object "PRIMARY"?" asked the listing's count of the one index in it. A record named by its name is
    asked only for what it holds; what the listing around it holds is asked of the call."""
    from mcprl.scenarios.candidates import candidates
    from mcprl.scenarios.explored import Exploration

    results = [{"name": "PRIMARY", "table": "employee", "schema": "main"}]
    text = json.dumps({"success": True, "data": {"object_type": "index", "count": 1, "results": results}})
    call = ExploredCall(index=0, session=0, tool="search_objects", arguments={"object_type": "index"}, text=text)
    found = [t for seed in range(12) for t in candidates(Exploration(calls=[call]), {}, seed=seed)]
    named = [t for t in found if '"PRIMARY"' in t.task]
    assert named and all(t.answer in ("employee", "main") for t in named), [(t.task, t.answer) for t in named]
    assert any(t.answer == 1 for t in found), [t.task for t in found]


def test_a_name_searches_by_its_parts_found_is_asked_for_and_a_reply_saying_back_one_value_sent_is_not():
    """mcp-server-obsidian's search finds "Garden plan.md" by "Garden" and by "plan": each request held a part of
    the answer, another each time, so it is what they matched, asked for without being stated. mcp-pandas' plots
    answer "Generated bar plot" to every plot of kind "bar", whatever its title: the one value it says back is the
    request's, no fact to ask for."""
    from mcprl.checks import holds_answer
    from mcprl.scenarios.candidates import candidates
    from mcprl.scenarios.explored import Exploration

    def call(index: int, tool: str, arguments: dict, text: str) -> ExploredCall:
        return ExploredCall(index=index, session=index, tool=tool, arguments=arguments, text=text)

    found = [
        call(0, "search_notes", {"query": "Garden"}, "Garden plan.md"),
        call(1, "search_notes", {"query": "plan"}, "Garden plan.md"),
        call(2, "search_notes", {"query": "Shopping"}, "Shopping list.md"),
    ]
    plots = [
        call(3 + i, "plot", {"kind": kind, "title": title}, f"Generated {kind} plot")
        for i, (kind, title) in enumerate(
            [("bar", "Weekly report"), ("bar", "Team meeting"), ("bar", "Garden plan"), ("line", "Tax return")]
        )
    ]
    tasks = [t for seed in range(3) for t in candidates(Exploration(calls=found + plots), {}, seed=seed)]
    searched = {t.answer for t in tasks if t.reference[-1].tool == "search_notes"}
    assert searched == {"Garden plan.md"}, [(t.task, t.answer) for t in tasks]
    assert not any(holds_answer(t.task, t.answer) for t in tasks)
    assert not [t for t in tasks if t.reference[-1].tool == "plot"], [(t.task, t.answer) for t in tasks]


def test_a_notes_front_matter_is_one_record_with_its_note_and_records_between_rules_stay_apart():
    """A Markdown note's front matter (`key: value` lines between rules at its start, or after the line naming the
    note) is the note's fields: one record with its body, asked of by the call that read it. Files read at once, each
    under its name, and records of fields between rules stay a record each."""
    from mcprl.scenarios.candidates import candidates
    from mcprl.scenarios.explored import Exploration
    from mcprl.scenarios.results import result_records

    note = "---\nstatus: active\nowner: Dana\n---\n# Apollo\n\nLaunch review on Friday.\n"
    assert result_records(note, None) == [
        [("status", "active"), ("owner", "Dana"), ("", "# Apollo"), ("", "Launch review on Friday.")]
    ]
    assert len(result_records(f"Apollo.md:\n{note}", None)) == 1
    assert len(result_records("Results:\n---\nname: x\n---\nname: y", None)) == 3
    assert len(result_records("a.txt:\nsize: 44\n---\nb.txt:\nsize: 340", None)) == 2
    call = ExploredCall(index=0, session=0, tool="read_note", arguments={"path": "Apollo.md"}, text=note)
    asked = {t.answer for seed in range(3) for t in candidates(Exploration(calls=[call]), {}, seed=seed)}
    assert asked == {"active", "Dana"}, asked


def test_one_folder_listed_by_other_names_is_one_thing_not_three():
    """mcp-server-filesystem's `list_directory_with_sizes` of one folder, called with its path, with "." and sorted by
    size: "Combined size: 50 B" held by three calls read as a constant (the server's, said of anything) and the tool
    grounded nothing. Calls that gave the same record of several fields, whole, asked for one thing; a reply of one
    field every call gave ("Insight added") is still no answer."""
    from mcprl.scenarios.candidates import candidates
    from mcprl.scenarios.explored import Exploration

    rows = ["[FILE] notes.md      28 B", "[FILE] parts.csv      22 B", "[DIR] sub"]
    listing = "\n".join([*rows, "", "Total: 2 files, 1 directories", "Combined size: 50 B"])
    by_size = "\n".join([rows[2], *rows[:2], "", "Total: 2 files, 1 directories", "Combined size: 50 B"])
    asked = [({"path": "/srv/files"}, listing), ({"path": "."}, listing), ({"path": ".", "sortBy": "size"}, by_size)]
    calls = [
        ExploredCall(index=i, session=i, tool="list_directory_with_sizes", arguments=args, text=text)
        for i, (args, text) in enumerate(asked)
    ]
    tasks = candidates(Exploration(calls=calls), {}, seed=0)
    assert 50 in {t.answer for t in tasks}, [(t.task, t.answer) for t in tasks]
    stock = [
        ExploredCall(index=i, session=i, tool="add_insight", arguments={"text": f"note {i}"}, text="Insight added")
        for i in range(3)
    ]
    assert candidates(Exploration(calls=stock), {}, seed=0) == []


def test_a_value_that_is_a_word_of_a_longer_one_the_call_was_sent_is_no_echo():
    """A tree of the folder "/srv/files" says each entry's type, "file": read as said back (it was inside what the
    call was sent, as letters), it grounded nothing, where the same tree of "/srv/docs" did. As words it is not."""
    from mcprl.scenarios.candidates import candidates
    from mcprl.scenarios.explored import Exploration

    tree = json.dumps([{"name": "notes.md", "type": "file"}, {"name": "sub", "type": "directory", "children": []}])
    for folder in ("/srv/docs", "/srv/files"):
        call = ExploredCall(index=0, session=0, tool="directory_tree", arguments={"path": folder}, text=tree)
        tasks = candidates(Exploration(calls=[call]), {}, seed=0)
        assert "file" in {t.answer for t in tasks}, (folder, [(t.task, t.answer) for t in tasks])


def test_a_field_that_says_again_what_went_wrong_is_no_answer():
    """mcp-json-yaml-toml's `constraint_validate` says what is wrong with a value under `error`, and again under
    `hint` with a suggestion after it: "Validate constraint ... What is the hint?" -> "Unknown constraint: ...". A
    field that opens with the record's error text is that text; the record's other fields are still asked."""
    from mcprl.scenarios.candidates import candidates
    from mcprl.scenarios.explored import Exploration

    checks = [
        ("CONFIG_FORMAT", "yml", "json", "format"),
        ("YQ_PATH", "users", ".users", "path"),
        ("INT", "4x", "4", "integer"),
    ]
    calls = [
        ExploredCall(
            index=i,
            session=0,
            tool="constraint_validate",
            arguments={"constraint_name": name, "value": value},
            text=json.dumps(
                {
                    "valid": False,
                    "value": value,
                    "error": f"Not a valid {kind}",
                    "hint": f"Not a valid {kind}. Try: {fix}",
                    "suggestion": fix,
                }
            ),
        )
        for i, (name, value, fix, kind) in enumerate(checks)
    ]
    tasks = candidates(Exploration(calls=calls), {}, seed=0)
    assert not any("Not a valid" in str(t.answer) for t in tasks), [(t.task, t.answer) for t in tasks]
    assert {t.answer for t in tasks} & {"json", ".users", 4}, [(t.task, t.answer) for t in tasks]


def test_the_cells_a_search_of_a_workbook_matched_are_asked_for_by_their_addresses():
    """excel-mcp-server's `find_cells` answers a map of sheets to cells to values (`{"matches": {"Staff": {"B3": "dev",
    "A5": "Dev"}}}`): its keys are addresses, no field a task could ask for, and the tool grounded nothing. The cells
    it matched are what it lists; a map keyed by words is not read so."""
    from mcprl.scenarios.candidates import candidates
    from mcprl.scenarios.explored import Exploration

    def tasks(found: dict) -> list:
        text = json.dumps({"matches": {"Staff": found}})
        call = ExploredCall(
            index=0, session=0, tool="find_cells", arguments={"path": "/srv/office.xlsx", "query": "dev"}, text=text
        )
        return candidates(Exploration(calls=[call]), {}, seed=0)

    (listing,) = [t for t in tasks({"B3": "dev", "B4": "dev", "A5": "Dev"}) if t.metadata["kind"] == "listing"]
    assert sorted(listing.answer) == ["A5", "B3", "B4"] and not any(c in listing.task for c in listing.answer)
    assert not [t for t in tasks({"team": "dev", "name": "Dev", "role": "dev"}) if t.metadata["kind"] == "listing"]


def test_a_tool_saying_its_own_name_a_heading_or_that_it_found_nothing_grounds_no_answer_of_it():
    """mcp-memory-keeper's replies: `"operation": "context_get_related"` (the tool's own name: "tell me its operation"),
    `"message": "No relationships found for this item"` and a summary that is its heading alone ("# Context Summary"):
    none is something a person asks for. The record's other fields still are."""
    from mcprl.scenarios.candidates import candidates
    from mcprl.scenarios.explored import Exploration

    related = [
        ExploredCall(
            index=i,
            session=0,
            tool="get_related",
            arguments={"key": key},
            text=json.dumps(
                {
                    "operation": "get_related",
                    "key": key,
                    "owner": owner,
                    "related": {"outgoing": [], "incoming": []},
                    "message": "No relationships found for this item",
                }
            ),
        )
        for i, (key, owner) in enumerate([("k-101", "Dana"), ("k-102", "Sam")])
    ]
    summary = ExploredCall(index=2, session=0, tool="summarize", arguments={}, text="# Context Summary\n\n")
    tasks = [t for seed in range(3) for t in candidates(Exploration(calls=[*related, summary]), {}, seed=seed)]
    asked = {(t.task, str(t.answer)) for t in tasks}
    assert not [a for a in asked if a[1] in ("get_related", "No relationships found for this item")], asked
    assert not [a for a in asked if "Summary" in a[1]], asked
    assert {"Dana", "Sam"} & {a[1] for a in asked}, asked


def test_a_listing_whose_lines_open_with_a_date_is_no_listing_of_things_named_by_it():
    """mcp-memory-keeper lists sessions, each opening "Created: <date>": "What is the branch of the latest created?"
    took the participle for what each line is. A state is no kind of thing; the lines are asked of by their place."""
    from mcprl.scenarios.candidates import candidates
    from mcprl.scenarios.explored import Exploration

    text = (
        "Recent sessions:\n\n• Planning (26b2dc32)\n  Created: 2026-12-05T07:08:51.881Z\n  Items: 4\n  Branch: main\n\n"
        "• Review (a1b2c3d4)\n  Created: 2026-12-04T07:08:51.881Z\n  Items: 2\n  Branch: dev"
    )
    call = ExploredCall(index=0, session=0, tool="session_list", arguments={}, text=text)
    tasks = [t.task for seed in range(6) for t in candidates(Exploration(calls=[call]), {}, seed=seed)]
    assert any(re.search(r"\bof the (latest|earliest) one\b", t) for t in tasks), tasks
    assert not [t for t in tasks if re.search(r"\b(the|latest|earliest) created\b", t)], tasks


def test_a_number_of_things_a_record_has_is_asked_how_many():
    """mcp-server-sqlite's novels: "What are the pages of the novel "Middlemarch"?" -> 880. A field that names things
    in the plural, holding a whole number, is asked how many; one in the singular stays asked as what it is."""
    from mcprl.scenarios.candidates import candidates
    from mcprl.scenarios.explored import Exploration

    novels = [
        {"title": "Middlemarch", "year": 1871, "pages": 880, "permissions": 644},
        {"title": "Kindred", "year": 1979, "pages": 264, "permissions": 600},
    ]
    call = ExploredCall(index=0, session=0, tool="list_novels", arguments={}, text=json.dumps(novels))
    tasks = {(t.task, t.answer) for seed in range(8) for t in candidates(Exploration(calls=[call]), {}, seed=seed)}
    pages = [task for task, answer in tasks if answer in (880, 264)]
    years = [task for task, answer in tasks if answer in (1871, 1979)]
    assert pages and all(task.startswith("How many pages does") for task in pages), tasks
    assert years and not [task for task in years if "How many" in task], tasks
    # (a plural whose number is a code, a file's mode, is no count)
    assert not [task for task, answer in tasks if answer in (644, 600) and "How many" in task], tasks


def test_a_call_made_in_three_sessions_is_one_thing_asked_of_not_a_constant_said_of_three():
    """server-everything's `get-env` takes nothing and was read in four sessions, each of its own home folder: its
    record differed every time, and each other field ("SHELL": "/bin/bash"), one value over what looked like four
    things, was taken for a constant of the server: no task. One call made again is one thing asked of."""
    from mcprl.scenarios.candidates import candidates
    from mcprl.scenarios.explored import Exploration

    calls = [
        ExploredCall(
            index=i,
            session=i,
            tool="get_env",
            arguments={},
            text=json.dumps({"HOME": f"/srv/home-{i}", "SHELL": "/bin/bash", "TERM": "xterm"}),
        )
        for i in range(4)
    ]
    asked = {t.answer for seed in range(4) for t in candidates(Exploration(calls=calls), {}, seed=seed)}
    assert {"/bin/bash", "xterm"} & asked, asked


def test_a_plain_table_under_a_rule_is_read_as_rows_and_a_bulleted_item_as_the_item():
    """mcp-sqlalchemy prints a query's result as a database's client does, a header, a rule of dashes and rows
    ("Sample data from orders (limit 10):\n\nid, product, qty\n---------\n1, notebook, 3"), and lists tables as bullets
    ("- customers"): its data tools grounded nothing, and `list_tables` gave "- customers" to send as a table's
    name. The rows are records under the header's names (divided by commas, "|" or runs of spaces; one column too),
    a bulleted item is the item; a line naming what follows, fields between rules and parts rules divide are no
    table."""
    from mcprl.scenarios.candidates import candidates
    from mcprl.scenarios.explored import Exploration
    from mcprl.scenarios.results import result_records, result_values

    sample = "Sample data from orders (limit 10):\n\nid, product, qty\n----------------\n1, notebook, 3\n2, pen, 10"
    assert result_records(sample, None) == [
        [("id", "1"), ("product", "notebook"), ("qty", "3")],
        [("id", "2"), ("product", "pen"), ("qty", "10")],
    ]
    assert result_records("Query executed successfully. 1 rows returned.\n\nMAX(qty)\n--------\n10", None) == [
        [("MAX(qty)", "10")]
    ]
    assert result_records(" id | name\n----+------\n  1 | Ada\n  2 | Bob\n(2 rows)", None)[1] == [
        ("id", "2"),
        ("name", "Bob"),
    ]
    assert result_records("name      qty\n----      ---\napple     3", None) == [[("name", "apple"), ("qty", "3")]]
    for text in ("Apollo.md:\n---\nstatus: active\n---\n# Apollo", "a.md\n---\nb.md\n---\nc.md", "size: 44\n---\nb"):
        assert all(k != text.partition("\n")[0] for r in result_records(text, None) for k, _ in r), text
    assert result_values("Tables in schema 'main':\n- customers\n- orders", None)[1:] == [
        ("", "customers"),
        ("", "orders"),
    ]
    call = ExploredCall(index=0, session=0, tool="get_table_data", arguments={"table_name": "orders"}, text=sample)
    tasks = candidates(Exploration(calls=[call]), {}, seed=0)
    assert tasks and {t.answer for t in tasks} <= {1, 2, 3, 10, "notebook", "pen"}, [(t.task, t.answer) for t in tasks]


def test_a_field_given_a_data_type_is_asked_for_its_type():
    """mcp-sqlalchemy's `describe_table` lists a table's columns as "- price: REAL": a task asked "Describe table
    products and tell me the price." -> REAL, which no price is, and 'What is the stock of the table "TEXT"?' of its
    "- name: TEXT". A field whose value names a data type is asked for its type, and a type names no record."""
    from mcprl.scenarios.candidates import candidates
    from mcprl.scenarios.explored import Exploration
    from mcprl.scenarios.lexicon import data_type

    assert data_type("REAL") and data_type("VARCHAR(255)") and data_type("string")
    assert not data_type("Real Madrid") and not data_type(3) and not data_type("apple")
    text = "Table: products\n\nColumns:\n- id (PK): INTEGER\n- name: TEXT\n- price: REAL\n- stock: INTEGER"
    calls = [
        ExploredCall(index=i, session=i, tool="describe_table", arguments={"table_name": t}, text=text)
        for i, t in enumerate(["products", "items"])
    ]
    every = candidates(Exploration(calls=calls), {}, seed=0)
    tasks = [t for t in every if data_type(t.answer)]
    assert tasks
    for t in tasks:
        assert re.search(r"\btypes? of\b", t.task), (t.task, t.answer)
    # (a person's field's type is no person: "Who is the type of customer?")
    from mcprl.scenarios.lexicon import who

    assert (who("type of customer"), who("customer"), who("email from")) == ("What", "Who", "What")
    # nor is a type a record's name ("- name: TEXT": 'What is the stock of the table "TEXT"?')
    assert not [t.task for t in every if re.search(r'"(?:TEXT|INTEGER|REAL)"', t.task)]


def test_a_table_given_as_its_columns_beside_its_rows_is_read_as_records():
    """mcp-server-motherduck answers a query as its columns' names beside its rows, their types and count
    (`{"columns": ["name"], "columnTypes": ["VARCHAR"], "rows": [["id"], ["customer"]], "rowCount": 2}`): tasks asked
    "What is the type of column types of the columns of the orders table?" -> VARCHAR, the result's form. The rows are
    records under the columns' names, and the types no record's field."""
    import json

    from mcprl.scenarios.candidates import candidates
    from mcprl.scenarios.explored import Exploration
    from mcprl.scenarios.results import result_records

    result = {
        "success": True,
        "columns": ["id", "name", "price"],
        "columnTypes": ["INTEGER", "VARCHAR", "DOUBLE"],
        "rows": [[1, "apple", 0.5], [2, "pear", 0.75]],
        "rowCount": 2,
    }
    text = json.dumps(result, indent=2)
    assert result_records(text, None) == [
        [("id", 1), ("name", "apple"), ("price", 0.5)],
        [("id", 2), ("name", "pear"), ("price", 0.75)],
    ]
    call = ExploredCall(
        index=0, session=0, tool="execute_query", arguments={"sql": "SELECT * FROM products LIMIT 5"}, text=text
    )
    tasks = [t for seed in range(4) for t in candidates(Exploration(calls=[call]), {}, seed=seed)]
    assert tasks and {t.answer for t in tasks} <= {1, 2, 0.5, 0.75, "apple", "pear"}, [
        (t.task, t.answer) for t in tasks
    ]


def test_a_table_whose_columns_are_records_beside_its_rows_is_read_as_records():
    """beancount-mcp answers a query with its columns as records (`{"columns": [{"name": "date", "type":
    "datetime.date"}, ...], "rows": [["2024-01-05", "Coffee"]]}`): its tasks asked only "What is the type of the column
    narration?" -> builtins.str, the result's form, never a posting. The rows are records under the columns' names."""
    from mcprl.scenarios.candidates import candidates
    from mcprl.scenarios.explored import Exploration
    from mcprl.scenarios.results import result_records

    columns = [{"name": "date", "type": "datetime.date"}, {"name": "narration", "type": "builtins.str"}]
    rows = [["2024-01-05", "Coffee at the station"], ["2024-01-09", "Train to Porto"]]
    text = json.dumps({"columns": columns, "rows": rows})
    assert result_records(text, None) == [
        [("date", "2024-01-05"), ("narration", "Coffee at the station")],
        [("date", "2024-01-09"), ("narration", "Train to Porto")],
    ]
    call = ExploredCall(
        index=0, session=0, tool="beancount_query", arguments={"query": "SELECT * FROM postings LIMIT 5"}, text=text
    )
    tasks = [t for seed in range(4) for t in candidates(Exploration(calls=[call]), {}, seed=seed)]
    assert tasks and {t.answer for t in tasks} <= {v for row in rows for v in row}, [(t.task, t.answer) for t in tasks]


def test_the_one_row_a_limited_query_gave_is_asked_as_one_row_of_its_table():
    """mcp-server-motherduck answered `SELECT * FROM products LIMIT 1` (a number of a known query varied) with one
    row: "What is the price of the rows of the products table?" asked the table's price, which the row that came
    first alone gave. The rows of a query that lists a table's rows are some of them, however many came back: each is
    picked out by a field of its own, as a listing's line is."""
    from mcprl.scenarios.candidates import candidates
    from mcprl.scenarios.explored import Exploration

    columns = ["id", "name", "price", "stock"]
    text = json.dumps({"success": True, "columns": columns, "rows": [[1, "apple", 0.5, 120]], "rowCount": 1})
    call = ExploredCall(
        index=0, session=0, tool="execute_query", arguments={"sql": "SELECT * FROM products LIMIT 1"}, text=text
    )
    found = [t for seed in range(12) for t in candidates(Exploration(calls=[call]), {}, seed=seed)]
    assert found
    for t in found:  # each names its row: by a value of another field of its own
        assert any(str(v).lower() in t.task.lower() for v in (1, "apple", 0.5, 120) if v != t.answer), t.task
        assert "rows of" not in t.task, t.task


def test_a_word_of_a_result_sent_on_is_never_asked_as_the_previous_result():
    """mcp-obsidian's search for "." listed three notes; "list", a word of "/Reading list.md", was then searched
    for, and "Reading", a word of what that found: "Search notes with query ".". Then search notes with query the
    previous result" asked for a search by the three paths. A value taken as a part of a result is no "previous
    result"; a value made of one (an expression over the number the call before gave) is."""
    from mcprl.scenarios.candidates import candidates
    from mcprl.scenarios.explored import Exploration

    def call(index: int, tool: str, arguments: dict, text: str, parent: int | None = None) -> ExploredCall:
        (key,) = arguments
        source, parents = ("probe", []) if parent is None else (f"result:{parent}", [parent])
        return ExploredCall(
            index=index,
            session=index // 3,
            tool=tool,
            arguments=arguments,
            sources={key: source},
            parents=parents,
            text=text,
        )

    calls = [
        call(0, "search_notes", {"query": "."}, "/Daily/2024-03-01.md\n/Projects/Garden.md\n/Reading list.md"),
        call(1, "search_notes", {"query": "list"}, "/Reading list.md", parent=0),
        call(2, "search_notes", {"query": "Reading"}, "/Reading list.md", parent=1),
        call(3, "calculate", {"expression": "18.5 * 10"}, "185.0"),
        call(4, "calculate", {"expression": "185.0 - 3"}, "182.0", parent=3),
    ]
    found = [t for seed in range(6) for t in candidates(Exploration(calls=calls), {}, seed=seed)]
    assert not any("previous result" in t.task for t in found if t.reference[0].tool == "search_notes"), [
        t.task for t in found
    ]
    assert any(len(t.reference) == 2 for t in found if t.reference[0].tool == "calculate"), [t.task for t in found]


def test_a_date_a_thing_was_done_on_is_asked_when_it_was_done():
    """office-word-mcp-server's `get_document_info` gives `{"created": "2013-12-23", "modified": ...}`: asked "What
    is the modified of the document ...?" and "tell me its created". A field a participle names whose value is a
    date is asked when the thing was so ("When was ... created?"), its answer the date; one that is no date is not."""
    from mcprl.scenarios.candidates import candidates
    from mcprl.scenarios.explored import Exploration, ExploredCall

    info = {"title": "Quarterly Report", "created": "2013-12-23", "modified": "2014-01-05", "word_count": 24}
    call = ExploredCall(
        index=0, session=0, tool="get_document_info", arguments={"filename": "report.docx"}, text=json.dumps(info)
    )
    tasks = candidates(Exploration(calls=[call]), {}, seed=0)
    dated = [t for t in tasks if t.answer in ("2013-12-23", "2014-01-05")]
    assert dated, [t.task for t in tasks]
    for task in dated:
        field = "created" if task.answer == "2013-12-23" else "modified"
        assert task.task.startswith("When was") and task.task.rstrip("?").endswith(field), task.task
    assert not any(re.search(r"\b(?:the|its) (?:created|modified)\b", t.task) for t in tasks), [t.task for t in tasks]


def test_a_name_that_ends_in_a_number_is_answered_whole():
    """office-word-mcp-server's outline: `{"text": "Staff", "style": "Heading 1"}` asked "what is the style of the
    paragraph whose text is Staff?" -> 1. A value that is a word and then a number names a thing (a style, a room): its
    answer is the whole (a number with its unit is still the number: "37 units", tested above)."""
    from mcprl.scenarios.candidates import candidates
    from mcprl.scenarios.explored import Exploration, ExploredCall

    outline = {
        "paragraphs": [
            {"index": 0, "text": "Quarterly Report", "style": "Title"},
            {"index": 1, "text": "Staff", "style": "Heading 1"},
        ]
    }
    call = ExploredCall(
        index=0, session=0, tool="get_document_outline", arguments={"filename": "a.docx"}, text=json.dumps(outline)
    )
    answers = {t.answer for t in candidates(Exploration(calls=[call]), {}, seed=0)}
    assert "Heading 1" in answers and 1 not in answers, answers


def test_a_value_listed_under_a_plural_is_no_count_of_them():
    """excel-mcp-server's `read_range` of one cell, `{"range": "B2", "values": [[40000]]}`, was asked "How many values
    in the range B2 ...?" -> 40000: a number a list holds is one of its items, not how many there are; a number
    under a plural of its own still is one (`"pages": 880`)."""
    from mcprl.scenarios.candidates import candidates
    from mcprl.scenarios.explored import Exploration

    def tasks(result: dict) -> list[Scenario]:
        call = ExploredCall(
            index=0, session=0, tool="read_range", arguments={"path": "a.xlsx", "range": "B2"}, text=json.dumps(result)
        )
        return [t for seed in range(4) for t in candidates(Exploration(calls=[call]), {}, seed=seed)]

    listed = tasks({"range": "B2", "values": [[40000]]})
    assert listed and not any(t.task.startswith("How many") and t.answer == 40000 for t in listed), [
        (t.task, t.answer) for t in listed
    ]
    assert any(t.task.startswith("How many") and t.answer == 880 for t in tasks({"title": "Dune", "pages": 880}))


def test_a_date_a_listed_thing_was_done_on_is_asked_when_and_picks_it_out_as_the_day_it_was_done():
    """A staff sheet's `started` column was asked "What is started in Ada Lovelace?" and "What is the name where
    2019-03-01 is started?": a date under a participle is when the thing was done, asked "When did ... start?", and
    a line it picks out is "the one started on 2019-03-01"."""
    from mcprl.scenarios.candidates import candidates
    from mcprl.scenarios.explored import Exploration

    rows = [
        {"name": "Ada Lovelace", "department": "Engineering", "started": "2019-03-01"},
        {"name": "Grace Hopper", "department": "Engineering", "started": "2015-07-15"},
        {"name": "Alan Turing", "department": "Research", "started": "2017-01-09"},
    ]
    asked = []
    for tool, args, result in [
        ("list_staff", {}, {"staff": rows}),
        ("read_range", {"path": "a.xlsx", "sheet": "Staff"}, {"range": "A1:C4", "values": rows}),
    ]:
        call = ExploredCall(index=0, session=0, tool=tool, arguments=args, text=json.dumps(result))
        asked += [t for seed in range(6) for t in candidates(Exploration(calls=[call]), {}, seed=seed)]
    started = [(t.task, t.answer) for t in asked if re.search(r"\bstart(ed)?\b", t.task)]
    assert started and all(
        re.search(r"(^|\. )When (was .* started|did .* start)\?$", task)
        or re.search(r" started on \d{4}-\d\d-\d\d\b", task)
        for task, _ in started
    ), started
    assert any(task.startswith("When") for task, _ in started), started
    assert {a for _, a in started} & {"2019-03-01", "2015-07-15", "2017-01-09"}, started


def test_a_map_keyed_by_file_names_lists_those_files():
    """excel-mcp-server's `list_workbooks` answers `{"company.xlsx": 5669, ...}` (a workbook's name to its size): no
    task came of it, the keys being values. A map whose every key is a value (a file's name, a path, a date) lists
    them, each with the fields it maps to (a size alone has no name to be asked by)."""
    from mcprl.scenarios.candidates import candidates
    from mcprl.scenarios.explored import Exploration
    from mcprl.scenarios.results import result_records

    def answers(result: dict) -> list:
        call = ExploredCall(index=0, session=0, tool="list_workbooks", arguments={}, text=json.dumps(result))
        return [t.answer for seed in range(4) for t in candidates(Exploration(calls=[call]), {}, seed=seed)]

    both = answers({"company.xlsx": 5669, "sales.xlsx": 1200})
    assert ["company.xlsx", "sales.xlsx"] in both and 5669 not in both, both
    assert result_records(json.dumps({"/srv/a.txt": {"size": 10}, "/srv/b": 4}), None) == [
        [("", "/srv/a.txt"), ("size", 10)],
        [("", "/srv/b")],
    ]
    assert result_records(json.dumps({"name": "Ann", "team": "Sales"}), None) == [[("name", "Ann"), ("team", "Sales")]]


def test_the_id_of_the_one_thing_every_record_belongs_to_is_not_asked():
    """kanban-mcp's items and updates each hold the board's `project_id` ("cb693357d0d24c67", one board): "List
    children with item id 4. What is the project id?" asks for a key no person knows or asks for. An id that
    several tools give (not every tool: tags have none), always one value, is what holds them all."""
    from mcprl.scenarios.candidates import candidates
    from mcprl.scenarios.explored import Exploration

    board = "cb693357d0d24c67"
    results = [
        ("get_item", {"item_id": 4}, {"id": 4, "project_id": board, "title": "Offline mode", "priority": 2}),
        ("list_children", {"item_id": 4}, [{"id": 5, "project_id": board, "title": "Sync queue", "priority": 3}]),
        ("get_latest_update", {}, {"id": 1, "project_id": board, "content": "Reproduced the Safari crash"}),
        ("list_tags", {}, [{"name": "frontend", "color": "#4ade80"}, {"name": "backend", "color": "#60a5fa"}]),
    ]
    calls = [
        ExploredCall(index=i, session=0, tool=tool, arguments=args, text=json.dumps(result))
        for i, (tool, args, result) in enumerate(results)
    ]
    tasks = [t for seed in range(8) for t in candidates(Exploration(calls=calls), {}, seed=seed)]
    assert tasks and board not in {str(t.answer) for t in tasks}, [(t.task, t.answer) for t in tasks]


def test_a_record_holding_its_own_id_is_not_asked_the_ids_of_other_records():
    """kanban-mcp's child item holds its own `id` beside `type_id`, `status_id`, `parent_id` and `project_id`,
    each the id of another record ("What is the status id of the children "Offline mode"?" -> 1): a code that
    points elsewhere, which no person asks for. The record's own id, its title and its names still answer, and
    the record is a child, not "the children"."""
    from mcprl.scenarios.candidates import candidates
    from mcprl.scenarios.explored import Exploration

    children = {
        4: [
            {
                "id": 5,
                "project_id": "cb693357d0d24c67",
                "type_id": 3,
                "status_id": 1,
                "parent_id": 4,
                "title": "Offline mode",
                "priority": 4,
                "type_name": "feature",
                "status_name": "backlog",
            }
        ],
        7: [
            {
                "id": 8,
                "project_id": "cb693357d0d24c67",
                "type_id": 2,
                "status_id": 2,
                "parent_id": 7,
                "title": "Sync queue",
                "priority": 2,
                "type_name": "bug",
                "status_name": "todo",
            },
            {
                "id": 9,
                "project_id": "cb693357d0d24c67",
                "type_id": 3,
                "status_id": 1,
                "parent_id": 7,
                "title": "Retry banner",
                "priority": 3,
                "type_name": "feature",
                "status_name": "backlog",
            },
        ],
    }
    calls = [
        ExploredCall(index=i, session=0, tool="list_children", arguments={"item_id": item}, text=json.dumps(found))
        for i, (item, found) in enumerate(children.items())
    ]
    tasks = [t for seed in range(12) for t in candidates(Exploration(calls=calls), {}, seed=seed)]
    asked = {f for t in tasks for f in re.findall(r"\b(?:project|type|status|parent) id\b", t.task)}
    assert tasks and not asked, [(t.task, t.answer) for t in tasks]
    assert {"feature", "backlog", "bug", "todo"} & {str(t.answer) for t in tasks}, [(t.task, t.answer) for t in tasks]
    # (one of the children is a child: `lexicon.IRREGULAR_PLURALS`)
    named = [t.task for t in tasks if '"Offline mode"' in t.task]
    assert named and all('child "Offline mode"' in t for t in named), named


def test_the_bounds_of_a_range_a_call_asked_for_are_not_asked_back():
    """mcp-text-editor's `get_text_file_contents` is sent the lines to read (`"ranges": [{"start": 3, "end": 7}]`)
    and says back the range it read (`"start_line": 3, "end_line": 7`, the end cut to the file's): "What is the end
    line of the text file contents for garden.md with start 3?" -> 8 asks for the request, not the file; and its
    `content_size`, the length of the `content` beside it, measures the answer. Bounds a result gives where the call
    was sent none (a match's lines) still answer, as does what the range holds."""
    from mcprl.scenarios.candidates import candidates
    from mcprl.scenarios.explored import Exploration

    lines = ["# Garden", "", "| plant | month |", "| tomato | May |", "| basil | June |", "", "Water daily.", ""]

    def read(index: int, start: int, end: int | None) -> ExploredCall:
        ranges = [{"start": start} if end is None else {"start": start, "end": end}]
        last = min(end or len(lines), len(lines))
        said = {
            "content": "\n".join(lines[start - 1 : last]),
            "start_line": start,
            "end_line": last,
            "total_lines": len(lines),
        }
        said["content_size"] = len(said["content"])
        text = json.dumps({"/srv/garden.md": {"ranges": [said]}})
        arguments = {"files": [{"file_path": "/srv/garden.md", "ranges": ranges}]}
        return ExploredCall(index=index, session=0, tool="get_text_file_contents", arguments=arguments, text=text)

    def find(index: int, word: str, line: int) -> ExploredCall:
        text = json.dumps({"file": "/srv/garden.md", "start_line": line, "end_line": line, "text": lines[line - 1]})
        arguments = {"pattern": word}
        return ExploredCall(index=index, session=0, tool="find_text", arguments=arguments, text=text)

    calls = [read(0, 3, 7), read(1, 4, 4), read(2, 7, None), find(3, "tomato", 4), find(4, "basil", 5)]
    tasks = [t for seed in range(12) for t in candidates(Exploration(calls=calls), {}, seed=seed)]
    asked = {(t.reference[-1].tool, t.metadata.get("field")) for t in tasks}
    assert not asked & {("get_text_file_contents", "start_line"), ("get_text_file_contents", "end_line")}, asked
    assert ("find_text", "start_line") in asked or ("find_text", "end_line") in asked, asked
    # ... nor the size of a text the record holds, named after it (`content_size` of `content`): a measure of the
    # answer beside it, not a fact of the file; the text still answers
    assert ("get_text_file_contents", "content_size") not in asked, asked
    assert ("get_text_file_contents", "content") in asked, asked


def test_the_code_a_reply_tags_itself_with_is_not_asked_where_the_other_code_found_nothing():
    """mcp-taskmanager's `open_task_details` tags every reply that found the task `"status": "task_details"` and
    one that did not `"status": "task_not_found"` beside "No such task found": the tag of what was found is one
    value, not the task's status ("... and tell me the status." -> task_details). What found nothing holds no
    record to tell apart, and the task's own fields still answer."""
    from mcprl.scenarios.candidates import candidates
    from mcprl.scenarios.explored import Exploration

    def details(task_id: str, title: str, description: str) -> str:
        task = {"id": task_id, "title": title, "description": description, "done": False}
        return json.dumps({"status": "task_details", "requestId": "req-1", "task": task})

    missing = json.dumps({"status": "task_not_found", "message": "No such task found"})
    calls = [
        ExploredCall(index=i, session=0, tool="open_task_details", arguments={"taskId": task_id}, text=text)
        for i, (task_id, text) in enumerate(
            [
                ("task-1", details("task-1", "Weekly report", "Send the draft to Sam by Friday.")),
                ("req-1", missing),
                ("task-2", details("task-2", "Trip to Lisbon", "Book a room for the review.")),
                ("Weekly report", missing),
                ("task-3", details("task-3", "Garden plan", "Water the plants on Monday.")),
            ]
        )
    ]
    tasks = [t for seed in range(12) for t in candidates(Exploration(calls=calls), {}, seed=seed)]
    answers = {str(t.answer) for t in tasks}
    assert tasks and not answers & {"task_details", "task_not_found"}, [(t.task, t.answer) for t in tasks]
    assert answers & {"Weekly report", "Trip to Lisbon", "Garden plan"}, [(t.task, t.answer) for t in tasks]


def test_a_known_querys_one_value_given_as_a_table_of_one_cell_answers_its_question():
    """mcp-server-motherduck and beancount-mcp answer `SELECT COUNT(*) FROM products` as a table of one cell
    (`{"columns": ["count_star()"], "rows": [[3]], "rowCount": 1}`): no count of a table's rows, nor a column's
    largest or earliest value, was ever asked of them. A table's one cell is the query's one value."""
    from mcprl.scenarios.candidates import candidates
    from mcprl.scenarios.explored import Exploration

    def table(column: object, cell: object) -> str:
        return json.dumps({"success": True, "columns": [column], "rows": [[cell]], "rowCount": 1})

    calls = [
        ExploredCall(
            index=0,
            session=0,
            tool="query",
            arguments={"sql": "SELECT COUNT(*) FROM products"},
            text=table("count_star()", 3),
        ),
        ExploredCall(
            index=1,
            session=0,
            tool="query",
            arguments={"sql": "SELECT MIN(date) FROM postings"},
            text=table({"name": "MIN(date)", "type": "datetime.date"}, "2024-01-01"),
        ),
    ]
    asked = {(t.task, t.answer) for seed in range(4) for t in candidates(Exploration(calls=calls), {}, seed=seed)}
    assert ("How many rows does the products table have?", 3) in asked, asked
    assert any(re.search(r"\bearliest date\b.*\bpostings table\b", t) and a == "2024-01-01" for t, a in asked), asked


def test_a_row_of_a_sample_a_limit_stopped_is_picked_out_only_by_its_id():
    """beancount-mcp's `SELECT * FROM postings LIMIT 96` gave 96 of 3525 postings: "What is the position of the posting
    whose narration is Payroll?" picked one out by a narration many postings unshown share. The rows of a query its
    LIMIT stopped (as many as it allowed) are a sample: a row is picked out by its own id or a value of an id's form;
    the rows of one that gave fewer are all there are, picked out by any value only one has."""
    from mcprl.scenarios.candidates import candidates
    from mcprl.scenarios.explored import Exploration

    rows = [[1, "Payroll", 1350.6], [2, "Coffee", -4.5], [3, "Rent", -900.0]]
    text = json.dumps({"columns": ["id", "narration", "amount"], "rows": rows})

    def asked(limit: int) -> list:
        call = ExploredCall(
            index=0, session=0, tool="query", arguments={"sql": f"SELECT * FROM postings LIMIT {limit}"}, text=text
        )
        return [t for seed in range(6) for t in candidates(Exploration(calls=[call]), {}, seed=seed)]

    sampled = [t for t in asked(3) if "whose" in t.task]
    assert sampled and all("whose id is" in t.task for t in sampled), [t.task for t in sampled]
    assert any("whose narration is" in t.task or "whose amount is" in t.task for t in asked(5)), [
        t.task for t in asked(5)
    ]


def test_a_querys_one_cell_of_text_is_its_answer_whole():
    """beancount-mcp's first payee in alphabetical order is "25 Degrees Burger Bar": "What is the smallest value of
    payee in the postings table?" was answered 25, the number the text holds. A query's one cell of text is the answer
    as it is, asked as a text ("Which payee ... comes first in alphabetical order?")."""
    from mcprl.scenarios.candidates import candidates
    from mcprl.scenarios.explored import Exploration

    text = json.dumps({"columns": [{"name": "MIN(payee)", "type": "str"}], "rows": [["25 Degrees Burger Bar"]]})
    call = ExploredCall(
        index=0, session=0, tool="query", arguments={"sql": "SELECT MIN(payee) FROM postings"}, text=text
    )
    asked = {(t.task, t.answer) for seed in range(4) for t in candidates(Exploration(calls=[call]), {}, seed=seed)}
    assert asked == {("Which payee in the postings table comes first in alphabetical order?", "25 Degrees Burger Bar")}
    # (... but an amount kept as text is no name: its order in the alphabet is no one's question, "Which position in
    # the postings table comes last in alphabetical order?" -> "2500.00 EUR")
    text = json.dumps({"columns": [{"name": "MAX(position)", "type": "str"}], "rows": [["2500.00 EUR"]]})
    call = call.model_copy(update={"arguments": {"sql": "SELECT MAX(position) FROM postings"}, "text": text})
    assert not [t.task for seed in range(4) for t in candidates(Exploration(calls=[call]), {}, seed=seed)]


def test_a_range_read_below_its_header_names_no_field_by_a_rows_value():
    """excel-mcp-server's `read_range` of A2:C3 gave two rows of people, no header: "What is the ann lee of the range
    A2:C3?" -> "Bob Stone". A grid's first row is its columns' names only where its cells are not written as the cells
    under them are (a date over dates); read from A1, the names ground the fields."""
    from mcprl.scenarios.candidates import candidates
    from mcprl.scenarios.explored import Exploration

    people = [["Ann Lee", "Sales", "2019-03-01"], ["Bob Stone", "Research", "2020-06-15"]]

    def fields(cells: str, rows: list) -> set[str]:
        text = json.dumps({"range": cells, "values": rows})
        call = ExploredCall(index=0, session=0, tool="read_range", arguments={"range": cells}, text=text)
        return {t.metadata.get("field") for t in candidates(Exploration(calls=[call]), {}, seed=0)}

    assert not {"ann lee", "Ann Lee", "sales", "2019-03-01"} & fields("A2:C3", people)
    assert {"name", "team", "start"} <= fields("A1:C3", [["name", "team", "start"], *people])


def test_a_date_of_what_a_thing_did_itself_is_asked_when_it_did_it():
    """@modelcontextprotocol/server-postgres's customers have a date column `joined`: "When was the customer "Cleo
    Martin" joined?". A date a participle names is asked when the thing did it where it does it itself ("When did
    ... join?"), when it was done where it is done to it ("When was ... created?"); every such task states its
    record and holds no answer."""
    from mcprl.scenarios.candidates import candidates
    from mcprl.scenarios.explored import Exploration

    rows = [
        {"name": "Cleo Martin", "city": "Lyon", "joined": "2024-01-08", "created": "2024-01-02"},
        {"name": "Ben Okafor", "city": "Lagos", "joined": "2023-05-30", "created": "2023-05-01"},
    ]
    calls = [
        ExploredCall(index=0, session=0, tool="list_customers", arguments={}, text=json.dumps(rows)),
        ExploredCall(
            index=1, session=0, tool="get_customer", arguments={"name": "Cleo Martin"}, text=json.dumps(rows[0])
        ),
    ]
    for seed in range(3):
        dated = [
            t
            for t in candidates(Exploration(calls=calls), {}, seed=seed)
            if t.metadata.get("field") in ("joined", "created")
        ]
        assert {t.metadata["field"] for t in dated} == {"joined", "created"}, [t.task for t in dated]
        for t in dated:
            assert t.task.startswith("When did" if t.metadata["field"] == "joined" else "When was"), t.task
            assert "joined" not in t.task and str(t.answer) not in t.task, t.task


def test_a_record_a_search_found_by_a_word_of_its_name_is_asked_by_its_name():
    """server-memory's `search_nodes` sent "Team" found the entity "Team meeting": "Find the entity about Team and tell
    me its entity type." A record found by a word of its name is asked for by that name, not as what a search was
    about; one found by a word of what it holds is still asked by that ("the entity about Oslo")."""
    from mcprl.scenarios.candidates import candidates
    from mcprl.scenarios.explored import Exploration

    entity = {
        "type": "entity",
        "name": "Team meeting",
        "entityType": "project",
        "observations": ["Check the flights to Oslo."],
        "version": 2,
    }
    # (a relation of it beside it, naming it too: mcp-knowledge-graph's search gives both)
    relation = {
        "type": "relation",
        "from": "Team meeting",
        "to": "Team meeting",
        "relationType": "entity",
        "version": 1,
    }
    text = json.dumps({"entities": [entity], "relations": [relation]})

    def asked(query: str) -> list[str]:
        call = ExploredCall(index=0, session=0, tool="search_nodes", arguments={"query": query}, text=text)
        return [t.task for seed in range(6) for t in candidates(Exploration(calls=[call]), {}, seed=seed)]

    by_name = asked("Team")
    assert by_name and not [t for t in by_name if re.search(r"\bentity about Team\b", t)], by_name
    assert any('"Team meeting"' in t or "Team meeting" in t for t in by_name), by_name
    assert any(re.search(r"\babout Oslo\b", t) for t in asked("Oslo")), asked("Oslo")


def test_a_table_a_structured_result_holds_as_one_text_is_asked_of_by_its_rows():
    """mcp-text-editor reads a file into JSON, `{"<path>": {"ranges": [{"content": "item,count\\napple,12...",
    "start_line": 1, ...}]}}`: the CSV's rows were one text, and only "How many total lines ...?" was asked. The rows
    of a table such a result holds as its one text of lines are its records; a part of the file without the table's
    header is none."""
    from mcprl.scenarios.candidates import candidates
    from mcprl.scenarios.explored import Exploration

    def read(content: str, start: int) -> str:
        part = {"content": content, "start_line": start, "end_line": start + 3, "range_hash": "9f86d08"}
        return json.dumps({"/srv/text/stock.csv": {"ranges": [part], "file_hash": "e3b0c44", "total_lines": 4}})

    def asked(content: str, start: int) -> dict[str, object]:
        call = ExploredCall(
            index=0,
            session=0,
            tool="get_text_file_contents",
            arguments={"file_path": "/srv/text/stock.csv", "start": start},
            text=read(content, start),
        )
        return {t.task: t.answer for seed in range(4) for t in candidates(Exploration(calls=[call]), {}, seed=seed)}

    whole = asked("item,count\napple,12\npear,7\nplum,3\n", 1)
    rows = {"apple": 12, "pear": 7, "plum": 3}
    by_row = {t: a for t, a in whole.items() if any(item in t for item in rows) or a in rows}
    assert by_row, whole
    for task, answer in by_row.items():  # (each a row's value, picked out by the row's other value, not stated)
        if str(answer) in rows:
            assert re.search(rf"\b{rows[str(answer)]}\b", task) and str(answer) not in task, (task, answer)
        else:
            item = next(i for i in rows if i in task)
            assert str(answer) == str(rows[item]), (task, answer)
    assert not any(item in t for t in asked("pear,7\nplum,3\n", 3) for item in rows)


def test_a_value_that_says_it_is_not_known_is_no_answer():
    """mcp-server-spreadsheet's `describe_table` typed a column it could not read "unknown": "What is the type of the
    sheet "name"?" -> "unknown". No task is answered by a value that says it is not known; the known ones are asked."""
    from mcprl.scenarios.candidates import candidates
    from mcprl.scenarios.explored import Exploration

    tasks = [
        {"title": "Garden plan", "owner": "unknown"},
        {"title": "Weekly report", "owner": "Dana"},
        {"title": "Trip to Lisbon", "owner": "N/A"},
    ]
    call = ExploredCall(index=0, session=0, tool="list_tasks", arguments={}, text=json.dumps({"tasks": tasks}))
    answers = {str(t.answer).lower() for seed in range(8) for t in candidates(Exploration(calls=[call]), {}, seed=seed)}
    assert "dana" in answers and not {"unknown", "n/a"} & answers, answers


def test_a_line_of_a_listing_is_never_picked_out_by_a_field_that_says_the_answer():
    """mcp-mathematics `batch_calculate` of ["100", "10000"]: each line an expression and its result, which for a
    number alone is the number again: "What is the expression whose result is 10000?" said its answer. A line is
    picked out by a field whose value is not the answer, or not asked of at all."""
    from mcprl.scenarios.candidates import candidates
    from mcprl.scenarios.explored import Exploration, ExploredCall

    results = [{"expression": e, "success": True, "result": int(e) if e.isdigit() else 5} for e in ("100", "2 + 3")]
    text = json.dumps({"total_expressions": 2, "results": results})
    call = ExploredCall(
        index=0, session=0, tool="batch_calculate", arguments={"expressions": ["100", "2 + 3"]}, text=text
    )
    tasks = [t for seed in range(8) for t in candidates(Exploration(calls=[call]), {}, seed=seed)]
    assert any("2 + 3" in t.task and t.answer == 5 for t in tasks), [(t.task, t.answer) for t in tasks]
    for t in tasks:  # (what picks the line out, after "whose", never holds the answer)
        picked_by = t.task.partition("whose")[2]
        assert not re.search(rf"\b{re.escape(str(t.answer))}\b", picked_by), (t.task, t.answer)


def test_a_key_that_is_a_missing_value_written_out_is_no_field_to_ask_of():
    """todo-txt-mcp `get_statistics`: counts of todos by priority, `{"A": 1, "B": 1, "None": 2}` (Python's None
    written out for the todos of no priority): "Find the statistics and tell me its none." A key spelled as a
    missing value is a value (`data_key`), as a file's name is, not a field's name; the named counts are asked."""
    from mcprl.scenarios.candidates import candidates
    from mcprl.scenarios.explored import Exploration, ExploredCall

    stats = {"total_todos": 5, "active_todos": 4, "priority_counts": {"A": 1, "B": 1, "None": 2}}
    call = ExploredCall(index=0, session=0, tool="get_statistics", arguments={}, text=json.dumps(stats))
    tasks = [t for seed in range(8) for t in candidates(Exploration(calls=[call]), {}, seed=seed)]
    assert {t.answer for t in tasks} >= {5, 4}, [(t.task, t.answer) for t in tasks]
    assert not any(re.search(r"\bnone\b", t.task, re.I) for t in tasks), [t.task for t in tasks]


def test_a_record_a_filter_by_one_of_its_fields_found_is_asked_for_as_the_one_with_that_value():
    """todo-txt-mcp `filter_by_context(context="phone")`: one todo in `{"todos": [...]}`, its `contexts` holding
    "phone": "Find the context about phone and tell me its id.", the tool's name taken for what the record is and the
    filter's value for what it is about. A filter by a field the records hold asks for the record with that value, as
    the listing's key calls it; a search's words (a parameter no field is named as) are still what it is about."""
    from mcprl.scenarios.candidates import candidates
    from mcprl.scenarios.explored import Exploration, ExploredCall

    todo = {"id": "0", "text": "Call Dana about the budget", "priority": "A", "contexts": ["phone"]}
    filtered = {"todos": [todo], "count": 1, "context": "phone"}
    searched = {"todos": [todo], "count": 1}
    calls = [
        ExploredCall(
            index=0, session=0, tool="filter_by_context", arguments={"context": "phone"}, text=json.dumps(filtered)
        ),
        ExploredCall(index=1, session=1, tool="search_todos", arguments={"query": "budget"}, text=json.dumps(searched)),
    ]
    tasks = [t for seed in range(8) for t in candidates(Exploration(calls=calls), {}, seed=seed)]
    by_filter = [t.task for t in tasks if t.reference[-1].tool == "filter_by_context"]
    assert any("the todo with context phone" in t for t in by_filter), by_filter
    assert not any("context about" in t for t in by_filter), by_filter
    # (the listing's count, beside the record, is the filter's, never the record's: "... the todo ... its count")
    assert not any("todo" in t and "count" in t for t in by_filter), by_filter
    by_search = [t.task for t in tasks if t.reference[-1].tool == "search_todos"]
    assert any("todo about budget" in t for t in by_search) and not any("todo with query" in t for t in by_search)
