"""How a call is said in a task (`mcprl.scenarios.phrasing.said`), as properties over the titles and
arguments of third-party servers' tools: every value a call was given is in every wording of it, no
wording names an operand by its letter or carries a title's filler word, and each reads as a sentence."""

from __future__ import annotations

import json
import re

import pytest

from mcprl.scenarios.lexicon import spoken
from mcprl.scenarios.phrasing import Said, be, quoted, said

# (title, arguments): titles and argument names as third-party servers give them (mcp-server-everything,
# mcp-server-math, mcp-server-git, mcp-units, mcp-server-time, mcp-server-sqlite, server-filesystem, mcp-chess)
CALLS = [
    ("Get Sum Tool", {"a": 7, "b": 3}),
    ("sum", {"numbers": [10, 8.25]}),
    ("git branch", {"branch_type": "all"}),
    ("git log", {}),
    ("git show", {"revision": "a11a100"}),
    ("convert temperature", {"value": 14, "from_unit": "F", "to_unit": "C"}),
    ("convert time", {"source_timezone": "Asia/Tokyo", "time": "09:30", "target_timezone": "UTC"}),
    ("describe table", {"table_name": "orders"}),
    ("Get File Info", {"path": "./docs"}),
    ("list directory", {"path": "."}),
    ("list allowed directories", {}),
    ("make move", {"move_san": "e2e4"}),
    ("github get issue", {"owner": "octo", "repo": "hello", "issue_number": 7}),
    ("Get Structured Content Tool", {"location": "Los Angeles"}),
    ("search nodes", {"query": "Alice"}),
    ("task create", {"name": "Renew passport", "priority": "high"}),  # mcp-todo: the thing first, then the verb
    ("task get", {"id": 3}),
    ("task list", {"status": "done"}),
    # @cyanheads/git-mcp-server, mcp-sympy: flags, and an expression to work on
    ("git blame", {"path": "/srv/repo", "filePath": "TODO.md", "ignoreWhitespace": True, "porcelain": False}),
    ("sympy derivative", {"expr": "x**2 + 1", "variable": "x"}),
]


def wordings(title: str, args: dict) -> list[str]:
    s = said(title, args)
    return [
        s.order() + ".",
        *s.asks_result(),
        *s.asks_field("temperature"),
        *s.asks_listing(),
        *s.asks_record("author", 'where the message is "Fix typo"'),
        *s.asks_record("author", "of the latest commit"),  # a line of a listing by its place
    ]


@pytest.mark.parametrize(("title", "args"), CALLS)
def test_every_value_is_said_in_every_wording(title: str, args: dict) -> None:
    """... a flag by its name, with or without it, never as True or False."""
    for text in wordings(title, args):
        assert not re.search(r"\b(?:True|False)\b", text), text
        for key, value in args.items():
            if isinstance(value, bool):
                assert re.search(rf"\b{'with' if value else 'without'}\b[^,]*\b{spoken(key)}\b", text), (text, key)
            for item in value if isinstance(value, list) else [] if isinstance(value, bool) else [value]:
                assert quoted(item) in text, (text, item)


@pytest.mark.parametrize(("title", "args"), CALLS)
def test_wordings_read_as_sentences(title: str, args: dict) -> None:
    for text in wordings(title, args):
        assert text[:1].isupper() and text.endswith(("?", ".")), text
        assert not re.search(r"\bTool\b|\btool\b", text), text  # a title's filler word ("Get Sum Tool")
        assert "  " not in text and " ." not in text and " ?" not in text, text
        # an operand is said as its value, never by its letter ("a 7 and b 3")
        assert not re.search(r"\b[ab] \d", text), text


