"""Which of the grounded candidates a run keeps (mcprl.scenarios.selection.select, mcprl.scenarios.grounded.shortcut)
and what a result gives to ask about (mcprl.scenarios.results, mcprl.scenarios.record_tasks): properties, each seen
failing on a third-party server (server-memory, server-filesystem, server-everything)."""

from __future__ import annotations

import difflib
import json
from collections import Counter

import pytest

from mcprl.scenarios.candidates import candidates
from mcprl.scenarios.explored import Exploration, ExploredCall
from mcprl.scenarios.selection import select, stated_items
from mcprl.tools import ServerSpec, ToolPool
from tests.server_fork import shipped

pytestmark = pytest.mark.anyio


def _call(index: int, tool: str, arguments: dict, text: str) -> ExploredCall:
    return ExploredCall(index=index, session=0, tool=tool, arguments=arguments, text=text)


def test_a_question_that_states_more_than_another_asking_the_same_is_not_kept():
    """A knowledge graph's `open_nodes` was sent a real name beside made-up ones ("Team meeting", "hello world"); the
    question it grounded listed them all, beside one that named only the node. No kept task states what another
    kept task of the same field and answer states and more; a question stating nothing (a listing's) does not make
    one that names its record go."""

    kinds = {"Team meeting": ("event", "Book a room."), "Garden plan": ("project", "Plant tomatoes in May.")}

    def graph(*names: str) -> str:
        entities = [{"name": n, "entityType": kinds[n][0], "observations": [kinds[n][1]]} for n in names]
        return json.dumps({"entities": entities, "relations": []})

    calls = [
        _call(0, "open_nodes", {"names": ["Team meeting", "hello world"]}, graph("Team meeting")),
        _call(1, "open_nodes", {"names": ["knowledge-graph", "Team meeting", "test"]}, graph("Team meeting")),
        _call(2, "open_nodes", {"names": ["Team meeting"]}, graph("Team meeting")),
        _call(3, "open_nodes", {"names": ["Garden plan", "nothing"]}, graph("Garden plan")),
        _call(4, "read_graph", {}, graph("Team meeting", "Garden plan")),
    ]
    for seed in range(4):
        found = candidates(Exploration(calls=calls), {}, seed=seed)
        kept, dropped = select(found, 20, seed=seed)
        assert kept and dropped["duplicate"] > 0
        stated = [(t.metadata.get("field"), str(t.answer), stated_items(t)) for t in kept]
        for field, answer, items in stated:
            assert not [other for f, a, other in stated if (f, a) == (field, answer) and other and other < items], kept
        told = Counter(item for *_, items in stated for item in items)
        assert not {"hello world", "knowledge-graph", "test"} & set(told), [t.task for t in kept]
        # the one call naming only "Garden plan" beside a made-up name is kept: nothing states less
        assert any(t.answer == "project" and "garden plan" in stated_items(t) for t in kept), [t.task for t in kept]


def test_of_chains_that_answer_one_question_alike_the_kept_tasks_spread_over_the_tools():
    """A file server's `read_file` and `read_text_file` read a file alike: every question one grounds the other
    grounds too. Kept, they end with both tools, not all with the one listed first."""
    table = "name,qty\napples,4\npears,7\nplums,9\n"
    calls = [
        _call(0, "read_file", {"path": "fruit.csv"}, table),
        _call(1, "read_text_file", {"path": "fruit.csv"}, table),
    ]
    for seed in range(4):
        found = candidates(Exploration(calls=calls), {}, seed=seed)
        assert {t.reference[-1].tool for t in found} == {"read_file", "read_text_file"}
        kept, _ = select(found, 20, seed=seed)
        tools = Counter(t.reference[-1].tool for t in kept)
        assert set(tools) == {"read_file", "read_text_file"} and max(tools.values()) - min(tools.values()) <= 1, tools


def test_one_listing_asked_by_two_tools_in_other_words_is_one_question():
    """mcp-server-sqlite kept "What are the tables?" (`list_tables`) and "What are the tables of the database?" (a
    query of `read_query`): one question twice. A listing of two or more things, stating the same values, is one
    question whichever tool or words ask it; a listing of other things stays another."""
    tables = "[{'name': 'novels'}, {'name': 'cities'}]"
    calls = [
        _call(0, "list_tables", {}, tables),
        _call(1, "read_query", {"query": "SELECT name FROM sqlite_master WHERE type='table'"}, tables),
        _call(2, "list_views", {}, "[{'name': 'recent'}, {'name': 'top'}]"),
    ]
    for seed in range(3):
        kept, dropped = select(candidates(Exploration(calls=calls), {}, seed=seed), 20, seed=seed)
        answers = [sorted(t.answer) for t in kept if isinstance(t.answer, list)]
        assert answers.count(["cities", "novels"]) == 1 and dropped["duplicate"] >= 1, [t.task for t in kept]
        assert ["recent", "top"] in answers, [t.task for t in kept]


def test_one_listing_a_server_gives_in_another_order_each_time_is_one_question():
    """beancount-mcp lists its accounts from a set, in another order in each fresh server process: "What are the
    beancount accounts?" was kept twice, once per order. A listing of the same things in another order is one
    question."""
    accounts = ["Income:Salary", "Expenses:Rent", "Assets:Bank", "Equity:Opening"]
    calls = [
        ExploredCall(index=i, session=i, tool="accounts", arguments={}, text=json.dumps(order))
        for i, order in enumerate([accounts, accounts[::-1], accounts[1:] + accounts[:1]])
    ]
    for seed in range(3):
        kept, dropped = select(candidates(Exploration(calls=calls), {}, seed=seed), 20, seed=seed)
        listings = [t for t in kept if isinstance(t.answer, list)]
        assert len(listings) == 1 and dropped["duplicate"] >= 2, [(t.task, t.answer) for t in kept]


def test_a_tool_that_answers_only_what_another_answers_more_plainly_still_ends_a_kept_task():
    """ea-database-server's `export_query` was sent the queries that had worked on `read_query`, whose own varied
    ones (`LIMIT 2` of `LIMIT 5`) read fewer rows: every question the export grounded, a read grounded more plainly,
    and no kept task asked of the export. Where a tool ends no kept task, a question it answers in a short listing
    is asked of it."""
    rows = [{"id": i, "name": n, "price": p} for i, (n, p) in enumerate([("bolt", 0.25), ("wire", 3.5), ("jar", 2.75)])]
    calls = [
        _call(0, "read_query", {"query": "SELECT * FROM products LIMIT 2"}, json.dumps(rows[:2])),
        _call(1, "read_query", {"query": "SELECT * FROM products LIMIT 3"}, json.dumps(rows)),
        _call(2, "read_query", {"query": "SELECT COUNT(*) FROM products"}, json.dumps([{"COUNT(*)": 3}])),
        _call(3, "export_query", {"query": "SELECT * FROM products LIMIT 3", "format": "json"}, json.dumps(rows)),
    ]
    for seed in range(4):
        found = candidates(Exploration(calls=calls), {}, seed=seed)
        assert "export_query" in {t.reference[-1].tool for t in found}
        kept, _ = select(found, 20, seed=seed)
        tools = Counter(t.reference[-1].tool for t in kept)
        assert tools["export_query"] >= 1 and tools["read_query"] >= tools["export_query"], tools


async def test_a_task_asked_of_one_record_in_one_call_keeps_its_chain():
    """`shortcut` gives a task that finds its record the long way (a listing's line) the one call a person would
    make; a task whose one call already gives its record alone keeps that call, whatever other tool also finds it
    by name (it used to move every such task to the first such tool, and the tool it was grounded on to none)."""
    from mcprl.scenarios.grounded import shortcut

    async with ToolPool(ServerSpec.parse(shipped("inventory"))) as pool:
        async with pool.session() as session:
            sku = (await session.call("list_items", {})).text.split(" | ")[0]
            item = await session.call("get_item", {"sku": sku})
        call = _call(0, "get_item", {"sku": sku}, item.text)
        named = [t for t in candidates(Exploration(calls=[call]), {}, seed=0) if t.metadata.get("given")]
        assert named and all(t.metadata["records"] == 1 and len(t.reference) == 1 for t in named)
        chains = [t.reference for t in named]
        assert await shortcut(named, pool) == 0
    assert [t.reference for t in named] == chains


def test_a_line_of_measures_gives_each_and_a_count_labels_nothing():
    """A debug line ("Cache hit ratio 0.95, latency 150ms") is a list of measures, each asked for by its words; a
    line of counts ("Total: 2 files, 1 directories") gives no "total" of 2; a line that only mentions numbers
    ("Meeting at 10am, budget 4500 USD") is no list of measures; a number that is one part of a measure of several
    ("78 weeks and 6 days") is no value alone."""
    from mcprl.scenarios.results import sentence_fields

    assert sentence_fields("Debug: Cache hit ratio 0.95, latency 150ms") == [
        ("Cache hit ratio", "0.95"),
        ("latency", "150ms"),
    ]
    assert sentence_fields("Total: 2 files, 1 directories") == []
    assert sentence_fields("Meeting at 10am, budget 4500 USD") == []
    # (mcp-simple-timeserver's "Human readable: 78 weeks and 6 days" was asked as 78: one part of a measure of two)
    assert sentence_fields("Human readable: 78 weeks and 6 days\nUptime: 3 hours 20 minutes") == []
    assert sentence_fields("Your order total is 45 dollars.") == [("order total", "45")]
    calls = [
        _call(0, "get_annotated_message", {"messageType": "debug"}, "Debug: Cache hit ratio 0.95, latency 150ms"),
        _call(1, "list_directory_with_sizes", {"path": "."}, "[FILE] a.txt  12 B\n\nTotal: 2 files, 1 directories"),
    ]
    asked = {t.answer: t.task for seed in range(4) for t in candidates(Exploration(calls=calls), {}, seed=seed)}
    assert {0.95, 150} <= set(asked), asked
    assert "cache hit ratio" in asked[0.95].lower() and "latency" in asked[150].lower(), asked
    assert not [task for task in asked.values() if "total" in task.lower()], asked