def test_a_title_that_names_or_gets_a_thing_is_asked_about_that_thing() -> None:
    assert said("Get Sum Tool", {"a": 7, "b": 3}).asks_field("sum") == said("get sum", {"a": 7, "b": 3}).asks_result()
    # ... and so is a field its name ends in, of more words than one (memory-bank-mcp's "Current mode: architect")
    assert said("get current mode", {}).asks_field("current mode") == said("get current mode", {}).asks_result()
    assert not any("mode of the current mode" in t for t in said("get current mode", {}).asks_field("current mode"))
    # an order is kept as one: the task says what to do, then asks
    assert all(t.startswith("Convert temperature 14") for t in said("convert temperature", {"value": 14}).asks_result())
    # a listing of a thing a title names is asked for as its plural
    assert all("git branches" in t for t in said("git branch", {}).asks_listing())
    # a prefix before a verb that gets: what it gets is its one argument
    assert all("the revision a11a100" in t for t in said("git show", {"revision": "a11a100"}).asks_field("author"))
    # ... beside where the call looks, said as where (@cyanheads/git-mcp-server: "Find the git for "/srv/r" with
    # object main and tell me its type", the thing lost to the repository's path); a file's path is no such place
    shown = said("Git Show", {"path": "/srv/r", "object": "main", "filePath": "README.md"}).asks_field("type")
    assert all('the object main in "/srv/r"' in t and "file path README.md" in t for t in shown), shown
    assert all('the git log for "/srv/r"' in t for t in said("git log", {"path": "/srv/r"}).asks_field("author"))
    # a value that is a word tasks say of fields is quoted, not read as the parameter's name (csv-editor's "column
    # statistics with ... column name" of the column "name")
    stats = said("get column statistics", {"session": "s1", "column": "name"}).asks_field("dtype")
    assert all('column "name"' in t for t in stats), stats
    # a line of what an order made is asked after the order, not "in" the things it was sent (mcp-knowledge-graph:
    # 'In the entities "Team meeting" (entity type project, ...), what is the version where ...?')
    made = [{"name": "Team meeting", "entityType": "project"}, {"name": "Apollo", "entityType": "event"}]
    asked = said("create entities", {"entities": made}, order=True).asks_record("version", "where the type is event")
    assert all(t.startswith('Create entities "Team meeting"') for t in asked), asked
    assert (
        said("describe table", {"table": "products"})
        .asks_record("type", "where the name is price")[0]
        .startswith("In the table products,")
    )
    # a thing, then what is done to it: the request starts with the doing, as a person's does; a noun after the
    # thing ("git status") is no doing
    assert said("task create", {"name": "Renew passport"}).order().split()[0] == "Create"
    assert "tasks" in said("task list", {}).order().split()  # a listing of them
    assert "git status" in said("git status", {}).order()
    # a state a name says after its thing is said before it, as a person says it (mcp-server-git's `git_diff_unstaged`)
    assert all("the unstaged git diff" in t for t in said("git diff unstaged", {}).asks_field("file"))
    assert all("the wind speed" in t for t in said("get wind speed", {}).asks_result())  # (no state: "speed")
    # one object holding the call's parameters (a pydantic model's `request`) is said as the parameters it holds
    request = said("read range", {"request": {"file_path": "/srv/shop.xlsx", "sheet": "Orders"}})
    assert request == said("read range", {"file_path": "/srv/shop.xlsx", "sheet": "Orders"}), request
    # ... and so is a list of one such request (the files to read: one file); a list of several says each apart
    ranges = {"file_path": "/srv/a.txt", "ranges": [{"start": 1, "end": 5}, {"start": 9}]}
    assert said("get text", {"files": [ranges]}) == said("get text", ranges)
    assert "ranges (start 1, end 5), (start 9)" in said("get text", ranges).order()


def test_a_field_naming_a_person_is_asked_who_and_a_line_alone_only_where_asked() -> None:
    s = said("git log", {})
    assert all(re.search(r"\b[Ww]ho is the author\b", t) for t in s.asks_record("author", "of the latest commit"))
    named = s.asks_record("message", "of the latest commit")
    alone = s.asks_record("message", "of the latest commit", alone=True)
    # where what picks the line out says which it is, the question does not name the call, as no person does
    assert all("git log" in t for t in named) and alone and not any("git log" in t for t in alone)


def test_a_previous_result_is_said_as_one_not_quoted() -> None:
    s = said("average", {"numbers": [3, 5]}, linked=frozenset({"numbers"}))
    assert "the previous result" in s.order() and '"the previous result"' not in s.order()


def test_a_thing_the_previous_call_gave_is_said_as_that_thing() -> None:
    """csv-mcp-server: a load gave a session, then `close_session(session_id=...)`: "close that session", not
    "close session the previous result"; what is about a thing the call gave stays "for the previous result"."""
    for title, args, words in (
        ("close session", {"session_id": "s-1"}, "Close that session"),
        ("read file", {"path": "/srv/a.txt"}, "Read that file"),
        ("get session info", {"session_id": "s-1"}, "Get the session info for the previous result"),
    ):
        assert said(title, args, linked=frozenset(args)).order() == words
    assert said("read file", {"path": "/a"}, linked=frozenset({"path"})).phrase() == "that file"
    # ... and a handle of it beside what the call is about, as what it is a handle of (csv-mcp-server: "Then configure
    # auto save with session id the previous result")
    saved = said("configure auto save", {"session_id": "s-1", "interval": 5}, linked=frozenset({"session_id"}))
    assert saved.order() == "Configure auto save for that session with interval 5", saved.order()
    # ... and so is one a call of another thing is for, its one argument (csv-mcp-server: "Then what is the current
    # position of the history for the previous result?"): no wording of it says "the previous result"
    for title in ("get history", "get auto save status"):
        history = said(title, {"session_id": "s-1"}, linked=frozenset({"session_id"}))
        assert all("for that session" in t and "previous" not in t for t in history.asks_field("encoding")), title


def test_a_field_named_for_the_thing_a_place_picks_out_is_asked_as_that_thing() -> None:
    """mcp-server-spreadsheet: a description of every sheet, each record's "sheet" its name: "What is the first
    sheet listed?", not "What is the sheet of the first sheet listed?"; another field of it is still its own."""
    s = said("describe table", {"file": "company.xlsx"})
    for asks in (s.asks_record("sheet", "of the first sheet listed"), s.asks_record("commit", "of the latest commit")):
        assert all(re.search(r"\bthe (first sheet listed|latest commit)\?$", a) for a in asks), asks
        assert not any(re.search(r"\b(sheet|commit) of the\b", a) for a in asks), asks
    assert said("list sheets", {}).asks_record("sheet", "of the first sheet listed", alone=True) == (
        "What is the first sheet listed?",
    )
    assert all(
        "row count of the first sheet listed" in a for a in s.asks_record("row count", "of the first sheet listed")
    )


def test_an_id_a_call_is_for_is_said_with_what_it_is_an_id_of() -> None:
    """kanban-mcp: `get_epic_progress(item_id=4)` is "the epic progress for item 4", not "for 4" (of what?); where
    the title names the thing, its id alone ("the item 3"); an id beside what the call is about keeps its name."""
    assert said("get epic progress", {"item_id": 4}).phrase() == "the epic progress for item 4"
    assert (
        said("get comments", {"issue_id": 12}).asks_field("author")[0]
        == "Who is the author of the comments for issue 12?"
    )
    assert said("get item", {"item_id": 3}).phrase() == "the item 3"
    assert said("list children", {"item_id": 4}).order() == "List children with item id 4"


def test_the_one_record_a_listing_holds_said_as_that_record_is_asked_of_as_it() -> None:
    """kanban-mcp's updates, a listing of one: "What is the content of the update in the updates?", not "Look at the
    update in the updates and tell me the content of the update."; a listing said as what it lists is asked of its
    one thing as before."""
    one = Said(None, "", about="the update in the updates")
    assert one.asks_field("content", listed=True)[0] == "What is the content of the update in the updates?"
    assert not any("Look at" in a for a in one.asks_field("content", listed=True))
    tables = Said(None, "", about="the tables of the database")
    assert tables.asks_field("table name", listed=True)[1].endswith("tell me the name of the table.")


def test_where_a_move_starts_and_ends_is_said_from_and_to() -> None:
    """A source and a target are said as people say them, as a unit's `from_unit` and `to_unit` are."""
    for args in (
        {"source_timezone": "Asia/Tokyo", "target_timezone": "UTC"},
        {"from_unit": "Asia/Tokyo", "to_unit": "UTC"},
    ):
        assert all("from Asia/Tokyo to UTC" in t for t in said("convert time", {**args, "time": "09:30"}).asks_result())