def test_a_listing_of_resource_links_under_a_heading_asks_for_them_all():
    """A tool that answers a heading and resource links (server-everything's `get-resource-links`): the links' URIs
    are the server's data, the heading is none of the names, and the task asks for them all."""
    from mcprl.tools.content import parse_blocks
    from mcprl.tools.convert import render

    uris = ["demo://resource/dynamic/blob/1", "demo://resource/dynamic/text/2", "demo://resource/dynamic/blob/3"]
    blocks = [{"type": "text", "text": "Here are 3 resource links to resources available in this server:"}]
    blocks += [{"type": "resource_link", "uri": u, "name": f"Resource {i}"} for i, u in enumerate(uris, 1)]
    text, data = render(parse_blocks(blocks), None, 4000)
    assert data == text and all(u in data for u in uris)
    call = ExploredCall(index=0, session=0, tool="get_resource_links", arguments={}, text=text, data_text=None)
    listings = [t for t in candidates(Exploration(calls=[call]), {}, seed=0) if t.metadata["kind"] == "listing"]
    assert [sorted(t.answer) for t in listings] == [sorted(uris)], [(t.task, t.answer) for t in listings]
    assert not [u for u in uris if u in listings[0].task]


@pytest.mark.timeout(30)
def test_a_listing_under_a_title_and_a_subtitle_is_read_past_both():
    """mcp-shrimp-task-manager answers guidance in Markdown ("## Codebase Analysis" then a sentence ending in a colon):
    grounding never returned, the second heading never taken off the listing. Both headings go, and the names under
    them are asked for."""
    text = "# Tasks\n## Open:\n- draft\n- review\n- publish"
    call = ExploredCall(index=0, session=0, tool="list_tasks", arguments={}, text=text)
    tasks = candidates(Exploration(calls=[call]), {}, seed=0)
    assert [sorted(t.answer) for t in tasks if t.metadata["kind"] == "listing"] == [["draft", "publish", "review"]]


def test_a_chain_keeps_no_call_that_only_found_a_list_the_task_states_item_by_item():
    """mcp-server-math's `max` was sent numbers an earlier `compare` gave: "What is the max of 0.0, 4 and 17.0?" was
    grounded on both calls, so its demonstration and reference made a call no one needs. A task that states every
    item of a list argument needs no call that found them; one that does not state them all keeps it."""
    first = ExploredCall(
        index=0, session=0, tool="compare", arguments={"numbers": [3, 4]}, text='{"result": [0.0, 4, 17.0]}'
    )
    most = ExploredCall(
        index=1,
        session=0,
        tool="max",
        arguments={"numbers": [0.0, 4, 17.0]},
        sources={"numbers": "result:0"},
        parents=[0],
        text='{"result": 17.0, "operation": "max"}',
    )
    tasks = candidates(Exploration(calls=[first, most]), {}, seed=0)
    asked = [t for t in tasks if t.reference[-1].tool == "max"]
    assert asked and all([c.tool for c in t.reference] == ["max"] for t in asked), [t.task for t in asked]
    ids = ExploredCall(
        index=1,
        session=0,
        tool="get_orders",
        arguments={"ids": ["ord-7a1f", "ord-93c2"]},
        sources={"ids": "result:0"},
        parents=[0],
        text='{"customer": "Ada", "total": 17.5}',
    )
    listing = ExploredCall(
        index=0, session=0, tool="recent_orders", arguments={}, text='{"ids": ["ord-7a1f", "ord-93c2"]}'
    )
    from mcprl.scenarios.replay import needed

    assert [c.tool for c in needed("What is the total of the orders of Ada?", [listing, ids])] == [
        "recent_orders",
        "get_orders",
    ]