def test_a_key_ending_in_a_unit_is_said_with_the_unit_written_out() -> None:
    """`weight_g`, `durationMs`: the unit is said as one, not read as a word of the key's name ("weight g"); a key
    that is only a unit's letters stays as it is."""
    for key, unit in (("weight_g", "grams"), ("durationMs", "milliseconds"), ("price_usd", "dollars")):
        words = spoken(key).split()
        assert unit in words and words[-1] not in key.lower(), spoken(key)
    assert spoken("g") == "g"


def test_a_key_ending_in_a_programs_name_for_its_type_is_said_without_it() -> None:
    """mcp-server-spreadsheet's `range_str`: "In the range with file ... and range str A1:D10, ...". No wording of a
    call says a word that names its value's type in a program; a key that is only such a word stays as it is."""
    for key in ("range_str", "countInt", "options_dict", "flag_bool"):
        asked = said("get range", {"file": "/s/a.csv", key: "A1:D10"}).asks_field("date")
        assert all(not re.search(r"\b(str|int|dict|bool)\b", t) and "A1:D10" in t for t in asked), asked
    assert spoken("str") == "str"


def test_a_path_names_only_a_place_and_an_expression_is_what_is_worked_on() -> None:
    """A path is the thing itself where the thing is a place ("List directory "./docs"", "the file "a.txt""), and
    where the thing is looked at there, for it ('the git blame for "/srv/repo"'); an expression (`expr`) is what the
    call works on ("the sympy derivative of x**2 with variable x"), not "with expr"; a getter's one value is what it
    gets the thing for ("the weather for London", not "with city London")."""
    assert all('for "/srv/repo"' in t for t in said("git blame", {"path": "/srv/repo"}).asks_result())
    assert all('directory "./docs"' in t for t in [said("list directory", {"path": "./docs"}).order()])
    assert all("the file a.txt" in t for t in said("read file", {"path": "a.txt"}).asks_field("size"))
    derivative = said("sympy derivative", {"expr": "x**2", "variable": "x"})
    assert all("of x**2 with variable x" in t for t in derivative.asks_result()), derivative
    # the one value of a call that gets a thing is what it gets it for; a kind of the thing is said by its name
    assert all("the weather for London" in t for t in said("get weather", {"city": "London"}).asks_result())
    assert all("with branch type local" in t for t in said("git branch", {"branch_type": "local"}).asks_listing())
    # ... and so is a setting, a parameter its schema gives a default (mcp-simple-timeserver's `calendar`)
    hijri = said("get current time", {"calendar": "hijri"}, settings=frozenset({"calendar"}))
    assert all("with calendar hijri" in t for t in hijri.asks_result()), hijri


def test_a_title_is_said_up_to_how_it_works_unless_that_would_name_two_tools_alike() -> None:
    """mcp-simple-timeserver's "Get Current Time with Optional Location and Calendar Systems" names the current
    time; "Read File" and "Read File with Line Numbers" stay apart."""
    from mcprl.scenarios.phrasing import task_titles

    tools = [
        {"name": "get_current_time", "title": "Get Current Time with Optional Location and Calendar Systems"},
        {"name": "read", "annotations": {"title": "Read File"}},
        {"name": "read_numbered", "title": "Read File with Line Numbers"},
        {"name": "with_nothing"},
    ]
    assert task_titles(tools) == {
        "get_current_time": "Get Current Time",
        "read": "Read File",
        "read_numbered": "Read File with Line Numbers",
    }