def test_a_field_that_says_back_what_the_call_was_sent_is_asked_for_by_no_task():
    """Seen on dbhub's `search_objects`: its results repeat the request (`"detail_level": "names"`, the default when
    none was sent), and tasks asked for it ("What is the detail level of the object ...?" -> names). A field named as
    a parameter of its tool that held what was sent, every time one was, is the request said back: no task asks for
    it, whatever the calls that left it to its default gave; the facts beside it are asked for."""

    def found(kind: str, level: str, names: list[str]) -> str:
        return json.dumps({"object_type": kind, "detail_level": level, "count": len(names), "objects": names})

    calls = [
        _call(0, "search_objects", {"object_type": "table"}, found("table", "names", ["employee", "salary"])),
        _call(1, "search_objects", {"object_type": "index"}, found("index", "names", ["PRIMARY"])),
        _call(2, "search_objects", {"object_type": "table", "detail_level": "full"}, found("table", "full", ["x"])),
        _call(3, "search_objects", {"object_type": "column", "detail_level": "names"}, found("column", "names", [])),
    ]
    for seed in range(4):
        tasks = candidates(Exploration(calls=calls), {}, seed=seed)
        assert tasks and all(t.metadata.get("field") not in ("detail_level", "object_type") for t in tasks), [
            (t.task, t.answer) for t in tasks
        ]
        assert not any(t.answer in ("names", "full", "table", "index", "column") for t in tasks), [
            t.task for t in tasks
        ]


def test_a_record_is_not_named_by_a_name_its_parts_each_have():
    """Seen on excel-tools-mcp: a workbook's inspection holds its sheets, each with a `name`; tasks asked "What is the
    sheet count of the inspect "Orders"?", naming the whole result by its first sheet. A name key a record holds more
    than once names its parts, not the record."""
    sheets = [{"name": "Orders", "rows": 6}, {"name": "Staff", "rows": 4}]
    text = json.dumps({"file_path": "/srv/shop.xlsx", "sheet_count": 2, "sheets": sheets, "backend": "openpyxl"})
    calls = [_call(0, "excel_inspect", {"file_path": "/srv/shop.xlsx"}, text)]
    for seed in range(6):
        tasks = candidates(Exploration(calls=calls), {}, seed=seed)
        assert tasks and not any("Orders" in t.task or "Staff" in t.task for t in tasks), [t.task for t in tasks]


def test_a_field_a_listing_was_filtered_by_is_still_asked_for_where_it_varies():
    """A to-do list's `list_tasks(status="done")` lists only done tasks (each `status: done`, what was sent), but its
    listing with no filter holds every status: the field is the tasks' data, asked for there."""
    rows = {"Renew passport": "done", "Team meeting": "active", "Weekly report": "pending"}

    def listing(status: str | None) -> str:
        return json.dumps([{"title": t, "status": s} for t, s in rows.items() if status in (None, s)])

    calls = [_call(0, "list_tasks", {}, listing(None)), _call(1, "list_tasks", {"status": "done"}, listing("done"))]
    asked = {t.metadata.get("field") for seed in range(6) for t in candidates(Exploration(calls=calls), {}, seed=seed)}
    assert "status" in asked, asked


def test_no_field_answer_says_back_a_value_its_task_states():
    """mcp-simple-timeserver's `get_current_time` of timezone "Europe/Warsaw" answered `"timezone": "Europe/Warsaw
    (CET)"`, and a task asked for it: an answer holding a worded value the call was sent is the request said back,
    asked for by no task; the facts beside it are asked for."""
    result = {"timezone": "Europe/Warsaw (CET)", "day_of_week": "Monday", "calendar": "gregorian"}
    calls = [_call(0, "get_current_time", {"timezone": "Europe/Warsaw"}, json.dumps(result))]
    tasks = [t for seed in range(6) for t in candidates(Exploration(calls=calls), {}, seed=seed)]
    assert tasks and all("Europe/Warsaw" not in str(t.answer) for t in tasks), [(t.task, t.answer) for t in tasks]
    assert any(t.answer == "Monday" for t in tasks)


def test_tasks_answered_by_zero_are_kept_only_where_no_other_is_left():
    """mcp-sympy grounded `im`, `arg`, `degree`, `diff` of "2 + 3", each 0: the likeliest guess, as a yes or no is.
    Kept tasks answered by 0 come after every other, on whichever tool: asked for fewer than the tasks that are not,
    none is kept; asked for more, they fill the rest."""
    calls = [
        _call(i, tool, {"expr": "2 + 3"}, str(value))
        for i, (tool, value) in enumerate([("im", 0), ("arg", 0), ("degree", 0), ("gamma", 24), ("evalf", 5.5)])
    ]
    found = [t for t in candidates(Exploration(calls=calls), {}, seed=0)]
    assert sorted(str(t.answer) for t in found) == ["0", "0", "0", "24", "5.5"], [(t.task, t.answer) for t in found]
    for seed in range(4):
        kept, dropped = select(found, 2, seed=seed)
        assert sorted(str(t.answer) for t in kept) == ["24", "5.5"] and dropped["beyond the number asked for"] == 3
        kept, _ = select(found, 4, seed=seed)
        assert [str(t.answer) for t in kept][:2] != ["0", "0"] and len(kept) == 4
        assert sum(t.answer == 0 for t in kept) == 2 and all(t.answer != 0 for t in kept[:2])


def test_a_one_letter_or_yes_or_no_value_answers_no_task():
    """mcp-sympy's `Identity` of 5 printed "I", and a task asked for it: any reply with "I" in it held that answer;
    mcp-simple-timeserver's `dst_active` "No" a guess holds half the time. No task is answered by one letter or by
    yes or no, whether the whole result or a field; nor by a number of a function it left unevaluated
    (`Derivative(5, x)`: the derivative of 2 + 3 is not 5)."""
    calls = [
        _call(0, "sympy_identity", {"n": 5}, "I"),
        _call(1, "get_unit", {"quantity": "temperature"}, json.dumps({"unit": "C", "name": "Celsius"})),
        _call(2, "get_current_time", {"timezone": "Europe/Warsaw"}, json.dumps({"dst_active": "No", "offset": 60})),
        _call(3, "sympy_atan", {"expr": "1"}, "pi/4"),  # ... nor a term of an expression: pi/4 answers no 4
        # ... nor a number a function left unevaluated was given: the derivative of 5 is no 5
        _call(4, "sympy_derivative", {"expr": "2 + 3", "variable": "x"}, "Derivative(5, x)"),
        _call(6, "sympy_fresnels", {"expr": "3 - 4"}, "-fresnels(1)"),  # (negated: the Fresnel S of -1 is no 1)
        # ... nor the base of a power the call was sent the exponent of ("9**19" is no 9)
        _call(7, "sympy_symbolic_power", {"expr": "2 + 7", "n": "19"}, "9**19"),
        # ... nor the coefficient of a term over the expression's symbols (LaTeX's "7 x" of "x**1 + 6*x" is no 7)
        _call(5, "sympy_latex", {"expr": "x**1 + 6*x"}, "7 x"),
    ]
    tasks = [t for seed in range(6) for t in candidates(Exploration(calls=calls), {}, seed=seed)]
    assert tasks and all(len(str(t.answer)) > 1 and t.answer not in ("No", 7, 1, 9) for t in tasks), [
        (t.task, t.answer) for t in tasks
    ]


def test_no_two_kept_tasks_read_alike_with_one_answer():
    """dbhub's `execute_sql` read a table with eight LIMITs over its 9 rows; each grounded "Find the rows of the
    department table and tell me its count." (a question said by what its result holds states no value), and all
    eight were kept, their queries counted as what they state. No two kept tasks read alike with one answer; a
    sample's count (`LIMIT n`) is asked as no total, and a listing of all there is (a table's columns) is asked how
    many it holds, once."""
    rows = [
        {"dept_no": f"d00{i}", "dept_name": name}
        for i, name in enumerate("Sales Support Legal Ops HR IT QA Art Lab".split())
    ]

    def reply(sql: str) -> str:  # (dbhub's own form)
        table = rows if "LIMIT" in sql else [{"name": "dept_no"}, {"name": "dept_name"}]
        statement = {"sql": sql, "rows": table, "count": len(table)}
        return json.dumps({"success": True, "data": {"statements": [statement], "source_id": "default"}})

    queries = [f"SELECT * FROM department LIMIT {n}" for n in (10, 12, 13, 17, 28, 33, 53, 62)]
    queries += ["SELECT name FROM pragma_table_info('department')"] * 2
    calls = [_call(i, "execute_sql", {"sql": sql}, reply(sql)) for i, sql in enumerate(queries)]
    for seed in range(4):
        kept, dropped = select(candidates(Exploration(calls=calls), {}, seed=seed), 16, seed=seed)
        said = Counter((t.task, str(t.answer)) for t in kept)
        assert kept and max(said.values()) == 1, said
        assert [t.answer for t in kept if t.metadata["kind"] == "count"] == [2], said
        assert not any(t.answer == 9 for t in kept), said