def test_a_word_every_tool_name_starts_with_says_whose_it_is_not_what_it_does() -> None:
    """mcp-sympy names its 35 tools `sympy_*`: "Sympy factorial 5, and tell me the result." took the server's name
    for an order's verb. An untitled tool that may write, of a server whose every tool's name starts with one word
    that is no verb, is named by its name's other words; a read's name keeps it ("the git log"), as does a server
    with a tool of another first word."""
    from mcprl.scenarios.phrasing import task_titles

    sympy = [{"name": f"sympy_{n}", "description": "Factorial."} for n in ("factorial", "limit", "nextprime")]
    assert all("sympy" not in t for t in said(task_titles(sympy)["sympy_factorial"], {"n": "5"}).asks_result())
    assert "What is the factorial of 5?" in said(task_titles(sympy)["sympy_factorial"], {"n": "5"}).asks_result()
    git = [{"name": f"git_{n}", "description": f"{n.capitalize()}s."} for n in ("commit", "push", "frobnicate")]
    git.append({"name": "git_log", "description": "Shows the commit logs."})
    assert "git_log" not in task_titles(git) and task_titles(git)["git_frobnicate"] == "frobnicate"
    assert task_titles([*sympy, {"name": "calculate", "description": "Calculates."}]) == {}
    # (nor where a title says the name again, as FastMCP titles its tools: "Sympy Factorial")
    titled = [{**t, "title": t["name"].replace("_", " ").title()} for t in sympy]
    assert task_titles(titled) == task_titles(sympy) == {t["name"]: t["name"][6:] for t in sympy}
    # ... nor where a verb follows it, whose object it is (mcp-todo's `task_create`: "Create task "Tax return"")
    todo = [{"name": f"task_{n}", "description": "Does it."} for n in ("create", "update", "delete")]
    assert task_titles(todo) == {}


def test_a_name_that_shortens_the_verb_its_description_opens_with_is_said_by_that_verb() -> None:
    """@wrtnlabs/calculator-mcp names its tools `div`, `mul`, `sub` ("Divide two numbers"): "What is the div of 18 and
    5.5?" is "Divide 18 by 5.5"; a name that is a word of its own (`add`, `mod`, `sqrt`, "Square root of a number")
    and a description that opens with no verb keep the name."""
    from mcprl.scenarios.phrasing import task_titles

    tools = [
        {"name": n, "description": f"{d} two numbers"}
        for n, d in [("div", "Divide"), ("mul", "Multiply"), ("sub", "Subtract"), ("add", "Add"), ("mod", "Mod")]
    ]
    tools += [{"name": "sqrt", "description": "Square root of a number"}, {"name": "weather", "description": "Get it"}]
    titles = task_titles(tools)
    assert titles == {"div": "divide", "mul": "multiply", "sub": "subtract"}, titles
    assert "Divide 18 by 5.5. What is the result?" in said(titles["div"], {"a": 18, "b": 5.5}).asks_result()
    assert any(t.startswith("Multiply 19 by 14") for t in said(titles["mul"], {"a": 19, "b": 14}).asks_result())


def test_a_tools_records_are_named_by_what_its_name_lists_not_by_its_filler() -> None:
    """`list_projects_tool`'s records are projects, not tools ("the python of the tool "Weekly report""); a name of
    one word names its records still."""
    from mcprl.scenarios.phrasing import noun_of

    assert [noun_of(t) for t in ("list_projects_tool", "get_item", "search_emails", "tool")] == [
        "project",
        "item",
        "email",
        "result",
    ]


def test_a_list_of_one_object_is_said_as_its_fields_and_a_file_path_names_the_file() -> None:
    """mcp-text-editor's `get_text_file_contents` takes `files`, a list of requests, each with a `file_path` and a
    list of `ranges`: one file's one range was said as "with file path "/srv/todo.txt" and ranges (start 5, end
    7)". A list of one object is said as the fields it holds, each value in every wording, no bracket; a parameter
    named by identifying words alone (`file_path`) names what the call looks at; a list of several stays apart."""
    args = {"files": [{"file_path": "/srv/todo.txt", "ranges": [{"start": 5, "end": 7}]}]}
    for text in wordings("get text file contents", args):
        assert "(" not in text and all(v in text for v in ('"/srv/todo.txt"', "5", "7")), text
        assert "file path" not in text, text
    several = {"file_path": "/srv/todo.txt", "ranges": [{"start": 1, "end": 5}, {"start": 9}]}
    assert "(start 1, end 5), (start 9)" in said("get text file contents", several).order()
    # (a path named beside another identifying one is said by its name: the repository is what the call looks at)
    blame = said("git blame", {"path": "/srv/repo", "filePath": "TODO.md"}).order()
    assert '"/srv/repo"' in blame and "file path TODO.md" in blame, blame