def test_one_question_two_tools_answer_alike_is_kept_once():
    """A database server's `read_query` and `export_query` (as JSON) listed a table's columns alike: each grounded
    "What are the columns of the orders table?", and both were kept, their tools (and the export's format) told them
    apart. Tasks of the same words and answer are one question, whichever tool's chain grounds them."""
    query = "SELECT name FROM pragma_table_info('orders')"
    listed = json.dumps([{"name": n} for n in ("id", "product_id", "quantity", "customer", "date")], indent=2)
    calls = [
        _call(0, "read_query", {"query": query}, listed),
        _call(1, "export_query", {"query": query, "format": "json"}, listed),
    ]
    for seed in range(4):
        found = candidates(Exploration(calls=calls), {}, seed=seed)
        assert len({t.reference[-1].tool for t in found}) == 2, [t.task for t in found]
        kept, dropped = select(found, 16, seed=seed)
        said = Counter((t.task, str(t.answer)) for t in kept)
        assert kept and max(said.values()) == 1 and dropped["duplicate"] > 0, said


def test_a_field_of_the_one_record_of_a_listing_beside_others_is_asked_of_that_record():
    """A knowledge graph's `read_graph` gives `{"entities": [...], "relations": [one]}`: the one relation's fields
    were asked of the whole ("What is the graph from?", "What is the relation type of the graph?"). A field of a
    listing's one record, beside listings of other kinds, is asked of that record."""
    graph = {
        "entities": [
            {"name": "Team meeting", "entityType": "project", "observations": ["Check the flights to Oslo."]},
            {"name": "Weekly report", "entityType": "person", "observations": ["Send the draft to Sam by Friday."]},
        ],
        "relations": [{"from": "Weekly report", "to": "Team meeting", "relationType": "prepares"}],
    }
    for entities in (graph["entities"], []):  # (beside the entities, or beside none of them)
        call = _call(0, "read_graph", {}, json.dumps({**graph, "entities": entities}, indent=2))
        asked = [
            t
            for seed in range(6)
            for t in candidates(Exploration(calls=[call]), {}, seed=seed)
            if t.metadata.get("field") in ("from", "to", "relationtype")
        ]
        assert asked and all("relation" in t.task.replace("relation type", "") for t in asked), [t.task for t in asked]


def test_the_one_record_a_search_found_is_asked_for_by_what_the_search_was_about():
    """server-memory's `search_nodes` for "Dana" found one entity (`{"entities": [one], "relations": []}`): its
    fields were asked only after the call's order ("Search nodes with query budget. What is the entity type?"), where
    a listing's record found by a search is asked for by what it was about. So is the one record a search found; a
    record that is no listing (a city's weather) is asked for by its call, as before, and so is a listing of what a
    path names."""
    entity = {"type": "entity", "name": "Weekly report", "entityType": "person", "observations": ["Ask Dana."]}
    found = {"entities": [entity], "relations": []}
    calls = [
        _call(0, "search_nodes", {"query": "Dana"}, json.dumps(found, indent=2)),
        _call(1, "get_weather", {"city": "Oslo"}, json.dumps({"city": "Oslo", "temperature": 4, "conditions": "rain"})),
    ]
    tasks = [t for seed in range(6) for t in candidates(Exploration(calls=calls), {}, seed=seed)]
    searched = [t for t in tasks if t.reference[-1].tool == "search_nodes" and t.metadata.get("given") == ["Dana"]]
    assert any("query" not in t.task for t in searched), [t.task for t in searched]
    # (nor is a field asked that says only which listing the record is in: "type": "entity" of the entities)
    assert searched and all(t.answer != "entity" for t in tasks), [(t.task, t.answer) for t in tasks]
    weather = [t for t in tasks if t.reference[-1].tool == "get_weather"]
    assert weather and all("Oslo" in t.task for t in weather)
    # (a value naming what a call looks at is no topic: the one file of a folder "docs" is not "the tree about docs")
    tree = _call(0, "directory_tree", {"path": "docs"}, json.dumps([{"name": "todo.txt", "type": "file"}]))
    in_folder = [t for seed in range(6) for t in candidates(Exploration(calls=[tree]), {}, seed=seed)]
    assert in_folder and not any("about docs" in t.task for t in in_folder), [t.task for t in in_folder]


def test_the_one_record_of_a_listing_is_asked_as_a_record_in_it_not_as_what_the_call_named():
    """server-filesystem's `directory_tree` of "docs" gave `[{"name": "todo.txt", "type": "file"}]`: its one record's
    fields were asked of the folder ("Find the directory tree for docs and tell me its type." -> file, of a
    folder). A field of a listing's one record, alone or wrapped (`{"commits": [one], "total": 1}`), is asked of that
    record in what the call gave."""
    tree = _call(0, "directory_tree", {"path": "docs"}, json.dumps([{"name": "todo.txt", "type": "file"}], indent=2))
    commit = {"hash": "a1b2c3d", "author": "Ann Lee", "message": "Add the changelog"}
    log = _call(1, "git_log", {"max_count": 1}, json.dumps({"commits": [commit], "total": 1}, indent=2))
    for call, item in ((tree, "entry"), (log, "commit")):
        asked = [
            t
            for seed in range(6)
            for t in candidates(Exploration(calls=[call]), {}, seed=seed)
            if t.metadata.get("field") in ("name", "type", "author", "message")
        ]
        assert asked and all(f"{item} in the" in t.task or "todo.txt" in t.task for t in asked), [t.task for t in asked]


def test_a_line_a_diff_adds_against_every_revision_is_asked_of_one():
    """mcp-server-git's `git_diff` against five revisions showed the same uncommitted line added to TODO.md: each
    grounded "In the git diff for <revision>, what is the file where "- support Fahrenheit" is added?" -> TODO.md, a
    quarter of the run's tasks one question. A value that changes no answer of a question that also names what picks
    its record out (the line) makes no other question; one that does (the revision an author is asked of) does."""
    revisions = [f"{k:x}" * 40 for k in range(10, 14)]
    authors = ["Ann Lee", "Bob Stone", "Carla Diaz", "Ann Lee"]
    calls = []
    for k, revision in enumerate(revisions):
        committed = [f"line {j}" for j in range(k)]  # each revision a line further behind the work tree
        diff = [
            "diff --git a/TODO.md b/TODO.md",
            *difflib.unified_diff(
                ["# TODO"], ["# TODO", "- support Fahrenheit"], "a/TODO.md", "b/TODO.md", lineterm=""
            ),
        ]
        if committed:
            notes = committed + ["line 9"]
            diff += ["diff --git a/notes.txt b/notes.txt"]
            diff += difflib.unified_diff(committed, notes, "a/notes.txt", "b/notes.txt", lineterm="")
        calls.append(_call(2 * k, "git_diff", {"target": revision}, "\n".join(diff)))
        commit = f"commit {revision}\nAuthor: {authors[k]}\nDate: 2024-03-0{k + 1}\n\n    Change {k}\n"
        calls.append(_call(2 * k + 1, "git_show", {"revision": revision}, commit))
    for seed in range(4):
        kept, dropped = select(candidates(Exploration(calls=calls), {}, seed=seed), 40, seed=seed)
        added = [t for t in kept if t.answer == "TODO.md" and "- support Fahrenheit" in t.metadata.get("given", [])]
        assert len(added) == 1 and dropped["duplicate"] > 0, [t.task for t in added]
        shown = {t.reference[-1].arguments["revision"] for t in kept if t.metadata.get("field") == "author"}
        assert shown == set(revisions), [t.task for t in kept]


def test_no_kept_task_states_a_number_only_a_computation_gives():
    """A math server's `divide` was sent what `sqrt` gave another session, and a task said it: "Divide
    2.8284271247461903 by 18.25." No one types sixteen decimals; a number a person gives ("2.25", an id, a price)
    is stated as before."""
    calls = [
        _call(0, "divide", {"a": 2.8284271247461903, "b": 18.25}, "0.1549823082052707"),
        _call(1, "divide", {"a": 2.25, "b": 0.5}, "4.5"),
        _call(2, "sqrt", {"x": 8}, "2.8284271247461903"),
    ]
    tasks = candidates(Exploration(calls=calls), {}, seed=0)
    kept, dropped = select(tasks, len(tasks), seed=0)
    assert dropped["states a number only a computation gives"] >= 1, (dropped, [t.task for t in tasks])
    assert {t.answer for t in kept} >= {4.5, 2.8284271247461903}, [t.task for t in kept]
    assert not any("2.828" in t.task for t in kept), [t.task for t in kept]


def test_no_task_states_a_token_a_call_computed_whole():
    """mcp-hashlib: `data` took "test", then the digests results gave, and most tasks hashed a digest: "Tell me the
    hash md5 for 52bbea75ee75a6f1d24781d56e6c8ffb9b76e1024013b516bbaaac27e21ae9e0." No one types a digest (nor an id a
    server issued) that a call gave whole; the task on the text is kept."""
    digest = "098f6bcd4621d373cade4e832627b4f6"
    calls = [
        _call(0, "hash_md5", {"data": "test"}, digest),
        # (sent in another session, as a value that worked: no chain links it to the call that gave it)
        _call(1, "hash_sha1", {"data": digest}, "4028a0e356acc947fcd2bfbf00cef11e128d484a"),
    ]
    calls[1].session, calls[1].sources["data"] = 1, "worked"
    tasks = [t for seed in range(4) for t in candidates(Exploration(calls=calls), {}, seed=seed)]
    assert tasks and not any(digest in t.task for t in tasks), [t.task for t in tasks]
    assert digest in {str(t.answer) for t in tasks}, [(t.task, t.answer) for t in tasks]