def test_a_field_of_what_a_call_tells_about_a_thing_is_asked_of_the_thing() -> None:
    """server-filesystem's `get_file_info`, mcp-sqlite's `db_info` and tree-sitter's `get_file_metadata` were asked
    "What are the permissions of the file info for "/srv/docs"?", "What is the size of the db info?": a field of
    what a title says is only about a thing (its info, details, metadata) is the thing's, and asked of it, every value
    still said; a thing of its own ("git status") keeps its words, and the call is still ordered by its title."""
    for title, args in (
        ("Get File Info", {"path": "/srv/docs"}),
        ("db info", {}),
        ("get file metadata", {"project": "Weekly report", "path": "/srv/r/VERSION"}),
    ):
        asked = said(title, args).asks_field("size")
        assert not any(re.search(r"\b(info|metadata)\b", t) for t in asked), asked
        assert all(quoted(v) in t for v in args.values() for t in asked), asked
        assert title.split()[-1].lower() in said(title, args).order()
    assert all("git status" in t for t in said("git status", {"repo_path": "/srv/r"}).asks_field("current branch"))
    # (nor is what content is: "structured content" names no thing it is about)
    weather = said("Get Structured Content Tool", {"location": "Chicago"}).asks_field("humidity")
    assert all("structured content" in t for t in weather), weather


def test_records_each_with_a_name_are_said_by_their_names_first() -> None:
    """server-memory's `create_entities` writes were said "Create entities with entities (name Weekly report, entity
    type person, observations ...), (name Team meeting, ...)". Records that each have a name are said by it first,
    the rest of each in brackets, and records that are the things the title names follow it: every name and value
    is still in the order, once."""
    entities = [
        {"name": "Weekly report", "entityType": "person", "observations": ["Book a room."]},
        {"name": "Team meeting", "entityType": "project", "observations": ["Check the flights to Oslo."]},
    ]
    order = said("create entities", {"entities": entities}, order=True).order()
    assert order.startswith('Create entities "Weekly report" (') and "with entities" not in order, order
    for value in ("Weekly report", "Team meeting", "person", "project", "Book a room.", "Check the flights to Oslo."):
        assert order.count(value) == 1, (order, value)
    assert "name " not in order, order
    # (a record's texts each in quotes, so that sentences stay apart: 'observations "Book a room."', not
    # "observations Send the draft., Book a room.")
    entities[0]["observations"] = ["Send the draft.", "Book a room."]
    order = said("create entities", {"entities": entities}, order=True).order()
    assert 'observations "Send the draft.", "Book a room."' in order, order


def test_an_empty_argument_states_nothing() -> None:
    """csv-mcp-server's `rename_columns` was sent an empty mapping: "Rename columns with session id ... and mapping
    ()". An empty object, list or text is said as nothing; every other value still is."""
    for empty in ({}, [], ""):
        args = {"session_id": "s-1", "mapping": empty, "inplace": 3}
        for text in wordings("rename columns", args):
            assert "mapping" not in text and "()" not in text and "s-1" in text and "3" in text, text


def test_a_field_is_one_or_many_by_its_head_not_by_its_unit() -> None:
    """mcp-server-tree-sitter's `max_size_mb`, said "maximum size in megabytes", is one size: "What is", not "What
    are"; a plural head ("total rows in sheet", "permissions") is many."""
    assert be("maximum size in megabytes") == be("line count") == "is"
    assert be("total rows in sheet") == be("permissions") == "are"


def test_a_thing_named_by_how_much_of_it_is_asked_for_not_ordered_and_many_things_are_asked_as_many() -> None:
    """mcp-alchemy's `all_table_names` (a tool that may write, by its name: no word of reading) was said "All table
    names. What is the result?", as if "all" were what it does. A title that opens with how much of a thing is that
    thing, asked for; and a call's value is asked with "are" where it is many ("the file contents")."""
    for title in ("all table names", "every user name"):
        asked = said(title, {}, order=True).asks_result()
        assert all(not re.match(r"(?i)(all|every)\b", a) and "result" not in a for a in asked), asked
    assert said("all table names", {}, order=True).asks_result()[0].startswith("What are")
    assert said("get file contents", {"path": "a.txt"}).asks_result()[0].startswith("What are")
    assert said("sum", {"a": 1, "b": 2}).asks_result()[0].startswith("What is")


def test_a_list_of_one_value_is_said_as_that_value():
    """mcp-server-obsidian's `read_notes(paths)` read one note: "Find the notes with paths "Apollo.md" ..." said a
    list where a person names one note. A call's one argument, a list of one value, is said as that value."""
    for args in ({"paths": ["Projects/Apollo.md"]}, {"path": "Projects/Apollo.md"}):
        asks = said("read notes", args).asks_field("status")
        assert all("Projects/Apollo.md" in t and "paths" not in t for t in asks), asks
    assert all("cities" not in t and "Oslo" in t for t in said("get weather", {"cities": ["Oslo"]}).asks_result())


def test_a_field_of_the_one_thing_a_listing_holds_is_asked_as_that_things():
    """mcp-todo's `task_list` of a store holding one task: "List tasks. What is the name?" asks of no thing a person
    could name. The one line of a listing is asked for as the thing the listing holds; a call that gives one record
    of its own (a conversion) is asked as before."""
    from mcprl.scenarios.candidates import candidates
    from mcprl.scenarios.explored import Exploration, ExploredCall

    one = json.dumps([{"id": 1, "name": "Project Apollo", "status": "active"}])
    asked = {
        t.answer: t.task
        for seed in range(4)
        for t in candidates(
            Exploration(calls=[ExploredCall(index=0, session=0, tool="task_list", arguments={}, text=one)]),
            {},
            seed=seed,
        )
    }
    assert "Project Apollo" in asked and "task" in asked["Project Apollo"].split("?")[0].split(". ")[-1], asked
    converted = ExploredCall(
        index=0, session=0, tool="convert_weight", arguments={"value": 2, "unit": "kg"}, text='{"value": 4.409}'
    )
    (task,) = candidates(Exploration(calls=[converted]), {}, seed=0)
    assert task.task.endswith(("What is the value?", "tell me the value.")), task.task


def test_a_state_asked_of_a_line_a_field_picks_out_takes_no_article():
    """mcp-server-git's diff: "what is the added where the file is VERSION?" reads as no one asks; a state (a
    participle) is asked bare, a thing a field names with its article."""
    saying = said("git diff", {"target": "3558579"})
    (state,) = saying.asks_record("added", "where the file is VERSION")
    (thing,) = saying.asks_record("author", 'of the commit whose message is "Fix"')
    assert "what is added where the file is VERSION?" in state and "the added" not in state, state
    assert "who is the author of the commit" in thing, thing


def test_a_field_named_for_the_one_thing_listed_is_asked_by_the_rest_of_its_name() -> None:
    """mcp-server-spreadsheet's `list_tables` gave one table, `{"table_name": "default"}`: "Look at the tables of the
    database and tell me the table name of the table." No wording names the thing twice; the field's own word stays
    where it is not the thing's ("the row count of the table")."""
    listing = said("list tables", {})
    named = listing.asks_field("table name", listed=True)
    assert named and all("table name" not in t and "name of the table" in t for t in named), named
    assert all("row count of the table" in t for t in listing.asks_field("row count", listed=True))


def test_a_name_says_its_digits_with_the_letters_before_them() -> None:
    """mcp-hashlib's `hash_md5` was asked of as "the hash md 5 for test", and mcp-sympy's `sympy_naturals0` as
    "sympy naturals 0", which then did not hold its answer, "Naturals0". A name's digits stay with the letters
    before them; a name's parts apart."""
    from mcprl.scenarios.lexicon import words_of

    assert words_of("hash_md5") == ["hash", "md5"] and words_of("sha3_224") == ["sha3", "224"]
    assert words_of("getItemById") == ["get", "item", "by", "id"] and words_of("MD5Hash") == ["md5", "hash"]
    assert words_of("naturals0") == ["naturals0"] and words_of("page_2") == ["page", "2"]