def test_no_kept_task_recites_more_values_than_a_person_gives():
    """@modelcontextprotocol/server-sequential-thinking's one tool takes a thought, its number, the total, whether
    another is needed and which it revises; it answers what it was sent and a count of the thoughts so far. Every
    task recited five values: "What is the thought history length of the sequential thinking with thought 8, thought
    number 11, total thoughts 6 and revises thought 12, without next thought needed?" A question that states more
    than three values is an argument dump; one that states three is asked."""
    thought = {
        "thought": "8",
        "nextThoughtNeeded": False,
        "thoughtNumber": 11,
        "totalThoughts": 6,
        "revisesThought": 12,
    }
    said = {"thoughtNumber": 11, "totalThoughts": 11, "nextThoughtNeeded": False, "thoughtHistoryLength": 3}
    calls = [
        _call(0, "sequentialthinking", thought, json.dumps(said)),
        _call(1, "convert_time", {"source": "Asia/Tokyo", "time": "12:00", "target": "UTC"}, "Time difference: -9h"),
    ]
    tasks = [t for seed in range(4) for t in candidates(Exploration(calls=calls), {}, seed=seed)]
    kept, dropped = select(tasks, len(tasks), seed=0)
    assert dropped["states more than 3 values"] >= 1, (dropped, [t.task for t in tasks])
    assert all(len(t.metadata.get("given") or []) <= 3 for t in kept), [t.task for t in kept]
    assert any(t.reference[-1].tool == "convert_time" for t in kept), [t.task for t in kept]


def test_no_kept_task_asks_a_thing_of_itself():
    """memory-bank-mcp's `get_current_mode` answers "Current mode: architect": "What is the current mode of the current
    mode?" asked the field of a record named by the field itself, and was kept in every run. That field is asked as
    the thing itself ("Tell me the current mode."), the other field of that answer as one of it."""
    text = "Current mode: architect\nMemory Bank status: INACTIVE\nUMB mode active: No"
    tasks = [
        t
        for seed in range(4)
        for t in candidates(Exploration(calls=[_call(0, "get_current_mode", {}, text)]), {}, seed=seed)
    ]
    kept, _ = select(tasks, len(tasks), seed=0)
    assert not any("mode of the current mode" in t.task for t in tasks), [t.task for t in tasks]
    assert {t.answer for t in kept} == {"architect", "INACTIVE"}, [t.task for t in kept]


def test_a_value_nested_in_a_request_that_changes_no_answer_makes_no_other_question():
    """mcp-text-editor's `get_text_file_contents` takes a list of requests, each a file and its ranges; its one record
    of a range says the lines read and the file's `total_lines`. Thirteen of sixteen kept tasks asked a file's total
    lines "with start 12", "with start 10", "with start 14 and end 24": a start or an end nested in the request, which
    changes no total, made each another question. Values are compared part by part, however deep: one question per
    file and field that the parts change; a part that changes the answer (the lines read) still makes its own."""
    files = {
        "/srv/docs/stock.csv": ["apple,3", "pear,7", "fig,2"],
        "/srv/docs/garden.md": [f"row {k}" for k in range(8)],
    }
    ranges = [{"start": 1, "end": 1}, {"start": 2, "end": 2}, {"start": 3}, {"start": 2}, {"start": 3, "end": 5}]
    calls = []
    for path, lines in files.items():
        for span in ranges:
            end = min(span.get("end", len(lines)), len(lines))
            record = {
                "content": "\n".join(lines[span["start"] - 1 : end]),
                "start_line": span["start"],
                "end_line": end,
                "total_lines": len(lines),
            }
            arguments = {"files": [{"file_path": path, "ranges": [span]}]}
            said = json.dumps({path: {"ranges": [record]}})
            calls.append(_call(len(calls), "get_text_file_contents", arguments, said))
    for seed in range(4):
        found = candidates(Exploration(calls=calls), {}, seed=seed)
        kept, _ = select(found, 40, seed=seed)
        totals = Counter(t.answer for t in found if t.metadata.get("field") == "total_lines")
        assert totals[3] > 1 and totals[8] > 1, [t.task for t in found]
        # one question of each file's total, the plainest: stating no end of a range
        asked = [t for t in kept if t.metadata.get("field") == "total_lines"]
        assert sorted(t.answer for t in asked) == [3, 8], [t.task for t in asked]
        assert not any("end" in t.reference[-1].arguments["files"][0]["ranges"][0] for t in asked), asked
        # the line read changes with the range: a question of each
        lines = {t.answer for t in kept if t.metadata.get("field") == "content"}
        assert set(files["/srv/docs/stock.csv"]) <= lines, [t.task for t in kept]
