"""Where exploring's arguments come from (mcprl.scenarios.values, mcprl.scenarios.value_sources): values drawn from
the arms, as a person gives them, and what answers and errors teach about them."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

# a tool's one parameter, an SQL query
SQL = {
    "type": "object",
    "properties": {"query": {"type": "string", "description": "SELECT SQL query to execute"}},
    "required": ["query"],
}


def test_the_items_of_a_list_a_write_is_sent_name_different_things_as_a_person_names_them():
    """Entities a knowledge graph is sent in one call are different entities, each named and typed as a person
    would, whatever values of other fields results held (a status is no entity's name)."""
    import random

    from mcprl.scenarios.values import Knowledge, SeenValue

    entity = {"type": "object", "properties": {"name": {"type": "string"}, "entityType": {"type": "string"}}}
    schema = {
        "type": "object",
        "properties": {
            "entities": {"type": "array", "minItems": 2, "items": {**entity, "required": ["name", "entityType"]}}
        },
        "required": ["entities"],
    }
    knowledge = Knowledge([], writers=frozenset({"create_entities"}))
    knowledge.seen = [SeenValue(value="active", field="status", call=0), SeenValue(value="2 + 3", field="", call=1)]
    for seed in range(6):
        args, _ = knowledge.arguments("create_entities", schema, session=1, rng=random.Random(seed))
        names = [e["name"] for e in args["entities"]]
        assert len(set(names)) == len(names) >= 2, args
        assert not {"active", "2 + 3"} & {v for e in args["entities"] for v in e.values()}, args
    # a list of a length the tool refused is not sent again while another is left ("sqrt requires one input")
    numbers = {
        "type": "object",
        "properties": {"numbers": {"type": "array", "items": {"type": "number"}}},
        "required": ["numbers"],
    }
    lengths = set()
    for index in range(3):
        args, leaves = knowledge.arguments("sqrt", numbers, session=1, rng=random.Random(index))
        assert len(args["numbers"]) not in lengths, args
        lengths.add(len(args["numbers"]))
        knowledge.learn(
            "sqrt", args, leaves, index=index, session=1, text="requires one input", is_error=True, error_kind=None,
            values=[],
        )  # fmt: skip


def test_results_are_read_as_records_and_arguments_take_the_shape_their_description_asks_for():
    import random

    from mcprl.scenarios.lexicon import probes
    from mcprl.scenarios.results import result_records
    from mcprl.scenarios.values import Knowledge, SeenValue

    # a server that prints Python's repr() of its rows
    assert result_records("[{'name': 'customers'}, {'name': 'orders'}]", None) == [
        [("name", "customers")],
        [("name", "orders")],
    ]
    assert result_records("P-1 | mug | price: 2\nP-2 | cup | price: 3", None)[1] == [
        ("", "P-2"),
        ("", "cup"),
        ("price", "3"),
    ]
    assert result_records("From: a@b.c\nSubject: hi", {"result": "From: a@b.c\nSubject: hi"}) == [
        [("From", "a@b.c"), ("Subject", "hi")]
    ]
    # a listing wrapped with what is said of it (a total, a flag, a note): its records, none taking the total for
    # its own ("the total count of the commit "Fix typo""); an object holding a list is one record
    wrapped = {"success": True, "commits": [{"hash": "a1", "message": "Fix typo"}], "totalCount": 1, "note": None}
    assert result_records(json.dumps(wrapped), wrapped) == [[("hash", "a1"), ("message", "Fix typo")]]
    person = {"name": "Ann", "orders": [{"id": 1}, {"id": 2}]}
    assert result_records(json.dumps(person), None) == [[("name", "Ann"), ("id", 1), ("id", 2)]]
    # records of `key: value` lines one after another, under a heading
    log = "Commit history:\nCommit: a1\nAuthor: Ann\nCommit: b2\nAuthor: Bob"
    assert result_records(log, None) == [[("Commit", "a1"), ("Author", "Ann")], [("Commit", "b2"), ("Author", "Bob")]]
    # records blank lines divide, each under its heading, a count after them (mcp-alchemy's rows): no record's field
    rows = "1. row\nid: 1\nname: Steel bolt\n\n2. row\nid: 2\nname: Oak plank\n\nResult: 2 rows"
    assert result_records(rows, None) == [[("id", "1"), ("name", "Steel bolt")], [("id", "2"), ("name", "Oak plank")]]
    # a table as rows under a row of column names, beside what is said of it (excel-mcp-server's `read_range`): its
    # rows; rows with no names are no table of records
    grid = {"range": "A1:C3", "values": [["id", "product", "qty"], [1, "Steel bolt", 50], [2, "Oak plank", 2]]}
    assert result_records(json.dumps(grid), None)[1] == [("id", 2), ("product", "Oak plank"), ("qty", 2)]
    assert result_records("[[1, 2], [3, 4]]", None) == [[("", 1), ("", 2), ("", 3), ("", 4)]]
    # a line of `key: value` pairs a record (a comma inside a value keeps the line whole)
    rows = "name: Carla Diaz, team: Sales, hours: 31\nname: Dev Patel, team: Support, hours: 12"
    assert result_records(rows, None)[1] == [("name", "Dev Patel"), ("team", "Support"), ("hours", "12")]
    assert result_records("Date: Mon, 3 Mar 2025\nAuthor: Ann", None) == [
        [("Date", "Mon, 3 Mar 2025"), ("Author", "Ann")]
    ]
    # columns that spaces pad (server-filesystem's sizes): a value a cell, never the padded line (it was sent on as
    # a pattern, and stated: 'with exclude patterns "[FILE] todo.txt        128 B"')
    sized = "[FILE] data.csv                  24 B\n[DIR] docs                    \n\nCombined size: 24 B"
    assert {v for r in result_records(sized, None) for _, v in r} == {"[FILE] data.csv", "24 B", "[DIR] docs"}
    # (... but a label padded from its value is one pair: git's "modified:   TODO.md")
    status = "Changes not staged for commit:\n\tmodified:   TODO.md\n\tnew file:   CHANGELOG.md"
    assert {("modified", "TODO.md"), ("new file", "CHANGELOG.md")} <= set(result_records(status, None)[0])
    # an SQL parameter is sent a query over a table some result named; a time one, a time first
    knowledge = Knowledge([])
    knowledge.seen = [SeenValue(value="orders", field="name", call=3, session=0)]
    rng = random.Random(0)
    drawn = [knowledge.arguments("run", SQL, 0, rng) for _ in range(40)]
    assert "SELECT * FROM orders LIMIT 5" in {args["query"] for args, _ in drawn if args}
    assert re.fullmatch(r"\d\d:\d\d", probes("time", "Time to convert in 24-hour format (HH:MM)")[0])


def test_sources_that_keep_failing_a_parameter_are_dropped_and_a_tool_with_one_live_value_runs_out():
    """A repository path the server's command line fixes: the sources whose values keep failing on it
    (blamed by name) are dropped for it, so a tool of that one parameter runs out of calls once its one
    value that works was sent, and the exploration reports that value as the server's context. A short
    value the error text holds inside a word ("all" in "allowed") is not blamed."""
    import random

    from mcprl.scenarios.phrasing import noun_of
    from mcprl.scenarios.results import result_records
    from mcprl.scenarios.values import Drawn, Knowledge, SeenValue

    knowledge = Knowledge(["/srv/r"])  # the server's command line names the repository
    status = {"type": "object", "properties": {"repo_path": {"type": "string"}}, "required": ["repo_path"]}
    branch = {
        "type": "object",
        "properties": {"repo_path": {"type": "string"}, "kind": {"type": "string"}},
        "required": ["repo_path", "kind"],
    }

    def call(tool: str, args: dict, error: str | None) -> None:
        leaves = [Drawn(path=k, name=k, arm="context", value=v) for k, v in args.items()]
        text, failed = error or "On branch main", bool(error)
        knowledge.learn(tool, args, leaves, index=0, session=0, text=text, is_error=failed, error_kind=None, values=[])

    call("status", {"repo_path": "/srv/r"}, None)
    call("branch", {"repo_path": "/srv/o", "kind": "all"}, "Repository path '/srv/o' is outside the allowed repository")
    assert repr("all") not in knowledge.blamed["branch", "kind"]
    assert repr("/srv/o") in knowledge.blamed["branch", "repo_path"]
    rng = random.Random(0)
    bad = 0  # every new value an arm draws for the status tool fails, until its sources run out
    while (drawn := knowledge.arguments("status", status, 1, rng)) is not None:
        args, leaves = drawn
        bad += 1
        error = f"Repository path '{args['repo_path']}' is outside the allowed repository '/srv/r'"
        knowledge.learn(
            "status", args, leaves, index=bad, session=1, text=error, is_error=True, error_kind=None, values=[]
        )
        assert bad <= 30, "arms that keep failing were not dropped"
    # the server's context: the one value that worked is one its command line names
    assert knowledge.fixed("repo_path")
    knowledge.context = []  # one value that worked, but not one in plain view: not the server's context
    assert not knowledge.fixed("repo_path")
    knowledge.context = ["/srv/r"]
    knowledge.refused["repo_path"].add(repr("/srv/r"))  # a tool refused it (a folder, where a file is read)
    assert not knowledge.fixed("repo_path")
    knowledge.refused["repo_path"].clear()
    # new values a result gave (new sources, untried for the parameter) change nothing: the context is sent alone
    knowledge.seen += [SeenValue(value=v, field=f, call=9) for f, v in [("path", "/srv/other"), ("author", "Ann")]]
    drawn = [knowledge.arguments("branch", branch, 1, rng) for _ in range(20)]
    assert {args["repo_path"] for args, _ in filter(None, drawn)} == {"/srv/r"}
    # a key is a label, not code that holds a colon (a diff's line); a plural loses its "s", "status" keeps it
    diff = 'Author: Ann\n+    return {"city": city, "temp": 21.4}'
    assert [k for k, _ in result_records(diff, None)[0] if k] == ["Author"]
    assert (noun_of("git_status"), noun_of("search_emails"), noun_of("get_address")) == ("status", "email", "address")


def test_a_parameter_that_takes_only_the_values_its_description_lists_is_sent_no_other_once_they_answered():
    """mcp-server-git's `git_branch`: its `branch_type` takes 'local', 'remote' or 'all' (its description says so),
    and exploring sent it an author, a message, a hash, a date, a file's name, words of a description (20 of 26
    calls failed, "Invalid branch type: ..."), each result field an arm of its own, fresh however many had failed;
    then its optional `contains` words of results, every one refused ("malformed object name ..."). Once the values
    the description gives answered and values from elsewhere kept failing, it is sent those alone; a result's
    fields are one source, no fresh chance each where the fields before them failed; and an optional parameter
    every source kept failing is left out."""
    import random

    from mcprl.scenarios.values import Knowledge, SeenValue

    listed = ("local", "remote", "all")
    description = "Whether to list local branches ('local'), remote branches ('remote') or all branches ('all')."
    schema = {
        "type": "object",
        "properties": {
            "branch_type": {"type": "string", "description": description},
            "contains": {"type": "string", "description": "The commit sha that branch should contain."},
        },
        "required": ["branch_type"],
    }
    fields = ["Author", "Commit", "Message", "Date", "file", "status", "line", "name", "title", "path"]
    for seed in range(6):
        knowledge = Knowledge([])
        knowledge.seen = [
            SeenValue(value=f"{f} {i} of a log", field=f, call=i, session=9) for i, f in enumerate(fields)
        ]
        knowledge.seen += [
            SeenValue(value=f"{f.lower()}{i}", field=f"{f}2", call=20 + i, session=9) for i, f in enumerate(fields)
        ]
        rng = random.Random(seed)
        sent = []
        for i in range(60):
            if (drawn := knowledge.arguments("branches", schema, 0, rng)) is None:
                break
            args, leaves = drawn
            sent.append(args)
            value = args["branch_type"]
            wrong = f"malformed object name {args['contains']}" if "contains" in args else None
            text = f"Invalid branch type: {value}" if value not in listed else wrong or "* main"
            knowledge.learn(
                "branches",
                args,
                leaves,
                index=100 + i,
                session=0,
                text=text,
                is_error=text != "* main",
                error_kind=None,
                values=[],
            )
        assert set(listed) <= {args["branch_type"] for args in sent}, sent
        assert sum(args["branch_type"] not in listed for args in sent) <= 4, sent  # (before: 14 to 18)
        assert sum("contains" in args for args in sent) <= 6, sent  # (before: 8 to 11 more)
        assert knowledge.closed("branch_type")
        for _ in range(20):  # whatever is drawn now is one of the listed values, with no `contains`
            if (drawn := knowledge.arguments("branches", schema, 1, rng)) is not None:
                assert drawn[0]["branch_type"] in listed and "contains" not in drawn[0], drawn[0]


def test_a_parameter_whose_description_gives_examples_is_sent_values_from_elsewhere_after_they_answered():
    """mcp-chess's `make_move`: its move "(e.g., 'e4', 'Nf3', 'Bxe5')", examples of many moves, not the moves it
    takes. Two of them answer, and a board, a renumbered move and a word fail: it is not taken to take its examples
    alone, and the moves a listing gave are sent (before, it ran out of calls with them unsent)."""
    import random

    from mcprl.scenarios.values import Knowledge, SeenValue

    description = "The player's move in algebraic notation (e.g., 'e4', 'Nf3', 'Bxe5')."
    schema = {
        "type": "object",
        "properties": {"move_san": {"type": "string", "description": description}},
        "required": ["move_san"],
    }
    listed = ["g1h3", "g1f3", "b1c3", "b1a3", "h2h3", "g2g3", "f2f3", "e2e3", "d2d3", "c2c3"]
    board = "rnbqkbnr/pppppppp/8/8/4P3/8/PPPP1PPP/RNBQKBNR b KQkq - 0 1"
    for seed in range(4):
        knowledge = Knowledge([], writers=frozenset({"make_move"}))
        knowledge.seen = [SeenValue(value=m, field="result", call=i, session=0) for i, m in enumerate(listed)]
        knowledge.seen += [SeenValue(value=v, field=f, call=20, session=0) for f, v in (("fen", board), ("", "white"))]
        rng = random.Random(seed)
        sent = []
        for i in range(30):
            if (drawn := knowledge.arguments("make_move", schema, 0, rng)) is None:
                break
            args, leaves = drawn
            sent.append(args["move_san"])
            ok = args["move_san"] in {"e4", "Nf3", *listed}
            text = "moved" if ok else f"Invalid algebraic notation: {args['move_san']}"
            knowledge.learn(
                "make_move", args, leaves, index=100 + i, session=0, text=text, is_error=not ok, error_kind=None,
                values=[],
            )  # fmt: skip
        assert len(set(listed) & set(sent)) >= 5, (seed, sent)


def test_a_parameter_whose_bad_values_draw_anothers_error_is_sent_the_values_that_worked_there():
    """`git_show`'s `revision` is refused as `git_diff`'s `target` is ("Ref 'X' did not resolve to an
    object"): the two take one kind of value, so a commit hash that `target` took is sent to `revision`.
    An error that only echoes the value, or quotes nothing, relates no parameters."""
    import random

    from mcprl.scenarios.value_sources import error_shape
    from mcprl.scenarios.values import Drawn, Knowledge

    knowledge = Knowledge([])
    show = {"type": "object", "properties": {"revision": {"type": "string"}}, "required": ["revision"]}

    def call(tool: str, name: str, value: str, error: str | None) -> None:
        leaves = [Drawn(path=name, name=name, arm="word", value=value)]
        knowledge.learn(
            tool,
            {name: value},
            leaves,
            index=0,
            session=0,
            text=error or "diff --git a/x b/x",
            is_error=bool(error),
            error_kind=None,
            values=[],
        )

    call("git_diff", "target", "3f2a9c1", None)
    call("git_diff", "target", "README", "Error executing tool git_diff: Ref 'README' did not resolve to an object")
    call("git_show", "revision", "Ann Lee", "Error executing tool git_show: Ref 'Ann Lee' did not resolve to an object")
    assert knowledge.kin("revision") == {"target"} and knowledge.kin("target") == {"revision"}
    rng = random.Random(0)
    sent = [knowledge.arguments("git_show", show, 1, rng) for _ in range(6)]
    assert "3f2a9c1" in {args["revision"] for args, _ in filter(None, sent)}
    # the value quoted in part ("Ref '2024-03-05 10'" of "2024-03-05 10:00"), the tool's name left out
    assert (
        error_shape("git_log: Ref '2024-03-05 10' is bad", "2024-03-05 10:00", "git_log") == "{tool}: Ref '{}' is bad"
    )
    assert error_shape("Error executing tool t: /srv/x", "/srv/x", "t") is None  # an echo, not quoted
    assert error_shape("Invalid value 'x'", "y", "t") is None  # quotes another value


@pytest.mark.parametrize(("worked", "takes"), [("tableName", "table"), ("name", "name_b"), ("path1", "path")])
def test_a_value_that_worked_is_sent_to_a_parameter_named_for_the_same_kind_of_thing(worked, takes):
    """mcp-sqlite (npm): its schema tool takes `tableName`, its read of rows `table`; "products", which a listing gave
    and the schema tool took, was never sent to the read: its 12 calls were sent the listing's other fields ("12288",
    "REAL"), and it never answered. A name the same but for the "name" a thing is given by, or the letter or number
    that tells two apart (`name_a`, `name_b` of a sum of two matrices), takes the same kind of thing."""
    import random

    from mcprl.scenarios.values import Drawn, Knowledge

    knowledge = Knowledge([])
    leaves = [Drawn(path=worked, name=worked, arm="word", value="products")]
    knowledge.learn(
        "schema", {worked: "products"}, leaves, index=0, session=0, text="id INTEGER", is_error=False,
        error_kind=None, values=[],
    )  # fmt: skip
    assert worked in knowledge.kin(takes)
    schema = {"type": "object", "properties": {takes: {"type": "string"}}, "required": [takes]}
    rng = random.Random(0)
    sent = [knowledge.arguments("read", schema, 1, rng) for _ in range(6)]
    assert "products" in {args[takes] for args, _ in filter(None, sent)}
    assert worked not in knowledge.kin("column")  # (a thing of another kind)


@pytest.mark.parametrize(
    ("sent", "error", "to_blame"),
    [
        # Python's words for a value of the wrong type name the type: the value sent as one is to blame
        (
            {"geojson": "0.0", "from_crs": "EPSG:4326", "to_crs": "EPSG:3857"},
            "Error: {\"error\": \"'float' object has no attribute 'get'\"}",
            {"geojson"},
        ),
        # a value said back inside another sent that holds it is not named: the one holding it is
        (
            {"geojson": '{"type": "Point"}', "from_crs": "EPSG:4326", "to_crs": "t(from_crs='EPSG:4326')"},
            "Invalid projection: t(from_crs='EPSG:4326'): unknown name",
            {"to_crs"},
        ),
    ],
)
def test_an_error_blames_the_value_it_names_by_its_type_or_whole(sent, error, to_blame):
    """mcp-geo (PyPI): a reprojection sent a number as its geometry said "'float' object has no attribute 'get'", and
    one sent its catalogue's whole example as the target system quoted it back, with the source system "EPSG:4326"
    inside: each blamed every value of the call, the source system's one good value among them, which was never sent
    again."""
    from mcprl.scenarios.values import Drawn, Knowledge

    knowledge = Knowledge([])
    leaves = [Drawn(path=k, name=k, arm="example", value=v) for k, v in sent.items()]
    knowledge.learn(
        "transform_crs", sent, leaves, index=0, session=0, text=error, is_error=True, error_kind=None, values=[]
    )
    assert knowledge.logs["transform_crs"].blamed == to_blame


def test_the_other_entries_of_a_listing_one_of_which_worked_are_sent_next():
    """chroma-mcp (PyPI): its listing of collections said "meeting_notes\nrecipes"; once a read took "meeting_notes",
    that value was sent again and again, and "recipes" was one of some forty lines results held (a matrix of
    embeddings printed over many lines among them), never drawn: 6 tasks, all of one collection. The listing's other
    entries are what the parameter takes next."""
    import random

    from mcprl.scenarios.values import Drawn, Knowledge

    knowledge = Knowledge([])
    lines = {0: ["meeting_notes", "recipes"], 1: [f"0.{k}5, 0.{k}7, 0.{k}1" for k in range(30)]}
    for call, values in lines.items():
        knowledge.learn(
            "list", {}, [], index=call, session=0, text="\n".join(values), is_error=False, error_kind=None,
            values=[("", v) for v in values],
        )  # fmt: skip
    leaves = [Drawn(path="collection_name", name="collection_name", arm="result.", value="meeting_notes", parent=0)]
    knowledge.learn(
        "get_documents", {"collection_name": "meeting_notes"}, leaves, index=2, session=0, text='{"ids": ["n1"]}',
        is_error=False, error_kind=None, values=[],
    )  # fmt: skip
    assert knowledge.siblings("collection_name") == ["recipes"]
    schema = {"type": "object", "properties": {"collection_name": {"type": "string"}}, "required": ["collection_name"]}
    rng = random.Random(0)
    sent = []
    for index in range(3, 6):  # (each answered: the collection's count)
        args, leaves = knowledge.arguments("count", schema, 1, rng)
        sent.append(args["collection_name"])
        knowledge.learn(
            "count", args, leaves, index=index, session=1, text=str(index), is_error=False, error_kind=None, values=[]
        )
    assert "recipes" in sent[:2], sent


@pytest.mark.parametrize(
    ("schema", "least"),
    [
        ({"type": "integer"}, 1),
        ({"type": "integer", "minimum": 5}, 5),
        ({"type": "integer", "exclusiveMinimum": 3}, 4),
        ({"type": "number", "exclusiveMinimum": 0}, 1),
        ({"type": "number", "minimum": 0, "maximum": 0.5}, 0),
    ],
)
def test_a_least_call_sends_the_least_number_its_schema_allows_from_one_up(schema, least):
    import jsonschema

    from mcprl.scenarios.values import least_number

    assert least_number(schema) == least
    jsonschema.validate(least_number(schema), schema)


def test_an_optional_object_of_no_properties_is_left_out_never_sent_empty():
    """chroma-mcp (PyPI): a read of a collection's documents takes optional filters, objects whose schema names no
    properties; each was sent `{}` ("where_document": {}), which the server refuses ("Expected where document to have
    exactly one operator, got {}"): 12 of 21 reads of a collection that existed failed so. Left out, the filter is the
    server's default; a required one is still sent, as the schema allows it."""
    import random

    from mcprl.scenarios.values import Knowledge

    knowledge = Knowledge([])
    schema = {
        "type": "object",
        "properties": {"collection_name": {"type": "string"}, "where": {"type": "object"}, "data": {"type": "object"}},
        "required": ["collection_name", "data"],
    }
    sent = [knowledge.arguments("get_documents", schema, 0, random.Random(seed)) for seed in range(12)]
    assert all(args["data"] == {} and "where" not in args for args, _ in filter(None, sent)), sent


def test_a_file_servers_paths_come_from_its_results_and_its_files_ground_tasks():
    """Seen on @modelcontextprotocol/server-filesystem, which grounded no task: every `path` was the
    word "path". Now a path parameter (or a list of them) takes a path a result held, a result that
    wraps its text (`{"content": "..."}`) is read as that text, a list argument is phrased as its
    items, and neither a file's base64 blob nor a search that found nothing is an answer."""
    import random

    from mcprl.scenarios.candidates import candidates
    from mcprl.scenarios.explored import Exploration, ExploredCall
    from mcprl.scenarios.values import Knowledge

    # a folder a call took, and the names its listing gave: paths to read (joined), for one path or a list of them
    knowledge = Knowledge(["/srv/docs"])
    listing = {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}
    rng = random.Random(0)
    args, leaves = knowledge.arguments("list_directory", listing, 0, rng)
    assert args == {"path": "/srv/docs"} and leaves[0].arm == "context"  # the server's command line named it
    knowledge.learn(
        "list_directory",
        args,
        leaves,
        index=0,
        session=0,
        text="[FILE] README.md\n[DIR] notes",
        is_error=False,
        error_kind=None,
        values=[("", "[FILE] README.md"), ("", "[DIR] notes")],
    )
    read = {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}
    many = {
        "type": "object",
        "properties": {"paths": {"type": "array", "items": {"type": "string"}}},
        "required": ["paths"],
    }
    picked = {knowledge.arguments("read_file", read, 0, rng)[0]["path"] for _ in range(30)}
    assert {"/srv/docs/README.md", "/srv/docs/notes"} <= picked
    lists = [knowledge.arguments("read_multiple_files", many, 0, rng)[0]["paths"] for _ in range(30)]
    assert all(isinstance(p, list) and p for p in lists) and any("/srv/docs/README.md" in p for p in lists)

    text = "README.md:\n# Project\nOwner: Dana Reyes\n"
    read = ExploredCall(
        index=0,
        session=0,
        tool="read_multiple_files",
        arguments={"paths": ["README.md"]},
        text=text,
        structured={"content": text},
    )
    media = ExploredCall(
        index=1,
        session=0,
        tool="read_media_file",
        arguments={"path": "README.md"},
        text="[text/plain, 43 B]",
        structured={"blob": "IyBQcm9qZWN0Ck93bmVyOiBEYW5hIFJleWVzClZlcnNpb246IDIuNC4xCg==", "mimeType": "text/plain"},
    )
    search = ExploredCall(
        index=2,
        session=0,
        tool="search_files",
        arguments={"path": "/srv/docs", "pattern": "budget"},
        text="No matches found",
    )
    tasks = [t for seed in range(6) for t in candidates(Exploration(calls=[read, media, search]), {}, seed=seed)]
    asked = {(t.task, t.answer) for t in tasks}
    assert any("owner" in task and "README.md" in task for task, answer in asked if answer == "Dana Reyes"), asked
    assert {answer for _, answer in asked} == {"Dana Reyes", "text/plain"}, asked
    assert not [task for task, _ in asked if "['" in task or "# " in task or "README.md:" in task], asked


def test_a_parameter_said_to_take_a_file_is_sent_a_file_name_a_listing_gave_first():
    """memory-bank-mcp: `list_memory_bank_files` answered "Files in Memory Bank:" and a file name a line, and
    `read_memory_bank_file`'s `filename` was sent made-up names and folders in plain view, never a listed one, so the
    read never answered. A result's field whose values are mostly files' names is what a parameter said to take a
    file draws first, before a made-up name or a word of the server's context."""
    import random

    from mcprl.scenarios.values import Knowledge

    listing = "Files in Memory Bank:\nactive-context.md\ndecision-log.md\nprogress.md"
    one = {"type": "object", "properties": {"random_string": {"type": "string"}}, "required": ["random_string"]}
    read = {"type": "object", "properties": {"filename": {"type": "string"}}, "required": ["filename"]}
    firsts = []
    for seed in range(20):
        knowledge = Knowledge(["Active Context", "Progress", "/srv/bank"], descriptions={"read": "Read a file"})
        rng = random.Random(seed)
        args, leaves = knowledge.arguments("list", one, 0, rng)
        values = [("", line) for line in listing.splitlines()]
        knowledge.learn(
            "list", args, leaves, index=0, session=0, text=listing, is_error=False, error_kind=None, values=values
        )
        firsts.append(knowledge.arguments("read", read, 0, rng)[0]["filename"])
    listed = [f for f in firsts if f.endswith(".md")]
    assert len(listed) > len(firsts) / 2, firsts


def test_a_time_of_now_a_result_held_is_sent_only_to_a_parameter_that_takes_a_date_or_a_time():
    """mcp-knowledge-graph: relations were made from and to "2026-12-06T04:14:06.351Z", a record's `createdAt`,
    which names nothing (another each call). A time of now that a result held is no value for a name; a parameter
    that takes a date is still sent it."""
    import datetime
    import random

    from mcprl.scenarios.values import Knowledge

    now = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%S.000Z")
    made = f'{{"name": "Weekly report", "entityType": "project", "createdAt": "{now}"}}'
    one = {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}
    knowledge = Knowledge([])
    rng = random.Random(0)
    args, leaves = knowledge.arguments("create", one, 0, rng)
    values = [("name", "Weekly report"), ("entityType", "project"), ("createdAt", now)]
    knowledge.learn(
        "create", args, leaves, index=0, session=0, text=made, is_error=False, error_kind=None, values=values
    )
    relate = {"type": "object", "properties": {"from": {"type": "string"}}, "required": ["from"]}
    since = {"type": "object", "properties": {"since": {"type": "string"}}, "required": ["since"]}
    sent = [knowledge.arguments("relate", relate, 0, rng)[0]["from"] for _ in range(40)]
    assert "Weekly report" in sent and now not in sent, sent
    # (each call made: the dictionary's dates, which its name says it takes, are sent once each)
    dated = []
    for index in range(1, 41):
        args, leaves = knowledge.arguments("changes", since, 0, rng)
        dated.append(args["since"])
        knowledge.learn(
            "changes", args, leaves, index=index, session=0, text="[]", is_error=False, error_kind=None, values=[]
        )
    assert now in dated, dated


def test_a_parameter_named_for_a_form_is_sent_values_of_that_form_first():
    """mcp-python-interpreter's `run_python_code` was sent ten values, results ("cryptography 51.0.1"), the folder in
    plain view, words of its description, never a program, and was retired: no task ran code. A parameter whose name
    says the form it takes (`code` of a tool that runs Python, an `expression`) has the dictionary's values of that form
    trusted as its schema's examples are: its first value is a program in most seeds (4 of 20 before), not the folder
    or a result."""
    import random

    from mcprl.scenarios.values import Knowledge

    runs = "Execute Python code in a session."
    listing = "Installed packages:\n- cryptography 51.0.1\n- anyio 4.16.0\n- pydantic 2.12.0"
    empty = {"type": "object", "properties": {}}
    code = {"type": "object", "properties": {"code": {"type": "string"}}, "required": ["code"]}
    programs = 0
    for seed in range(20):
        knowledge, rng = Knowledge(["/srv/work"], descriptions={"run_python_code": runs}), random.Random(seed)
        args, leaves = knowledge.arguments("list_installed_packages", empty, 0, rng)
        values = [("", line.strip("- ")) for line in listing.splitlines()[1:]]
        knowledge.learn(
            "list_installed_packages",
            args,
            leaves,
            index=0,
            session=0,
            text=listing,
            is_error=False,
            error_kind=None,
            values=values,
        )
        sent = knowledge.arguments("run_python_code", code, 0, rng)[0]["code"]
        programs += sent.startswith(("print(", "console.log(", "echo "))
    assert programs >= 8, programs


def test_a_value_that_worked_is_varied_as_a_person_varies_it():
    """Each number of a value that worked changes within half to twice its size and keeps its form (an integer, a
    zero-padded one, a decimal's places), so a dice notation stays one a person rolls; a date, a date and time or a
    time of day moves to another that exists, in its form (time-mcp's "2025-03-23 12:30:00" was sent as
    "2792-02-40 22:15:02" and "5566-03-13 31:98:02")."""
    import datetime
    import random

    from mcprl.scenarios.value_sources import renumbered

    rng = random.Random(0)
    for value in ("2d6+3", "(7 - 2) / 5", "12.5"):
        for _ in range(20):
            varied = renumbered(value, rng)
            before, after = re.findall(r"\d+(?:\.\d+)?", value), re.findall(r"\d+(?:\.\d+)?", varied)
            # (a sum's operators are drawn again: the same brackets, other sums; a dice notation's stay)
            form = r"\d+(?:\.\d+)?" if value == "2d6+3" else r"\d+(?:\.\d+)?|(?<=[\d)] )[-+*/](?= [\d(])"
            assert re.sub(form, "#", varied) == re.sub(form, "#", value)
            for b, a in zip(before, after, strict=True):
                assert float(b) / 2 - 1 <= float(a) <= float(b) * 2 + 1 and len(a) >= len(b) - (b[0] != "0")
                assert ("." in a) == ("." in b) and len(a.partition(".")[2]) == len(b.partition(".")[2])
    # a sum is varied as a person asks other sums: each of its numbers, and its operators ("(7 - 2) / 5" was sent as
    # "(7 - 2) / N" only, its brackets read as a path's folder, and 13 of a calculator's 36 tasks were that one)
    sums = [renumbered("(7 - 2) / 5", rng) for _ in range(40)]
    for at in range(3):
        assert len({re.findall(r"\d+", s)[at] for s in sums}) > 3, sums
    for at in range(2):
        assert len({re.findall(r" ([-+*/]) ", s)[at] for s in sums}) == 4, sums
    forms = {"2025-03-23 12:30:00": "%Y-%m-%d %H:%M:%S", "2025-03-23": "%Y-%m-%d", "09:30": "%H:%M"}
    forms |= {"2024-12-31T23:45:00Z": "%Y-%m-%dT%H:%M:%SZ", "due 2024-02-29": "due %Y-%m-%d"}
    for value, form in forms.items():
        varied = {renumbered(value, rng) for _ in range(20)}
        assert len(varied) > 10 and value not in varied, varied
        for v in varied:
            when = datetime.datetime.strptime(v, form)  # a day and time that exist, written as the value was
            assert "%Y" not in form or abs(when.year - 2024) <= 2, v
            assert len(v) == len(value), v


def test_a_digest_or_an_id_that_worked_is_never_sent_with_a_character_changed():
    """mcp-hashlib hashed its own digests, each with a digit changed ("2cf24dba5f..." sent as "2cf19dba6f..."): a
    digest or an id the server issued, changed, names nothing, and tasks stated those strings. Such a value that
    worked is never varied."""
    import random
    from dataclasses import replace

    from mcprl.scenarios.values import Knowledge

    digest = "2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824"
    other = "486ea46224d1bb4fb680f34f7c9ad96a8f24ec88be73ea8e5a6c65260e9cb8a7"
    one = {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}
    knowledge = Knowledge([])
    rng = random.Random(0)
    for text, result in (("hello", digest), (digest, other)):  # the text hashed, then its digest
        _, leaves = knowledge.arguments("sha256", one, 0, rng)
        leaves = [replace(leaf, value=text) for leaf in leaves]
        knowledge.learn(
            "sha256",
            {"text": text},
            leaves,
            index=0,
            session=0,
            text=result,
            is_error=False,
            error_kind=None,
            values=[("", result)],
        )
    sent = [knowledge.arguments("sha256", one, 0, random.Random(seed))[0]["text"] for seed in range(200)]
    hexes = {t for t in sent if re.fullmatch(r"[0-9a-f]{20,}", t)}
    assert other in hexes and hexes <= {digest, other}, hexes - {digest, other}


def test_once_a_value_worked_a_parameter_is_probed_only_with_the_shapes_it_is_described_with():
    """time-mcp's `relative_time` answers whatever it is sent ("12 * 4" is "25 years ago"): probing its `time` with
    every shape of the dictionary after a date worked made tasks that convert the time "(7 - 2) / 5". Once a
    value worked, the probes are the shapes the parameter is described with (a date, a time) alone."""
    import random

    from mcprl.scenarios.values import Knowledge

    relative = {
        "type": "object",
        "properties": {"time": {"type": "string", "description": "The time. Format: YYYY-MM-DD HH:mm:ss"}},
        "required": ["time"],
    }
    knowledge, rng, probed, answered = Knowledge([]), random.Random(0), [], False
    for index in range(60):
        if (drawn := knowledge.arguments("relative_time", relative, 0, rng)) is None:
            break
        args, leaves = drawn
        if answered and leaves[0].arm in ("probe", "named"):
            probed.append(args["time"])
        answered = True  # (a lenient parser: every call answers)
        knowledge.learn(
            "relative_time", args, leaves, index=index, session=0, text="in 2 years", is_error=False, error_kind=None,
            values=[],
        )  # fmt: skip
    assert probed
    for value in probed:  # a date, a time, or both, as ISO 8601 or a clock writes them
        assert re.fullmatch(r"[\d:TZ+. -]+", value) and re.search(r"\d{1,2}:\d\d|\d{4}-\d\d", value), probed
    # ... or of the shape a value it took was of: mcp-hashlib's `data` took "test", and was then sent only digests
    # results gave (every task hashed a hash); a word that worked makes the other words probes
    from mcprl.scenarios.lexicon import PLAIN, PROBES, probes

    words = set(PROBES[PLAIN][0])
    assert set(probes("data", "", described=True, worked=[next(iter(words))])) == words
    assert probes("data", "", described=True, worked=["some text no probe gives"]) == []


def test_the_items_of_a_list_a_description_gives_are_sent_first():
    """A tool that takes one of a few values often names them in a list, in its parameter's description or, where
    that says nothing, its own ("How many moons a planet has (Mercury, Venus, Earth or Mars)."): the planet was sent
    "test", "2 + 3", "SHOW TABLES" and 35 more that no planet is. Those items are sent among its first calls."""
    import random

    from mcprl.scenarios.value_sources import listed_items
    from mcprl.scenarios.values import Knowledge

    planets = ["Mercury", "Venus", "Earth", "Mars"]
    assert listed_items("Output, either json or text.") == ["json", "text"]
    assert listed_items("The unit (meters, feet, inches)") == ["meters", "feet", "inches"]
    assert listed_items("Read a file and return its text, or an error.") == []
    moons = {"type": "object", "properties": {"planet": {"type": "string"}}, "required": ["planet"]}
    for descriptions, schema in (
        ({"moons": "How many moons a planet has (Mercury, Venus, Earth or Mars)."}, moons),
        (
            {},
            {
                **moons,
                "properties": {"planet": {"type": "string", "description": "A planet: Mercury, Venus, Earth or Mars"}},
            },
        ),
    ):
        knowledge, rng = Knowledge([], descriptions=descriptions), random.Random(0)
        sent = []
        for index in range(8):
            args, leaves = knowledge.arguments("moons", schema, 0, rng)
            sent.append(args["planet"])
            knowledge.learn(
                "moons", args, leaves, index=index, session=0, text="No such planet.", is_error=True, error_kind=None,
                values=[],
            )  # fmt: skip
        assert set(planets) <= set(sent), sent


def test_a_search_is_sent_a_word_of_a_sentence_a_result_held_never_the_whole_sentence():
    """A knowledge graph's observation ("Check the budget with Dana."), written by exploring and read back, is found
    by a search for a word of it, as a person searches ("budget"), not by the whole sentence nor its first word (an
    order's verb, "Check"); a date takes no word of it; a parameter that is no search (a note to store) may still
    take a sentence."""
    import random

    from mcprl.scenarios.values import Knowledge, SeenValue, sentence

    search = {
        "type": "object",
        "properties": {"query": {"type": "string", "description": "The search query"}},
        "required": ["query"],
    }
    observation = "Check the budget with Dana."
    knowledge = Knowledge([])
    knowledge.said.add(repr(observation))  # exploring wrote it: the server says it back
    knowledge.seen = [
        SeenValue(value=observation, field="observations", call=0),
        SeenValue(value="Dana", field="name", call=0),
    ]
    sent = set()
    for seed in range(200):  # (the words of a text are one source among several: enough draws to see them all)
        args, _ = knowledge.arguments("search_nodes", search, session=1, rng=random.Random(seed))
        assert not sentence(args["query"]), args
        sent.add(args["query"])
    # (not a word no one searches by: `FUNCTION_WORDS`, or the order's verb a sentence starts with)
    assert {"budget", "Dana"} & sent and not {"with", "Check"} & sent, sent
    # a parameter of a form of its own (a date) is sent no word of a text: "until Stone" filters nothing
    until = {
        "type": "object",
        "properties": {"until": {"type": "string", "description": "Show commits before this date"}},
        "required": ["until"],
    }
    knowledge.seen.append(SeenValue(value="Bob Stone", field="author", call=1))
    drawn = [knowledge.arguments("git_log", until, session=1, rng=random.Random(seed)) for seed in range(30)]
    assert not any(d.arm == "word" for _, leaves in drawn for d in leaves), drawn
    # nor a setting, a parameter with a default of its own: a delimiter "Found" of "Found 0 active sessions" loaded a
    # CSV as one column, and every call after it took the session that load opened (csv-editor's `load_csv`)
    load = {
        "type": "object",
        "properties": {
            "content": {"type": "string"},
            "delimiter": {"type": "string", "default": ","},
            "encoding": {"type": "string", "default": "utf-8"},
            "contains": {"type": "string", "default": ""},
        },
        "required": ["content"],
    }
    knowledge.seen.append(SeenValue(value="Found 0 active sessions", field="message", call=1))
    drawn = [knowledge.arguments("load_csv", load, session=1, rng=random.Random(seed)) for seed in range(60)]
    words = {d.name for _, leaves in drawn for d in leaves if d.arm == "word"}
    assert words <= {"content", "contains"} and "contains" in words, words
    note = {"type": "object", "properties": {"note": {"type": "string"}}, "required": ["note"]}
    assert any(
        knowledge.arguments("add_note", note, session=1, rng=random.Random(seed))[0]["note"] == observation
        for seed in range(30)
    )


def test_an_error_that_lists_values_by_their_kind_offers_them_and_a_json_errors_keys_are_none():
    """ "no column 'x'; the columns: name, team" names what the parameter takes (two or more short items); a sentence
    after a colon names nothing, and an error written as a JSON object offers its values' words, not its keys."""
    from mcprl.scenarios.value_sources import error_values

    assert error_values("no column 'x'; the columns: name, team, hours", {"x"}) == ["name", "team", "hours"]
    assert error_values("Details: the file could not be opened by this server", set()) == []
    sheet = 'Error: {"status": false, "tool_result": {"error_code": "sheet_not_found", "message": "no sheet \'x\'"}}'
    assert error_values(sheet.replace("'x'", "'x'; the sheets: Orders, Staff"), {"x"}) == ["Orders", "Staff"]
    assert error_values(sheet, {"x"}) == []
    # (a traceback's frames name the server's files and code: of it, the exception's message alone)
    trace = 'Traceback (most recent call last):\n  File "/srv/app/server.py", line 9, in run\n    eval(code)\n'
    assert error_values(trace + "ValueError: mode must be one of: fast, exact", set()) == ["fast", "exact"]
    assert error_values(trace + "NameError: name 'x' is not defined", {"x"}) == []
    # (nor a quote cut short by one inside it, which is a message, not a value: mcp-sympy's `"cannot sympify object
    # of type <class 'sympy.core.cache.X'>"` gave "cannot sympify object of type <class ", sent as a variable)
    sympify = "SympifyError: \"cannot sympify object of type <class 'sympy.Foo'>\""
    assert error_values(sympify, {"x"}) == []
    assert error_values("Sympify of expression 'could not parse 'y x'' failed", {"y x"}) == []
    # (nor what it says there is none of: mcp-sympy's `tanh` sent "EmptySet" said "'EmptySet' object has no attribute
    # 'as_coefficient'", and "as_coefficient" went to every expression, and into tasks)
    for denied in ("'x' object has no attribute 'as_coefficient'", "name 'f' is not defined", "Unknown column 'f'"):
        assert error_values(denied, {"x"}) == [], denied
    assert error_values("table 'f' doesn't exist; the tables: a, b", {"x"}) == ["a", "b"]
    assert error_values("expected 'date', not 'str'", {"x"}) == ["date"]


def test_no_error_that_says_back_a_value_sent_offers_it_as_a_new_one():
    """Seen on server-filesystem: an error quoting a date `path` was sent, joined to the folder and cut short where
    the quote ended early, was sent to `path` again as a new value, and drew the same error. An error's values are
    offered only where they are not what the call sent, whole, in part, or most of it joined to more."""
    from mcprl.scenarios.value_sources import error_values

    sent = "Sun Nov 29 2026 12:35:35 GMT+0000 (Coordinated Universal Time)"
    told = f"Error: ENOENT: no such file or directory, open '/srv/docs/{sent}'"
    assert error_values(told, {sent}) == []
    assert error_values(told.replace(")'", "'"), {sent}) == []  # the quote cut where the date's brackets open
    assert error_values("Path 'x' is outside the allowed directory '/srv/docs'", {"x"}) == ["/srv/docs"]
    assert error_values("Ref 'main~9' did not resolve; did you mean 'main~1'?", {"main~9"}) == ["main~1"]
    # ... nor one it forbids (@cyanheads/git-mcp-server's refs and paths were sent "-" of 'must not start with "-"')
    assert error_values('Invalid arguments: Commit ref must not start with "-" at ref', {"x"}) == []
    assert error_values("Sheet 'x' not found in the workbook; the sheets are 'Orders'", {"x"}) == ["Orders"]
    # ... nor one it says back in another case (mcp-simple-timeserver lowers what it could not parse)
    parse = 'Error: Could not parse date "utc". Use ISO 8601 format (YYYY-MM-DD or YYYY-MM-DDTHH:MM:SS) or "now".'
    assert error_values(parse, {"UTC", "Berlin"}) == ["now"]
    # a command's usage is none: its placeholders are what a value would stand in for
    usage = (
        "unknown revision 'x', did you mean 'v1.2'? Separate paths, like 'git <command> [<revision>...] -- [<file>]'"
    )
    assert "v1.2" in error_values(usage, {"x"}) and not any("<" in v for v in error_values(usage, {"x"}))


@pytest.mark.parametrize(
    "args, tables",
    [
        ({}, [("name", "products"), ("name", "orders")]),
        # (sqlite-mcp-server's, sent the database's path, a list the SDK wraps: `{"result": ["products", "orders"]}`)
        ({"db_path": "/srv/shop.db"}, [("result", "products"), ("result", "orders")]),
    ],
)
def test_a_tool_named_for_listing_tables_gives_the_tables_queries_are_composed_over(args, tables):
    """Seen on mcp-server-sqlite: its `list_tables` named the tables, but `read_query` composed its counts over any
    name a result had given (a column, a type: "SELECT COUNT(*) FROM TEXT"), failed until the tool was retired, and
    exploring stopped at 48 calls with 7 tasks. The names a call sent only where to look gives of a tool named for
    listing a kind that queries are composed over are that kind's, as a known listing query's are; a tool named for
    one of them (`describe_table`) lists none."""
    import random

    from mcprl.scenarios.values import Drawn, Knowledge

    knowledge = Knowledge([])
    knowledge.learn(
        "list_tables", args, [], index=0, session=0, text=str(tables), is_error=False, error_kind=None, values=tables
    )
    columns = [("name", "id"), ("type", "INTEGER"), ("name", "price"), ("type", "REAL")]
    leaves = [Drawn(path="table_name", name="table_name", arm="result.name", value="products")]
    knowledge.learn(
        "describe_table",
        {"table_name": "products"},
        leaves,
        index=1,
        session=0,
        text=str(columns),
        is_error=False,
        error_kind=None,
        values=columns,
    )
    assert [b["table"] for b in knowledge.kinds["table"]] == ["products", "orders"]
    rng = random.Random(0)
    sent = [knowledge.arguments("read_query", SQL, 1, rng) for _ in range(200)]
    composed = [args["query"] for args, leaves in filter(None, sent) if leaves[0].arm == "composed"]
    # the table each names: after FROM, or quoted (a catalogue's query of its columns)
    named = {m for q in composed for found in re.findall(r"FROM (\w+)\b(?![.(])|'(\w+)'", q) for m in found if m}
    assert composed and named <= {"products", "orders", "sqlite_master"}, composed


def test_every_real_tools_schema_gives_arguments_it_validates():
    """Each real MCP tool's input schema (tests/data/mcp_tool_schemas.json: `$defs`/`$ref` of pydantic models,
    `anyOf`, enums, formats) gives drawn arguments that the whole schema validates, a nested model's fields
    included: its parts are drawn from their own schemas with the references inlined (`inlined`)."""
    import json
    import random
    from pathlib import Path

    import jsonschema

    from mcprl.scenarios.values import Knowledge
    from mcprl.tools.convert import inlined

    schemas = json.loads((Path(__file__).resolve().parents[1] / "data" / "mcp_tool_schemas.json").read_text())[
        "schemas"
    ]
    assert sum('"$ref"' in json.dumps(s) for s in schemas.values()) >= 5
    knowledge = Knowledge(["/srv/data"])
    drawn = 0
    for tool, schema in schemas.items():
        for seed in range(2):
            made = knowledge.arguments(tool, inlined(schema), session=0, rng=random.Random(seed))
            if made is not None:
                jsonschema.validate(made[0], schema)
                drawn += 1
    assert drawn >= len(schemas)


def test_the_values_in_plain_view_are_what_a_server_works_on_not_its_program(tmp_path):
    """Seen on mcp-server-tree-sitter run as `env -C REPO .venv/bin/mcp-server-tree-sitter`: its program's path was
    offered to every string parameter (`project`, `language`) as a value in plain view. The folder, a flag's value and
    a data file are; the executable the command runs, a script or a module, are not."""
    import os
    import sys

    from mcprl.scenarios.value_sources import context_values
    from mcprl.tools import ServerSpec

    program = tmp_path / "bin" / "some-server"
    program.parent.mkdir()
    program.write_text("#!/bin/sh\n")
    os.chmod(program, 0o755)
    data = tmp_path / "shop.db"
    data.write_text("")
    spec = ServerSpec.parse(f"env -C {tmp_path} {program} --db {data} --mode=read")
    assert context_values(spec, [], []) == [str(tmp_path), str(data), "read"]
    spec = ServerSpec.parse(f"{sys.executable} -m some_server {tmp_path / 'server.py'} {tmp_path}")
    assert context_values(spec, [], []) == [str(tmp_path)]
    # ... nor the MCP transport it is told to speak (excel-mcp-server's `stdio` was sent as a sheet and a search)
    for command in (f"{program} stdio {tmp_path}", f"{program} --transport=stdio {tmp_path}", f"{program} sse {data}"):
        assert context_values(ServerSpec.parse(command), [], []) == [
            str(tmp_path) if "sse" not in command else str(data)
        ]
    # ... nor the name of the function that serves a resource (mcp-sqlalchemy's `get_table_info`, sent as a column)
    resources = [{"name": "get_schema_list", "uri": "schema://"}, {"name": "notes.md", "uri": "file:///srv/notes.md"}]
    templates = [{"name": "get_table_info", "uriTemplate": "table://{t}"}, {"name": "Weekly report"}]
    assert context_values(ServerSpec.parse(f"{program}"), resources, templates) == [
        "schema://",
        "file:///srv/notes.md",
        "notes.md",
        "Weekly report",
    ]


def test_a_reads_list_of_requests_is_mostly_one_as_a_person_asks_of_one_thing():
    """Seen on mcp-text-editor: `files`, a list of {file_path, ranges}, was sent two or three files at once (often
    one file twice), and its tasks stated them all. A read's list of objects is mostly one request; a list of numbers
    mostly several (the range of one number says nothing)."""
    import random

    from mcprl.scenarios.values import Knowledge

    request = {"type": "object", "properties": {"file_path": {"type": "string"}}, "required": ["file_path"]}
    files = {"type": "object", "properties": {"files": {"type": "array", "items": request}}, "required": ["files"]}
    numbers = {"type": "object", "properties": {"numbers": {"type": "array", "items": {"type": "number"}}}}
    knowledge = Knowledge(["/srv/a.txt", "/srv/b.txt"])
    ones = {"files": 0, "numbers": 0}
    for seed in range(20):
        for tool, schema in (("get_text", files), ("sum", numbers)):
            args, _ = knowledge.arguments(tool, schema, session=seed, rng=random.Random(seed))
            ones[next(iter(schema["properties"]))] += len(next(iter(args.values()), [])) == 1
    assert ones["files"] >= 12 and ones["numbers"] <= 8, ones


def test_a_value_an_error_blamed_is_not_sent_there_again_while_another_source_has_one():
    """mcp-text-editor, run in a folder: `file_path` was sent the folder the command line names again and again
    ("Is a directory"), each time with other line ranges, while the folder's files sat in another source. A source
    whose every value an error blamed on the parameter sends none of them there again while another has one."""
    import random

    from mcprl.scenarios.values import Knowledge

    knowledge = Knowledge(["/srv/docs"], folders={"/srv/docs": ["a.txt", "b.txt"]})
    schema = {
        "type": "object",
        "properties": {"file_path": {"type": "string"}, "start": {"type": "integer", "minimum": 1}},
        "required": ["file_path", "start"],
    }
    rng = random.Random(0)
    sent = []
    for i in range(40):
        drawn = knowledge.arguments("read", schema, i, rng)
        if drawn is None:
            break
        args, leaves = drawn
        sent.append(args["file_path"])
        folder = args["file_path"] == "/srv/docs"
        error = f"Is a directory: '{args['file_path']}'" if folder else f"start {args['start']} is past the end"
        knowledge.learn("read", args, leaves, index=i, session=i, text=error, is_error=True, error_kind=None, values=[])
    assert sent.count("/srv/docs") <= 1, sent


def test_a_value_that_worked_is_not_blamed_for_an_error_that_names_its_parameters_word_beside_one_that_did_not():
    """@cyanheads/git-mcp-server: `git_blame {"path": R, "filePath": "1"}` said "fatal: no such path '1' in HEAD".
    The repository R had answered for `path`, and "1" had only filtered a log to nothing, which shows no value
    works: the file path is to blame, not R, which stays the one place `path` is (`fixed`) after others failed."""
    from mcprl.scenarios.values import Drawn, Knowledge

    knowledge = Knowledge(["/srv/r"])

    def learn(tool: str, args: dict, text: str, is_error: bool) -> None:
        leaves = [
            Drawn(path=k, name=k, arm="context" if v == "/srv/r" else "result.x", value=v) for k, v in args.items()
        ]
        index = len(knowledge.made)
        knowledge.learn(
            tool, args, leaves, index=index, session=index, text=text, is_error=is_error, error_kind=None, values=[]
        )

    learn("git_status", {"path": "/srv/r"}, "On branch main", False)
    learn("git_log", {"path": "/srv/r", "filePath": "1"}, '{"success": true, "commits": [], "totalCount": 0}', False)
    assert knowledge.worked["filePath"] == []
    learn("git_blame", {"path": "/srv/r", "filePath": "1"}, "fatal: no such path '1' in HEAD", True)
    assert "'1'" in knowledge.refused["filePath"] and "'/srv/r'" not in knowledge.refused["path"]
    for other in ("main", "git init", "a632078"):  # a repository path elsewhere: "does not exist: /srv/r/main"
        learn("git_show", {"path": other}, f"Working directory does not exist: /srv/r/{other}", True)
    assert knowledge.fixed("path")


def test_a_parameter_is_never_sent_its_own_name():
    """dbhub's `pattern` is described "LIKE pattern (% = any chars, _ = one char)", which read as an example,
    "pattern", sent in 11 calls; mcp-server-calculator's `expression` was once sent "expression" 120 times. No draw
    sends a parameter its own name, whatever the description, the results or the errors said; a schema's enum may."""
    import random

    from mcprl.scenarios.values import Knowledge

    knowledge = Knowledge([])
    schema = {
        "type": "object",
        "properties": {
            "pattern": {"type": "string", "description": "LIKE pattern (% = any chars, _ = one char)"},
            "sort_order": {"type": "string", "description": "e.g. sort order"},
            "kind": {"type": "string", "enum": ["kind", "table"]},
        },
        "required": ["pattern", "sort_order", "kind"],
    }
    rng = random.Random(0)
    sent: list[dict] = []
    for i in range(30):
        drawn = knowledge.arguments("search", schema, i, rng)
        if drawn is None:
            break
        args, leaves = drawn
        sent.append(args)
        knowledge.learn(
            "search", args, leaves, index=i, session=i, text=f'{{"pattern": "pattern", "sort_order": "sort order", '
            f'"rows": [{{"name": "n{i}"}}]}}', is_error=False, error_kind=None,
            values=[("pattern", "pattern"), ("sort_order", "sort order"), ("name", f"n{i}")],
        )  # fmt: skip
    assert len(sent) >= 10
    assert not [a for a in sent if a["pattern"] == "pattern" or a["sort_order"] == "sort order"], sent
    assert any(a["kind"] == "kind" for a in sent)


def test_an_error_that_asks_for_what_a_call_left_out_blames_nothing_sent_and_is_given_what_it_asked_for():
    """mcp-simple-timeserver's `is_holiday {"date": "2026-01-01"}` said "Please provide either a country (e.g.,
    "Poland", "PL") or a city (e.g., "Warsaw", "Berlin")." and exploring sent the date "Warsaw" next: the error was
    taken as the date's. An error that names, by their names, parameters the call left out, and nothing it sent,
    blames nothing sent; the next calls give what it asked for, each with the values named after its name."""
    import random

    from mcprl.scenarios.values import Drawn, Knowledge, call_key

    schema = {
        "type": "object",
        "properties": {"country": {"type": "string"}, "date": {"type": "string"}, "city": {"type": "string"}},
    }
    knowledge = Knowledge([], params={"is_holiday": ["country", "date", "city"]})
    rng = random.Random(0)
    args, leaves = {"date": "2026-01-01"}, [Drawn(path="date", name="date", arm="example", value="2026-01-01")]
    asked = 'Please provide either a country (e.g., "Poland", "PL") or a city (e.g., "Warsaw", "Berlin").'
    knowledge.learn(
        "is_holiday", args, leaves, index=0, session=0, text=asked, is_error=True, error_kind=None, values=[]
    )
    assert not knowledge.blamed["is_holiday", "date"] and knowledge.stats["date", "example"][1] == 0
    assert knowledge.named["country"] == ["Poland", "PL"] and knowledge.named["city"] == ["Warsaw", "Berlin"]
    knowledge.made.add(call_key("is_holiday", {}))  # (made: the first call of a tool that requires nothing)
    later = [knowledge.arguments("is_holiday", schema, 1, rng) for _ in range(5)]
    assert all(drawn is not None and {"country", "city"} <= set(drawn[0]) for drawn in later), later
    # a call given a country and refused for it, by name, leaves the country out again where it likes
    sent = {"country": "Warsaw", "city": "Berlin"}
    drawn = [d for d in later[0][1] if d.name in sent]
    for d in drawn:
        d.value = sent[d.name]
    knowledge.learn(
        "is_holiday", sent, drawn, index=1, session=1, text='Could not resolve country "Warsaw".', is_error=True,
        error_kind=None, values=[],
    )  # fmt: skip
    assert "country" not in knowledge.wanted and "city" in knowledge.wanted


def test_a_result_that_differs_only_in_its_clock_and_what_it_says_back_is_no_new_answer():
    """mcp-simple-timeserver's `get_utc {"server": X}` answers "Current UTC Time from X: <now>" to any X: 29 of 120
    calls went there, each answer new by its text. An answer that differs from one before only in the time it was
    read at, or in the value it says back of those sent, is credited as a repeat."""
    import datetime

    from mcprl.scenarios.values import REPEAT_CREDIT, Drawn, Knowledge

    knowledge = Knowledge([])
    now = datetime.datetime.now(datetime.UTC)
    for i, server in enumerate(["pool.ntp.org", "time.example.org", "Warsaw"]):
        at = (now + datetime.timedelta(seconds=3 * i)).strftime("%Y-%m-%d %H:%M:%S")
        text = f"Current UTC Time from {server}: {at}\nDay: {now:%A}"
        leaves = [Drawn(path="server", name="server", arm="word", value=server)]
        knowledge.learn(
            "get_utc", {"server": server}, leaves, index=i, session=i, text=text, is_error=False, error_kind=None,
            values=[],
        )  # fmt: skip
    assert len(knowledge.logs["get_utc"].results) == 1
    assert knowledge.stats["server", "word"][0] == 1 + 2 * REPEAT_CREDIT
    # (but the time in another zone is another answer: mcp-server-time's `get_current_time`)
    for i, (zone, offset) in enumerate([("Europe/Warsaw", "+01:00"), ("Asia/Tokyo", "+09:00")]):
        text = json.dumps({"timezone": zone, "datetime": f"{now:%Y-%m-%dT%H:%M:%S}{offset}", "is_dst": False})
        leaves = [Drawn(path="timezone", name="timezone", arm="example", value=zone)]
        knowledge.learn(
            "get_current_time", {"timezone": zone}, leaves, index=3 + i, session=3 + i, text=text, is_error=False,
            error_kind=None, values=[],
        )  # fmt: skip
    assert len(knowledge.logs["get_current_time"].results) == 2


def test_where_each_session_is_a_fresh_server_no_session_is_sent_what_anothers_write_made():
    """A code server's `open_workspace` gives "ws-101" in each fresh process; another session sent it before its own
    write, and it failed there ("no workspace 'ws-101' is open"), was blamed and made, so the session that opened one
    could not send it. Where each session is a server of its own, what a write made, or a result read after it, is
    no value in another session (but what a session read before its write too: a chess board's first moves, read
    again after a move); where sessions share one server, it is."""
    import random

    from mcprl.scenarios.values import Drawn, Knowledge

    schema = {"type": "object", "properties": {"workspace_id": {"type": "string"}}, "required": ["workspace_id"]}
    for fresh in (True, False):
        knowledge = Knowledge([], writers=frozenset({"open_workspace"}), fresh_sessions=fresh)
        knowledge.learn(
            "list_formats", {}, [], index=0, session=0, text="md, txt", is_error=False, error_kind=None,
            values=[("", "md")],
        )  # fmt: skip
        opened = [Drawn(path="title", name="title", arm="probe", value="Weekly report")]
        knowledge.learn(
            "open_workspace", {"title": "Weekly report"}, opened, index=1, session=0,
            text='{"workspace_id": "ws-101"}', is_error=False, error_kind=None, values=[("workspace_id", "ws-101")],
        )  # fmt: skip
        # (read again after the write: a value every fresh server gives, which the write did not make)
        knowledge.learn(
            "list_formats", {}, [], index=2, session=0, text="md, txt", is_error=False, error_kind=None,
            values=[("", "md")],
        )  # fmt: skip
        rng = random.Random(0)
        sent = set()
        for _ in range(12):
            drawn = knowledge.arguments("workspace_size", schema, 1, rng)
            if drawn is None:
                break
            sent.add(drawn[0]["workspace_id"])
            knowledge.learn(
                "workspace_size", *drawn, index=10 + len(sent), session=1, text="3 files", is_error=False,
                error_kind=None, values=[],
            )  # fmt: skip
        assert ("ws-101" in sent) is not fresh and "md" in sent, (fresh, sent)


def test_an_error_that_asks_for_parameters_by_their_names_as_written_is_given_them():
    """mcp-server-tree-sitter's `find_usage` said "Either language or file_path must be provided" three times, to
    calls given a project alone."""
    from mcprl.scenarios.values import Drawn, Knowledge

    knowledge = Knowledge([], params={"find_usage": ["project", "symbol", "language", "file_path"]})
    leaves = [Drawn(path="project", name="project", arm="context", value="/srv/r")]
    knowledge.learn(
        "find_usage", {"project": "/srv/r"}, leaves, index=0, session=0,
        text="Error executing tool find_usage: Either language or file_path must be provided", is_error=True,
        error_kind=None, values=[],
    )  # fmt: skip
    assert {"language", "file_path"} <= knowledge.wanted and not knowledge.blamed["find_usage", "project"]


def test_a_query_is_sql_only_where_its_tool_or_description_says_so():
    """excel-mcp-server's `find_cells(query)` ("Find cells whose value contains the query") and a knowledge graph's
    `search_nodes(query)` were sent `SELECT name FROM pragma_table_info(...)`: "query" has two senses. A parameter
    named so is sent SQL only where its description or its tool's says SQL, a select, a statement or a database;
    else a search's words."""
    import random

    from mcprl.scenarios.lexicon import SHAPED
    from mcprl.scenarios.values import Knowledge, SeenValue

    search = {"type": "object", "properties": {"query": {"type": "string"}}, "required": ["query"]}
    tools = {
        "find_cells": "Find cells whose value contains (or equals) the query.",
        "execute_query": "Execute a SQL query.",
    }
    knowledge = Knowledge([], descriptions=tools)
    knowledge.seen = [SeenValue(value="Steel bolt order", field="product", call=0, session=0)]
    rng = random.Random(0)
    sent = {tool: [knowledge.arguments(tool, search, 0, rng) for _ in range(20)] for tool in tools}
    sql = {
        tool: [args["query"] for args, _ in drawn if args and SHAPED["sql"].fullmatch(args["query"])]
        for tool, drawn in sent.items()
    }
    assert sql["execute_query"] and not sql["find_cells"], sql


def test_a_value_a_write_gave_and_a_read_said_again_is_the_writes_to_make_first_in_a_fresh_session():
    """mcp-server-tree-sitter: `register_project_tool` gave the project "Weekly report", `list_projects_tool` listed
    it after, and `analyze_project` was sent it from the listing: no write was known to have issued it, so later
    sessions (each a fresh server) sent it unregistered ("Project 'Weekly report' not found", 60 calls). The write
    that gave it first in the session is where it came from: it is the value's issuer."""
    import random

    from mcprl.scenarios.values import Knowledge

    knowledge = Knowledge([], writers=frozenset({"register_project"}), fresh_sessions=True)
    project = json.dumps({"name": "Weekly report", "root_path": "/srv/repo"})
    for index, (tool, args) in enumerate([("register_project", {"name": "Weekly report"}), ("list_projects", {})]):
        knowledge.learn(
            tool, args, [], index=index, session=0, text=project, is_error=False, error_kind=None,
            values=[("name", "Weekly report"), ("root_path", "/srv/repo")],
        )  # fmt: skip
    schema = {"type": "object", "properties": {"project": {"type": "string"}}, "required": ["project"]}
    for index in range(2, 12):
        args, leaves = knowledge.arguments("analyze_project", schema, session=0, rng=random.Random(index))
        found = args["project"] == "Weekly report"  # (any other: "Project 'x' not found")
        knowledge.learn(
            "analyze_project", args, leaves, index=index, session=0, is_error=not found, error_kind=None,
            text=project if found else f"Project '{args['project']}' not found", values=[("files", 3)] if found else [],
        )  # fmt: skip
        if found:
            break
    assert args["project"] == "Weekly report"
    assert "register_project" in knowledge.issuers["project"], dict(knowledge.issuers)


def test_an_error_that_names_a_parameter_blames_it_and_not_a_list_item_sent_the_same_value():
    """ "no folder '340 bytes'" of a call sent `folder` "340 bytes" and `exclude` ["340 bytes", "29 bytes"] was read as
    a result per item that failed (the item "340 bytes"): the folder was not blamed, and sizes went on being sent
    as folders. The parameter the error names by its name is to blame."""
    from mcprl.scenarios.values import Drawn, Knowledge

    knowledge = Knowledge([])
    args = {"folder": "340 bytes", "exclude": ["340 bytes", "29 bytes"]}
    leaves = [
        Drawn(path="folder", name="folder", arm="result.q2.csv", value="340 bytes"),
        Drawn(path="exclude[]", name="exclude", arm="result.q2.csv", value="340 bytes"),
        Drawn(path="exclude[]", name="exclude", arm="result.x", value="29 bytes"),
    ]
    knowledge.learn(
        "list_files", args, leaves, index=0, session=0, text="Error executing tool list_files: no folder '340 bytes'",
        is_error=True, error_kind=None, values=[],
    )  # fmt: skip
    assert "'340 bytes'" in knowledge.refused["folder"] and not knowledge.refused["exclude"]


def test_an_error_that_names_nothing_of_a_call_sent_an_empty_object_blames_no_value():
    """mcp-sqlite-server's `update_records` sent `table` "products" and `data` {}: `SQLITE_ERROR: near "WHERE":
    syntax error` names nothing, and was blamed on the one value sent, the table, which then went unsent to its
    reads (`read_records` never answered). The empty object is the likelier fault: no value is blamed."""
    from mcprl.scenarios.values import Drawn, Knowledge

    knowledge = Knowledge([])
    leaves = [Drawn(path="table", name="table", arm="result.name", value="products")]
    knowledge.learn(
        "update_records", {"table": "products", "data": {}, "conditions": {}}, leaves, index=0, session=0,
        text='Error updating records: SQLITE_ERROR: near "WHERE": syntax error', is_error=True, error_kind=None,
        values=[],
    )  # fmt: skip
    assert not knowledge.refused["table"]
    knowledge.learn(
        "read_records", {"table": "WHERE"}, [Drawn(path="table", name="table", arm="probe", value="WHERE")], index=1,
        session=0, text='Error reading records: Table "WHERE" does not exist', is_error=True, error_kind=None,
        values=[],
    )  # fmt: skip
    assert knowledge.refused["table"] == {"'WHERE'"}  # (an error that names the value still blames it)


def test_a_value_sent_to_a_tool_that_answered_as_before_has_not_worked():
    """mcp-simple-timeserver's `calculate_time_distance` answers "Distance: 0 (same parameters, error?)" whatever
    city it is sent; "New York", which the offline server cannot place, was credited as a city that worked, sent on
    to every tool taking a city, and never blamed for the errors that quoted it. An answer said before shows no value
    works, unless it says that value; and an error that quotes a value sent to one parameter alone blames it."""
    from mcprl.scenarios.values import Drawn, Knowledge

    knowledge = Knowledge([])

    def learn(tool: str, args: dict, text: str, is_error: bool = False) -> None:
        leaves = [Drawn(path=k, name=k, arm="example", value=v) for k, v in args.items()]
        index = len(knowledge.made)
        knowledge.learn(
            tool, args, leaves, index=index, session=index, text=text, is_error=is_error, error_kind=None, values=[]
        )

    learn("distance", {}, "Distance: 0 (same parameters, error?)")
    learn("distance", {"city": "New York"}, "Distance: 0 (same parameters, error?)")
    learn("holidays", {"country": "DE"}, "No public holiday data available for Germany (2026).")
    learn("holidays", {"country": "Poland"}, "No public holiday data available for Poland (2026).")
    assert knowledge.worked["city"] == []
    assert knowledge.worked["country"] == ["DE", "Poland"]  # (the first answer new, the second saying its country)
    learn("now", {"city": "New York"}, 'Error: Could not resolve location "New York".', is_error=True)
    assert "'New York'" in knowledge.refused["city"]


def test_a_parameter_an_error_asked_for_alone_is_given_until_a_value_works_and_a_value_two_tools_refused_is_not():
    """@cyanheads/git-mcp-server: every tool's optional `path` defaults to a session directory none set ("No session
    working directory set. Please specify a 'path'"), and "git init", quoted by another error, was sent as a path to
    tool after tool ("Working directory does not exist: /srv/r/git init"): the repository in plain view came at the
    84th call. A parameter an error asked for alone stays given though a value sent was refused; a value two tools
    refused on a parameter of that name is not sent there again; of the values in plain view, a path comes first for a
    parameter that takes one (not the transport's name, `stdio`, beside it). The other tool the error names, the one
    that sets the directory, is no parameter asked for beside `path`: `path` was still asked for alone."""
    import random

    from mcprl.scenarios.values import Drawn, Knowledge

    tools = ["git_status", "git_log", "git_diff", "git_show", "git_blame", "git_branch"]
    schema = {"type": "object", "properties": {"path": {"type": "string", "default": "."}}}
    params = {t: ["path"] for t in [*tools, "git_set_working_dir"]}
    knowledge = Knowledge(["stdio", "Git Working Directory", "/srv/r"], params=params)
    rng, sent = random.Random(0), []
    for i in range(30):
        tool = tools[i % len(tools)]
        if (drawn := knowledge.arguments(tool, schema, i, rng)) is None:
            continue
        args, leaves = drawn
        path = args.get("path")
        sent.append((tool, path))
        if path == "/srv/r":
            break
        if path in (None, "."):
            text = "Error: No session working directory set. Please specify a 'path' or use 'git_set_working_dir'."
        else:
            text = f"Error: Working directory does not exist: /srv/r/{path}. Pass 'git init' to make one."
        knowledge.learn(tool, args, leaves, index=i, session=i, text=text, is_error=True, error_kind=None, values=[])
    assert sent[-1][1] == "/srv/r" and len(sent) <= len(tools) + 3, sent  # (each tool called plain first)
    # ... though another tool refused a value of it by name after it was asked for (old code: optional again, and
    # only the values errors named sent, "git init" among them)
    plain = "Error: No session working directory set. Please specify a 'path' or use 'git_set_working_dir' first."
    for seed in range(5):
        knowledge = Knowledge(["stdio", "Git Working Directory", "/srv/r"], params=params)
        knowledge.learn("git_status", {}, [], index=0, session=0, text=plain, is_error=True, error_kind=None, values=[])
        args, leaves = {"path": "git init"}, [Drawn(path="path", name="path", arm="error", value="git init")]
        text = "Error: Working directory does not exist: /srv/r/git init"
        knowledge.learn(
            "git_show", args, leaves, index=1, session=1, text=text, is_error=True, error_kind=None, values=[]
        )
        drawn = knowledge.arguments("git_status", schema, 2, random.Random(seed))
        assert drawn is not None and drawn[0].get("path") == "/srv/r", (seed, drawn)
    # a value two tools refused on a parameter of a name is not sent there on a third while another is left
    schema = {"type": "object", "properties": {"target": {"type": "string"}}, "required": ["target"]}
    for seed in range(10):
        knowledge = Knowledge(["stdio", "/srv/r"], params={t: ["target"] for t in tools})
        for i, tool in enumerate(tools[:2]):
            args, leaves = {"target": "stdio"}, [Drawn(path="target", name="target", arm="context", value="stdio")]
            text = "Error: Working directory does not exist: /srv/r/stdio"
            knowledge.learn(
                tool, args, leaves, index=i, session=i, text=text, is_error=True, error_kind=None, values=[]
            )
        drawn = knowledge.arguments(tools[2], schema, 2, random.Random(seed))
        assert drawn is not None and drawn[0]["target"] != "stdio", (seed, drawn)


def test_an_optional_parameter_is_never_sent_its_default_and_two_dates_come_together():
    """A distance between two dates, each "now" by default, is 0 unless both are given: mcp-simple-timeserver's
    `calculate_time_distance` (eight optional parameters, each a default) said "Distance: 0" 17 times, sent "now"
    as a date, and never got two dates. An optional parameter is never sent its default (leaving it out gives that),
    and while a tool says the same again its calls give more of its optional parameters at once."""
    import random

    from mcprl.scenarios.values import Knowledge

    def described(*examples: str) -> dict:
        listed = ", ".join(f'"{e}"' for e in examples)
        return {"type": "string", "default": "now", "description": f'ISO 8601 date or "now". Examples: {listed}'}

    cities = {"type": "string", "default": "", "enum": ["", "Warsaw", "Tokyo", "Lima", "Oslo", "Perth"]}
    schema = {
        "type": "object",
        "properties": {
            "from_date": described("2025-01-15", "2025-02-01", "2025-03-10", "2025-04-22", "2025-05-30", "now"),
            "to_date": described("2025-12-31", "2025-11-02", "2025-10-09", "2025-09-18", "2025-08-27", "now"),
            **{name: cities for name in ("unit", "timezone", "city", "country")},
            **{name: {"type": "boolean", "default": False} for name in ("business_days", "exclude_holidays")},
        },
    }
    for seed in range(4):
        knowledge, rng = Knowledge([], params={"distance": list(schema["properties"])}), random.Random(seed)
        two_dates = 0
        for i in range(20):
            if (drawn := knowledge.arguments("distance", schema, i, rng)) is None:
                continue  # (no call left that was not made)
            args, leaves = drawn
            assert all(args[k] not in ("now", "", False) for k in args)  # (no default)
            two_dates += all(args.get(k, "now") != "now" for k in ("from_date", "to_date"))
            text = "Distance: 0 (same parameters, error?)"
            knowledge.learn(
                "distance", args, leaves, index=i, session=i, text=text, is_error=False, error_kind=None, values=[]
            )
        assert two_dates >= 4, (seed, two_dates)


def test_the_two_ends_of_a_range_are_given_in_order():
    """mcp-text-editor's ranges were drawn an end at a time: "with ranges (start 3, end 20), (start 19, end 5)", and
    git-mcp-server's blame "start line 2 and end line 1". Two parameters that name a range's first and last
    (`start`/`end`, `from_date`/`to_date`, `minPrice`/`maxPrice`) are given in order, at any depth, each value
    keeping the source it came from."""
    import random

    from mcprl.scenarios.values import Knowledge

    line = {"type": "integer", "minimum": 1, "maximum": 40}
    date = {"type": "string", "description": 'Examples: "2025-12-31", "2025-01-15", "2025-06-01"'}
    schema = {
        "type": "object",
        "properties": {
            "file_path": {"type": "string", "enum": ["/srv/a.txt"]},
            "ranges": {
                "type": "array",
                "minItems": 2,
                "items": {"type": "object", "properties": {"start": line, "end": line}, "required": ["start", "end"]},
            },
            "start_line": line,
            "end_line": line,
            "from_date": date,
            "to_date": date,
        },
        "required": ["file_path", "ranges", "start_line", "end_line", "from_date", "to_date"],
    }
    for seed in range(6):
        knowledge, rng = Knowledge([]), random.Random(seed)
        for i in range(10):
            if (drawn := knowledge.arguments("read", schema, i, rng)) is None:
                continue
            args, leaves = drawn
            assert all(r["start"] <= r["end"] for r in args["ranges"]), args
            assert args["start_line"] <= args["end_line"] and args["from_date"] <= args["to_date"], args
            at = {d.path: d.value for d in leaves}
            assert at["start_line"] == args["start_line"] and at["to_date"] == args["to_date"], (at, args)
            knowledge.learn("read", args, leaves, index=i, session=i, text=f"read {i}", is_error=False,
                            error_kind=None, values=[])  # fmt: skip


def test_a_yes_or_no_a_result_said_of_something_else_is_no_value_of_a_parameter():
    """mcp-simple-timeserver said "DST Active: No", and exploring sent "No" as a `country` (the server took it: a
    task said "with country No"). A result's yes or no goes only to a parameter named as what it was said of."""
    import random

    from mcprl.scenarios.values import Knowledge, SeenValue

    knowledge = Knowledge([])
    knowledge.seen = [
        SeenValue(value="No", field="dst_active", call=0),
        SeenValue(value="yes", field="verbose", call=0),
        SeenValue(value="Oslo", field="city", call=0),
    ]
    schema = {
        "type": "object",
        "properties": {"country": {"type": "string"}, "dst_active": {"type": "string"}},
        "required": ["country", "dst_active"],
    }
    sent = {"country": set(), "dst_active": set()}
    for seed in range(40):
        args, _ = knowledge.arguments("holidays", schema, session=0, rng=random.Random(seed))
        for k, v in args.items():
            sent[k].add(v)
    assert not {"No", "yes"} & sent["country"] and "Oslo" in sent["country"], sent
    assert "No" in sent["dst_active"], sent


def test_a_parameter_taking_a_statement_is_sent_statements_not_the_words_results_held():
    """dbhub's `execute_sql` was sent "main", "salary" and "PRIMARY" (a search's schema, table and index names):
    a syntax error each, and the tool retired before any query ran. A parameter that takes a statement is sent
    statements (the dictionary's, those composed over the names results gave, a result's own statement), never a
    bare word a result held; a search's `query` beside it, not described as one, still takes those words."""
    import random

    from mcprl.scenarios.lexicon import shaped
    from mcprl.scenarios.values import Knowledge, SeenValue

    knowledge = Knowledge([])
    knowledge.seen = [
        SeenValue(value=v, field=f, call=0)
        for v, f in [("main", "schema"), ("salary", "table"), ("PRIMARY", "name"), ("SELECT 1", "last_query")]
    ]
    schema = {
        "type": "object",
        "properties": {"sql": {"type": "string", "description": "The SQL to run"}, "query": {"type": "string"}},
        "required": ["sql", "query"],
    }
    # (a result's field named as the parameter, drawn first of the result's fields, was sent: `last_query`'s)
    knowledge.tried["execute_sql", "query"].add(repr("SELECT 1"))
    sent: dict[str, set] = {"sql": set(), "query": set()}
    for seed in range(60):
        args, _ = knowledge.arguments("execute_sql", schema, session=0, rng=random.Random(seed))
        for k, v in args.items():
            sent[k].add(v)
    assert sent["sql"] and all(shaped(v) or v.upper().startswith(("SELECT", "SHOW")) for v in sent["sql"]), sent
    assert {"main", "salary", "PRIMARY"} & sent["query"], sent


def test_a_value_a_read_gave_before_a_write_said_it_back_comes_from_the_read():
    """excel-mcp-server's `format_range` answers with the sheet it formatted; a `read_range` after it was sent that
    sheet as the write's, its chain held the write, and no question on the sheet's rows was kept (5 tasks in one
    folder, 16 in another). A value a read of the session gave first is that read's, whatever says it back later;
    one a write gave first stays the write's (the id of what it made, listed after it)."""
    import random

    from mcprl.scenarios.values import Knowledge

    knowledge = Knowledge([], writers=frozenset({"format_range", "create_sheet"}))

    def learn(tool: str, index: int, values: list[tuple[str, str]]) -> None:
        knowledge.learn(
            tool, {}, [], index=index, session=0, text="ok", is_error=False, error_kind=None, values=values
        )  # fmt: skip

    learn("describe_workbook", 0, [("sheet", "Orders")])
    learn("format_range", 1, [("sheet", "Orders")])
    learn("create_sheet", 2, [("sheet", "Report")])
    learn("list_sheets", 3, [("sheet", "Report"), ("sheet", "Orders")])
    came_from = {s.value: s.call for s in knowledge.seen}
    assert came_from["Orders"] in {0, 3} and came_from["Report"] == 2, came_from
    schema = {"type": "object", "properties": {"sheet": {"type": "string"}}, "required": ["sheet"]}
    for seed in range(20):
        _, leaves = knowledge.arguments("read_range", schema, session=0, rng=random.Random(seed))
        assert all(d.parent != 1 for d in leaves), leaves  # never sent as the format's


def test_a_parameter_described_as_a_things_name_is_sent_names_results_gave_before_their_other_fields():
    """mcp-knowledge-graph's `create_relations` takes `from`, "The name of the entity where the relation starts": it
    was sent the server's file path and an entity's `createdAt` stamp as often as a name, and its graph held relations
    from "2026-12-03T05:17:46.082Z". A result's field that the parameter's description says it is (its `name`) is
    drawn from first, as one sharing the parameter's name is."""
    import random

    from mcprl.scenarios.values import Knowledge, SeenValue

    knowledge = Knowledge([])
    knowledge.seen = [
        SeenValue(value="Weekly report", field="name", call=0),
        SeenValue(value="2026-12-03T05:17:46.082Z", field="createdAt", call=0),
        SeenValue(value="person", field="entityType", call=0),
        SeenValue(value="Send the draft to Sam.", field="observations", call=0),
    ]
    schema = {
        "type": "object",
        "properties": {"from": {"type": "string", "description": "The name of the entity where the relation starts"}},
        "required": ["from"],
    }
    sent = [
        knowledge.arguments("create_relations", schema, session=0, rng=random.Random(s))[0]["from"] for s in range(60)
    ]
    assert sent.count("Weekly report") > len(sent) / 2, sent


def test_a_kind_of_one_thing_is_never_written_as_a_kind_of_another():
    """mcp-knowledge-graph's `create_relations` takes `relationType`: it was written the entity types results gave
    ("person"), which share only the word "type" with it, and its graph held relations of type "person". A result's
    field whose name shares only a kind word with the parameter's, each a kind of another thing, is no value of it;
    one of the kind alone (`type`) or of the same thing is."""
    import random

    from mcprl.scenarios.values import Knowledge, SeenValue

    knowledge = Knowledge([], writers=frozenset({"create_relations"}))
    knowledge.seen = [
        SeenValue(value="Weekly report", field="name", call=0),
        SeenValue(value="person", field="entityType", call=0),
    ]

    def sent(name: str) -> list:
        schema = {"type": "object", "properties": {name: {"type": "string"}}, "required": [name]}
        tool = "create_relations"
        return [knowledge.arguments(tool, schema, session=0, rng=random.Random(s))[0][name] for s in range(40)]

    assert "person" not in sent("relationType")
    knowledge.seen.append(SeenValue(value="works with", field="relationType", call=1))
    assert "works with" in sent("relationType")
    assert "person" in sent("type")


def test_a_search_is_never_sent_where_a_file_is():
    """excel-mcp-server's `find_cells` takes a `query` to find among a workbook's cells: it was sent the workbook's
    path (joined from its folder, or as a result gave it) on every call, and found nothing each time. A search is
    sent words; a path only where its schema or description gives one."""
    import random

    from mcprl.scenarios.values import Knowledge, SeenValue

    knowledge = Knowledge(["/data/xl"], folders={"/data/xl": ["shop.xlsx", "staff.xlsx"]})
    knowledge.seen = [
        SeenValue(value="/data/xl/shop.xlsx", field="path", call=0),
        SeenValue(value="Engineering", field="team", call=0),
        SeenValue(value="Ann Lee", field="name", call=0),
    ]
    schema = {
        "type": "object",
        "properties": {"path": {"type": "string"}, "query": {"type": "string", "description": "Text to search for"}},
        "required": ["path", "query"],
    }
    sent = [knowledge.arguments("find_cells", schema, session=0, rng=random.Random(s)) for s in range(40)]
    queries = [args["query"] for args, _ in filter(None, sent)]
    assert queries and not any(q.startswith("/") for q in queries), queries
    assert any(args["path"].startswith("/data/xl/") for args, _ in filter(None, sent))  # (the path goes to `path`)


def test_a_parameter_its_docstring_says_takes_a_file_is_described_so_and_never_sent_a_folder(tmp_path):
    """mcp-server-tree-sitter's tools describe their parameters only in their docstrings ("Args: path: File path
    relative to project root"; the schema says `"title": "Path"`): `get_ast` was sent "." and the server's folder, and
    answered "Could not detect language" or "Is a directory". A parameter gets the description its tool's docstring
    gives (Google's `Args:`, NumPy's `Parameters`, Sphinx's `:param:`), never overriding the schema's; one said to take
    a file's path is sent no folder: the dictionary's "." and "/", nor a folder in plain view."""
    import random

    from mcprl.scenarios.value_sources import documented, folder_entries
    from mcprl.scenarios.values import Knowledge
    from mcprl.tools import ServerSpec

    google = "Get the tree of a file.\n\n    Args:\n        project: Project name\n        path: File path relative to"
    google += (
        " project root\n            (continued)\n        depth: How deep\n\n    Returns:\n        tree: the tree\n"
    )
    numpy = "Read.\n\nParameters\n----------\npath : str\n    File to read\n\nReturns\n-------\nstr\n"
    sphinx = "Read.\n:param path: File to read\n:param str tree: not a parameter of it\n"
    props = {"path": {"title": "Path", "type": "string"}, "tree": {"type": "string", "description": "Given."}}
    for text, said in [
        (google, "File path relative to project root"),
        (numpy, "File to read"),
        (sphinx, "File to read"),
    ]:
        schema = documented({"name": "t", "description": text, "inputSchema": {"properties": props}})["inputSchema"]
        assert schema["properties"]["path"]["description"] == said
        assert schema["properties"]["tree"]["description"] == "Given."  # (the schema's own stays)

    (tmp_path / "docs").mkdir()
    (tmp_path / "app.py").write_text("print(1)\n")
    spec = ServerSpec.parse("some-server", cwd=str(tmp_path))
    knowledge = Knowledge([str(tmp_path)], folders=folder_entries(spec, [str(tmp_path)]))
    tool = documented({"name": "get_ast", "description": google, "inputSchema": {"properties": props}})
    schema = {**tool["inputSchema"], "required": ["path"]}
    sent = {knowledge.arguments("get_ast", schema, session=0, rng=random.Random(s))[0]["path"] for s in range(40)}
    assert not sent & {".", "/", "..", str(tmp_path), str(tmp_path / "docs")}, sent
    assert str(tmp_path / "app.py") in sent, sent


def test_no_list_a_call_is_sent_names_one_thing_twice():
    """mcp-knowledge-graph's `update_entities` was sent "Weekly report" twice in one list (its one entity name any
    result held, drawn again for each item), and grounded "In the entities "Weekly report" and "Weekly report" ...,
    what is the version of the first one listed?". The items of a list a call is sent are different things: one named
    as an item before it is left out."""
    import random

    from mcprl.scenarios.values import Knowledge, SeenValue

    item = {
        "type": "object",
        "properties": {
            "name": {"type": "string", "description": "The name of the entity to update"},
            "entityType": {"type": "string", "description": "The updated type of the entity"},
        },
        "required": ["name"],
    }
    schema = {"type": "object", "properties": {"entities": {"type": "array", "items": item}}, "required": ["entities"]}
    knowledge = Knowledge([], writers=frozenset({"update_entities"}))
    knowledge.seen = [SeenValue(value="Weekly report", field="name", call=0, session=1)]
    lists = []
    for seed in range(30):
        drawn = knowledge.arguments("update_entities", schema, session=1, rng=random.Random(seed))
        if drawn is not None:
            args, leaves = drawn
            names = [e["name"] for e in args["entities"]]
            assert len(names) == len(set(names)), args
            assert {d.value for d in leaves if d.name == "name"} == set(names), (args, leaves)  # (what was sent)
            lists.append(names)
    assert any("Weekly report" in names for names in lists), lists


def test_a_read_made_again_to_check_writes_leaves_its_tool_as_worth_drawing_as_before():
    """A spreadsheet's `read_range` drawn once (a sheet it had not read) and made again six times after writes, each
    saying what it said before, had its share of calls cut as a tool that repeats itself: it read one sheet of two in
    172 calls. Calls made again are checks, not draws; a tool whose draws repeat themselves is still worth less."""
    from mcprl.scenarios.values import Knowledge

    def weights(again: bool) -> float:
        knowledge = Knowledge([])
        for i in range(7):
            args = {"sheet": "Staff"}
            knowledge.learn(
                "read_range",
                args,
                [],
                index=i,
                session=i,
                text="name: Ana",
                is_error=False,
                error_kind=None,
                values=[],
                again=again and i > 0,
            )
        return knowledge.logs["read_range"].weight()

    assert weights(again=True) == 3.2 > weights(again=False)


def test_the_items_of_an_optional_list_are_drawn_as_an_optional_value_is():
    """server-filesystem's `directory_tree` kept a task 'with exclude patterns "2 files, 1 directories", 6, a.txt': the
    items of its optional `excludePatterns` were drawn from any source, a listing's total among them, as a required
    value's are. An optional list's items take only what an optional value takes (the schema's, what worked, a
    result's field named for it), and it is left out where none fits."""
    import random

    from mcprl.scenarios.values import Knowledge, SeenValue

    knowledge = Knowledge(["/srv/files"])
    knowledge.seen = [
        SeenValue(value="2 files, 1 directories", field="Total", call=0, session=0),
        SeenValue(value="notes.md", field="name", call=0, session=0),
    ]
    knowledge.worked["excludePatterns"].append("*.log")  # (a pattern that worked before: one to send again)
    schema = {
        "type": "object",
        "properties": {
            "path": {"type": "string"},
            "excludePatterns": {"type": "array", "items": {"type": "string"}, "default": []},
        },
        "required": ["path"],
    }
    rng = random.Random(0)
    drawn = [knowledge.arguments("directory_tree", schema, 0, rng) for _ in range(60)]
    excluded = {d.value for args, leaves in filter(None, drawn) for d in leaves if d.name == "excludePatterns"}
    assert excluded == {"*.log"}, excluded


def test_a_count_of_things_is_no_value_of_a_parameter_that_takes_one_of_them():
    """mcp-memory-keeper's `context_cache_file` was sent `filePath` "0", from its status's "Files tracked: 0": a field
    sharing the word "file" with the parameter, taken for its own. A whole number under a key that counts things
    ("Files tracked", `total_files`, `file_count`) is not of the parameter's name for one that takes one of them; a
    number parameter may take it, and numbers under a plural alone (`sessions`, a list of them) stay named for one."""
    from mcprl.scenarios.values import NAMED_RESULT_PRIOR, Knowledge

    knowledge = Knowledge([])
    for field in ("Files tracked", "total_files", "file_count"):
        assert knowledge.prior(f"result.{field}", "filePath", values=["0", "3"]) != NAMED_RESULT_PRIOR, field
        assert knowledge.prior(f"result.{field}", "max_files", numeric=True, values=["3"]) == NAMED_RESULT_PRIOR
    assert knowledge.prior("result.file", "filePath", values=["notes.md"]) == NAMED_RESULT_PRIOR
    assert knowledge.prior("result.sessions", "session", values=["3", "5"]) == NAMED_RESULT_PRIOR


def test_a_tools_list_is_the_examples_of_its_one_parameter_only():
    """mcp-python-interpreter's `run_python_code` was sent "inline" and "fast" as code: the list its docstring gives
    is its `execution_mode`'s; a tool's own list is a parameter's examples only where it takes that one parameter."""
    import random

    from mcprl.scenarios.values import Knowledge

    run = "Run code.\n\nArgs:\n    code: Python code\n    mode: either inline or subprocess"
    props = {"code": {"type": "string"}, "mode": {"type": "string"}}
    knowledge = Knowledge([], descriptions={"run": run}, params={"run": ["code", "mode"]})
    schema = {"type": "object", "properties": props, "required": ["code"]}
    codes = {knowledge.arguments("run", schema, 0, random.Random(s))[0]["code"] for s in range(30)}
    assert not codes & {"inline", "subprocess"}, codes


def test_a_value_no_error_blamed_is_sent_again_beside_others_and_a_listed_parameter_is_tried_through():
    """mcp-server-code-runner takes a program and one of forty languages, a few installed: each program was sent once,
    beside a language that is not there ("kitc: not found"), and the tool was retired after twelve such failures. A
    value an error did not blame is sent again beside other values, one that got past the server's check (the
    language, where the program was at fault) before one never sent, and a tool whose failures blamed a parameter of
    a list the schema gives is not retired while values of it are untried; no call is made twice."""
    import random

    from mcprl.scenarios.values import Knowledge

    languages = [f"lang{i}" for i in range(19)] + ["python"]
    props = {"code": {"type": "string", "description": "Code snippet"}, "language": {"enum": languages}}
    schema = {"type": "object", "properties": props, "required": ["code", "language"]}
    knowledge, rng = Knowledge([], params={"run": ["code", "language"]}), random.Random(0)
    made, answered = [], []
    for index in range(40):
        if knowledge.retired("run", 12):
            break
        args, leaves = knowledge.arguments("run", schema, 0, rng)
        made.append(json.dumps(args, sort_keys=True))
        code, language = args["code"], args["language"]
        if language != "python":
            text = f"Command failed: {language}c /tmp/tmp.{language}\n/bin/sh: 1: {language}c: not found"
        elif code.startswith("print("):
            text = "42"
        else:
            text = f"NameError: name {code!r} is not defined"
        knowledge.learn(
            "run", args, leaves, index=index, session=0, text=text, is_error=text != "42", error_kind=None, values=[]
        )
        if text == "42":
            answered.append(args)
            break
    assert answered, made
    assert len(made) == len(set(made))


def test_a_tool_has_something_to_send_while_a_value_of_a_listed_parameter_is_untried():
    """mcp-server-code-runner at some seeds: once a language that runs anything (perl, printing nothing) had answered,
    each draw sent the program and the language that had got past the server's check before (neither to blame for
    the failures beside them), a pair made already, again and again, and the tool had nothing new to send (5 of 120
    calls made, 30 languages never sent). A parameter a later draw looks for a value not sent yet for gets one: the
    tool runs out of calls only once every language was sent."""
    import random

    from mcprl.scenarios.values import Knowledge

    languages = ["kit", "julia", "ruby", "go", "scala", "nim", "typescript", "haskell", "lua", "perl", "python", "js"]
    props = {"code": {"type": "string", "description": "Code snippet"}, "languageId": {"enum": languages}}
    schema = {"type": "object", "properties": props, "required": ["code", "languageId"]}

    def run(code: str, language: str) -> str:
        if language == "perl":
            return ""  # (a program is a call of a bareword: nothing printed)
        if language in ("python", "js"):
            printing = code.startswith("print(" if language == "python" else "console.log(")
            return "42" if printing else f"NameError: name {code!r} is not defined"
        return f'Command failed: {language}c "/tmp/tmp.{language}"\n/bin/sh: 1: {language}c: not found'

    for seed in range(20):
        knowledge, rng, sent = Knowledge([], params={"run": ["code", "languageId"]}), random.Random(seed), set()
        for index in range(60):
            if (drawn := knowledge.arguments("run", schema, 0, rng)) is None:
                assert sent == set(languages), (seed, index, set(languages) - sent)
                break
            args, leaves = drawn
            sent.add(args["languageId"])
            text = run(args["code"], args["languageId"])
            knowledge.learn(
                "run", args, leaves, index=index, session=0, text=text, is_error=text not in ("", "42"),
                error_kind=None, values=[],
            )  # fmt: skip


def test_a_program_one_language_refused_is_sent_again_beside_another_that_works():
    """mcp-server-code-runner: `console.log(6 * 7)` was sent beside `shellscript`, and bash refused it (a syntax
    error); javascript, reached later, was never sent it, and no call printed anything. A value blamed beside a
    value of another parameter that had never worked is as good as untried again once a value of that parameter
    works: the program is sent beside the language that runs it."""
    import random
    from dataclasses import replace

    from mcprl.scenarios.values import Knowledge

    languages = ["shellscript", "javascript", "lua"]
    props = {"code": {"type": "string", "description": "Code snippet"}, "language": {"enum": languages}}
    schema = {"type": "object", "properties": props, "required": ["code", "language"]}

    def run(code: str, language: str) -> str:
        if language == "lua":
            return "/bin/sh: 1: lua: not found"
        if language == "shellscript":
            return "42" if code.startswith("echo ") else "Command failed: bash /tmp/tmp.sh\nsyntax error near token"
        return "42" if code.startswith("console.log(") else "" if "*" in code else "SyntaxError: Unexpected token"

    sent = []
    for seed in range(4):
        knowledge, rng = Knowledge([], params={"run": ["code", "language"]}), random.Random(seed)
        for index, (code, language) in enumerate([("console.log(6 * 7)", "shellscript"), ("12 * 4", "javascript")]):
            _, leaves = knowledge.arguments("run", schema, 0, rng)
            leaves = [replace(d, value=code if d.name == "code" else language) for d in leaves]
            text = run(code, language)
            knowledge.learn(
                "run",
                {"code": code, "language": language},
                leaves,
                index=index,
                session=0,
                text=text,
                is_error=text.startswith(("Command failed", "SyntaxError")),
                error_kind=None,
                values=[],
            )
        for index in range(2, 30):
            if (drawn := knowledge.arguments("run", schema, 0, rng)) is None:
                break
            args, leaves = drawn
            sent.append((seed, args["code"], args["language"]))
            text = run(args["code"], args["language"])
            knowledge.learn(
                "run",
                args,
                leaves,
                index=index,
                session=0,
                text=text,
                is_error=text.startswith(("Command failed", "SyntaxError", "/bin/sh")),
                error_kind=None,
                values=[],
            )
    for seed in range(4):
        assert (seed, "console.log(6 * 7)", "javascript") in sent, [s for s in sent if s[0] == seed]


def test_a_json_error_that_says_back_the_request_asks_for_none_of_its_keys():
    """mcp-server-motherduck's `list_columns` answers a bad table with a JSON error that says the request back
    (`{"success": false, "error": "...", "database": "memory", "schema": "main"}`): its keys were read as the error
    asking for the optional `database` and `schema`, sent with every call after. An error's JSON keys are its form;
    one that asks for a parameter in its message still gets it."""
    import random

    from mcprl.scenarios.values import Knowledge

    props = {"table": {"type": "string"}, "database": {"type": "string"}, "schema": {"type": "string"}}
    schema = {"type": "object", "properties": props, "required": ["table"]}
    for text, wanted in (
        ('{"success": false, "error": "Table \'x\' does not exist", "database": "memory", "schema": "main"}', set()),
        ('{"success": false, "error": "Please provide the \'database\' to read"}', {"database"}),
    ):
        knowledge = Knowledge([], params={"list_columns": list(props)})
        args, leaves = knowledge.arguments("list_columns", schema, 0, random.Random(0))
        leaves = [d for d in leaves if d.name == "table"]  # (sent the table alone)
        knowledge.learn(
            "list_columns", {"table": args["table"]}, leaves, index=0, session=0, text=text, is_error=True,
            error_kind=None, values=[],
        )  # fmt: skip
        assert knowledge.wanted == wanted, text


def test_an_id_a_listing_of_its_kind_gave_is_no_handle_awaited_and_an_error_is_reported_by_what_it_says():
    """Seen on @kazuph/mcp-taskmanager: five tools take a `taskId`; the planning gives each task's as `"id"` in its
    `"tasks"` (`{"requestId": "req-1", "tasks": [{"id": "task-1", ...}]}`), a field named `id`, not `taskId`, so the
    id was taken for a handle no call issued: every tool taking one waited while others were left to call, and four
    of the five were called once, before any task existed. An id under the key of the things it identifies is a field
    of that name. The errors each tool gave are reported by what they say ("Task not found"), not by their JSON's
    opening ("Error: {")."""
    from mcprl.scenarios.results import found_nothing
    from mcprl.scenarios.values import Drawn, Knowledge

    knowledge = Knowledge([])
    error = 'Error: {\n  "status": "error",\n  "message": "Task not found"\n}'
    for i, tool in enumerate(["mark_task_done", "update_task", "delete_task"]):
        leaves = [Drawn(path="taskId", name="taskId", arm="probe", value=str(i))]
        knowledge.learn(
            tool, {"taskId": str(i)}, leaves, index=i, session=0, text=error, is_error=True, error_kind=None, values=[]
        )
    assert knowledge.awaited("taskId")  # sent by three tools, never working: awaited from a call that issues one
    assert dict(knowledge.logs["update_task"].errors) == {"error Task not found": 1}
    planned = {"status": "planned", "requestId": "req-1", "tasks": [{"id": "task-1", "title": "Weekly report"}]}
    text = json.dumps(planned)
    values = [("requestId", "req-1"), ("id", "task-1"), ("title", "Weekly report")]
    knowledge.learn(
        "request_planning", {}, [], index=3, session=0, text=text, is_error=False, error_kind=None, values=values
    )
    assert not knowledge.awaited("taskId")
    # its details of a task it does not have say so beside a code that says it again: nothing found, no value to send
    assert found_nothing('{"status": "task_not_found", "message": "No such task found"}')
    assert not found_nothing('{"status": "ok", "title": "Ann", "message": "No such task found"}')
    # ... nor does one that says there are none of a kind of thing (office-word-mcp-server's "No footnotes in document")
    for text in ("No footnotes in document", "No tasks yet.", "No comments"):
        assert found_nothing(text), text
    for text in ("No, the total is 5", "Nodes: 5", "North: 12 units"):
        assert not found_nothing(text), text
    # ... nor one whose one text says it found nothing, the search's words said back in it (sqlite-mcp-server's
    # search), a sentence or not
    for path in ("/srv/db", "."):
        assert found_nothing(json.dumps({"message": f"No matches found for 'shop' in {path}"}), {"query": "shop"}), path
    assert not found_nothing(json.dumps({"message": "No matches found for 'shop' in .", "database": "shop.db"}))


def test_a_parameter_whose_every_failure_blamed_another_awaits_nothing():
    """Seen on mcp-server-tree-sitter: a dozen tools take `project` (a name `register_project_tool(path)` issues) and
    `path` (a file in it); each said "Project '/srv/proj' not found" and nothing of the path. `path` was taken for
    a handle awaited from some call, and the register tool, which requires a `path` itself, waited behind it: one call
    in 150, the ten tools reading a project never answered. A parameter is awaited only where its values were to
    blame; the project still is."""
    from mcprl.scenarios.values import Drawn, Knowledge

    knowledge = Knowledge([])
    for i, tool in enumerate(["get_file", "get_ast", "list_files", "get_symbols"]):
        args = {"project": f"/srv/proj{i}", "path": f"/srv/proj/main{i}.py"}
        leaves = [Drawn(path=k, name=k, arm="context", value=v) for k, v in args.items()]
        text = f"Error executing tool {tool}: Project '/srv/proj{i}' not found"
        knowledge.learn(tool, args, leaves, index=i, session=0, text=text, is_error=True, error_kind=None, values=[])
    assert knowledge.awaited("project") and not knowledge.awaited("path")


def test_a_kind_of_thing_is_drawn_from_the_kinds_its_tools_description_lists():
    """Seen on kanban-mcp: `new_item(item_type, title, ...)` is described "Create a new issue, todo, feature, epic, or
    diary entry for current project.", its parameters only "item_type parameter"; `item_type` was sent the title
    probes ("Unknown item type: person") and the tool never answered, so the board stayed empty. A parameter named for
    a kind draws the kinds a list in its tool's description names, wherever the list stands; one named otherwise does
    not (the title)."""
    import random

    from mcprl.scenarios.values import Knowledge

    described = "Create a new issue, todo, feature, epic,\n            or diary entry for current project."
    schema = {
        "type": "object",
        "properties": {
            "item_type": {"type": "string", "description": "item_type parameter"},
            "title": {"type": "string", "description": "title parameter"},
        },
        "required": ["item_type", "title"],
    }
    knowledge = Knowledge(
        [],
        writers=frozenset({"new_item"}),
        params={"new_item": ["item_type", "title"]},
        descriptions={"new_item": described},
    )
    kinds = {"new issue", "todo", "feature", "epic", "diary entry"}
    # (each a first call, seeded apart: the listed kinds are the trusted source, a probe still drawn now and then)
    drawn = [knowledge.arguments("new_item", schema, session=0, rng=random.Random(seed)) for seed in range(8)]
    assert sum(d is not None and d[0]["item_type"] in kinds for d in drawn) >= 6, drawn
    assert not {d[0]["title"] for d in drawn if d} & kinds


def test_a_text_required_longer_than_any_value_in_view_is_sent_one_that_long():
    """Seen on mcp-shrimp-task-manager: `reflect_task` requires `analysis` of 100 characters at least; no value in view
    was that long, so the calls left it out and the client refused them ("'analysis' is a required property", eight
    times). The schema's least length is met by the dictionary's sentences, as many as it takes: each call drawn is
    valid under the tool's schema."""
    import random

    import jsonschema

    from mcprl.scenarios.values import Knowledge

    schema = {
        "type": "object",
        "properties": {
            "summary": {"type": "string", "minLength": 10},
            "analysis": {"type": "string", "minLength": 100},
        },
        "required": ["summary", "analysis"],
    }
    knowledge = Knowledge([], writers=frozenset({"reflect_task"}))
    for seed in range(4):
        drawn = knowledge.arguments("reflect_task", schema, session=0, rng=random.Random(seed))
        assert drawn is not None
        jsonschema.validate(drawn[0], schema)


def test_an_optional_parameter_takes_a_results_field_only_where_both_name_one_thing():
    """mcp-server-tree-sitter's `analyze_project(scan_depth)` was sent 1796501337, a project's `last_scan_time`, and a
    task stated it ("with scan depth 1796501337"): the two share a word, "scan", but one is a depth and the other a
    time. A result's field names what an optional parameter takes where the word they share is what either is (its
    last word): a `project_name` for a `project`, a `max_depth` for a `scan_depth`."""
    import random

    from mcprl.scenarios.values import Knowledge, SeenValue

    analyze = {
        "type": "object",
        "properties": {"project": {"type": "string"}, "scan_depth": {"type": "integer", "default": 3}},
        "required": ["project"],
    }
    knowledge = Knowledge([])
    knowledge.seen = [
        SeenValue(value="site", field="project_name", call=0),
        SeenValue(value=1796501337, field="last_scan_time", call=0),
        SeenValue(value=5, field="max_depth", call=0),
    ]
    depths = set()
    for seed in range(60):
        args, _ = knowledge.arguments("analyze_project", analyze, session=1, rng=random.Random(seed))
        depths.add(args.get("scan_depth"))
    assert 1796501337 not in depths and 5 in depths, depths


def test_an_error_that_names_the_kinds_of_file_a_path_takes_names_the_files_in_view_of_those_kinds(tmp_path):
    """csv-editor's `load_csv` refused a workbook beside the CSV file with "Invalid file extension. Supported: ['.csv',
    '.tsv', '.txt', '.dat']", and was sent ".csv", ".tsv", ".txt", ".dat" as paths after it: never the CSV file in
    the same folder. An extension an error names, for a parameter that takes a path, is the files in view of it."""
    import random

    from mcprl.scenarios.value_sources import folder_entries
    from mcprl.scenarios.values import Drawn, Knowledge
    from mcprl.tools import ServerSpec

    for name in ("company.xlsx", "orders.xlsx", "notes.md", "sales.csv"):
        (tmp_path / name).write_text("x")
    spec = ServerSpec.parse("some-server", cwd=str(tmp_path))
    knowledge = Knowledge([str(tmp_path)], folders=folder_entries(spec, [str(tmp_path)]))
    load = {"type": "object", "properties": {"file_path": {"type": "string"}}, "required": ["file_path"]}
    workbook = str(tmp_path / "company.xlsx")
    leaves = [Drawn(path="file_path", name="file_path", arm="joined", value=workbook)]
    knowledge.learn(
        "load_csv",
        {"file_path": workbook},
        leaves,
        index=0,
        session=0,
        text="Invalid file path: Invalid file extension. Supported: ['.csv', '.tsv', '.txt', '.dat']",
        is_error=True,
        error_kind="tool_error",
        values=[],
    )
    drawn = [knowledge.arguments("load_csv", load, session=0, rng=random.Random(s))[1][0] for s in range(40)]
    sent = {d.value for d in drawn}
    assert not sent & {".csv", ".tsv", ".txt", ".dat"}, sent
    assert str(tmp_path / "sales.csv") in {d.value for d in drawn if d.arm == "error"}, drawn
    # ... and the call made again at once, as a person who read the error makes it, is sent that file
    again = knowledge.corrected("load_csv", load, {"file_path": workbook}, leaves)
    assert again is not None and again[0] == {"file_path": str(tmp_path / "sales.csv")}, again


def test_a_path_an_error_said_is_no_folder_is_sent_the_folders_in_view(tmp_path):
    """mcp-server-tree-sitter's `register_project_tool` was sent the files of the folder it was started in, one after
    another ("Failed to register project: Path is not a directory: .../pkg/shop.py"), before the folder itself. A
    path an error said is no folder is sent the folders in view from then on, as a person who read it would."""
    import random

    from mcprl.scenarios.value_sources import folder_entries
    from mcprl.scenarios.values import Drawn, Knowledge
    from mcprl.tools import ServerSpec

    (tmp_path / "pkg").mkdir()
    for name in ("main.py", "pkg/shop.py", "pkg/report.py", "notes.md"):
        (tmp_path / name).write_text("x")
    spec = ServerSpec.parse("some-server", cwd=str(tmp_path))
    knowledge = Knowledge([str(tmp_path)], folders=folder_entries(spec, [str(tmp_path)]))
    register = {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}
    shop = str(tmp_path / "pkg" / "shop.py")
    knowledge.learn(
        "register_project",
        {"path": shop},
        [Drawn(path="path", name="path", arm="joined", value=shop)],
        index=0,
        session=0,
        text=f"Failed to register project: Path is not a directory: {shop}",
        is_error=True,
        error_kind="tool_error",
        values=[],
    )
    sent = {
        knowledge.arguments("register_project", register, session=0, rng=random.Random(s))[0]["path"] for s in range(30)
    }
    assert sent and all(Path(p).is_dir() for p in sent if Path(p).is_absolute()), sent
    assert sent & {str(tmp_path), str(tmp_path / "pkg")}, sent


def test_a_tool_whose_failures_move_on_to_a_parameter_none_blamed_before_is_not_left_alone_for_the_earlier_ones():
    """Seen on a CSV server (`column_mean(session_id, column)`): its first calls, made before a table was loaded,
    were refused "Session not found"; sent a loaded session, it said "No numeric column 'item'", and after twelve
    failures in all it was left alone, its numeric column "qty" never sent with a session. A failure that blames only
    a parameter no failure blamed before got further: the run of failures starts again there, once per parameter."""
    from mcprl.scenarios.values import Drawn, Knowledge

    knowledge = Knowledge([])

    def fail(args: dict, text: str) -> None:
        leaves = [Drawn(path=k, name=k, arm="result.x", value=v) for k, v in args.items()]
        index = len(knowledge.made)
        knowledge.learn(
            "column_mean", args, leaves, index=index, session=0, text=text, is_error=True, error_kind=None, values=[]
        )

    for i in range(8):
        fail({"session_id": f"s{i}", "column": "qty"}, "Session not found")
    for name in ("item", "notes", "rows"):
        fail({"session_id": "a68b5da5", "column": name}, f"No numeric column {name!r}")
    assert knowledge.retired("column_mean", 12) is None
    assert knowledge.logs["column_mean"].failing == 3
    for i in range(8, 17):  # (the session refused again is no new fault: the count goes on, to the bound)
        fail({"session_id": f"s{i}", "column": "qty"}, "Session not found")
    assert knowledge.retired("column_mean", 12)


def test_a_table_an_error_names_is_one_queries_are_composed_over():
    """beancount-mcp's `beancount_query` takes BQL, which has no catalogue: every probe for the tables failed
    (`column "sqlite_master" not found in table "postings"`), no query was composed, and exploring stopped at 27 calls
    with no task of the ledger. A name an error gives a thing of a kind that queries are composed over alone (a
    table), quoted and not sent, is one of that kind, as a listing's is; names the call sent, and names of kinds that
    need another (a column, of a table), are not."""
    import random

    from mcprl.scenarios.values import Drawn, Knowledge

    knowledge = Knowledge([])
    probe = "SELECT name FROM sqlite_master WHERE type='table'"
    error = 'BQL query error: column "sqlite_master" not found in table "postings"'
    # ... and a table the call named, refused, is none the server holds
    composed = "SELECT * FROM orders LIMIT 5"
    refused = 'Error: table "orders" does not exist'
    for index, (query, arm, text) in enumerate([(probe, "probe", error), (composed, "composed", refused)]):
        leaves = [Drawn(path="query", name="query", arm=arm, value=query)]
        knowledge.learn(
            "beancount_query",
            {"query": query},
            leaves,
            index=index,
            session=0,
            text=text,
            is_error=True,
            error_kind=None,
            values=[],
        )
    assert knowledge.kinds["table"] == [{"table": "postings"}] and not knowledge.kinds["column"]
    rng = random.Random(0)
    drawn = [knowledge.arguments("beancount_query", SQL, 2, rng) for _ in range(200)]
    composed = {args["query"] for args, leaves in filter(None, drawn) if leaves[0].arm == "composed"}
    assert "SELECT * FROM postings LIMIT 5" in composed, composed


def test_the_fields_of_a_tables_rows_are_its_columns_queries_are_composed_over():
    """beancount-mcp's BQL lists no table's columns (no `information_schema`, no `pragma_table_info`): with "postings"
    known, its exploration sent `SELECT * FROM postings LIMIT n` for 120 values of n and never a column's largest or
    earliest value. The fields of the rows a known query of a table's rows gave are that table's columns, as a known
    listing of them would say."""
    import random

    from mcprl.scenarios.values import Drawn, Knowledge

    knowledge = Knowledge([])
    knowledge.kinds["table"].append({"table": "postings"})
    rows = "SELECT * FROM postings LIMIT 5"
    values = [("date", "2024-01-05"), ("narration", "Coffee"), ("date", "2024-01-09"), ("narration", "Train")]
    leaves = [Drawn(path="query", name="query", arm="composed", value=rows)]
    knowledge.learn(
        "beancount_query",
        {"query": rows},
        leaves,
        index=0,
        session=0,
        text="",
        is_error=False,
        error_kind=None,
        values=values,
    )
    assert knowledge.kinds["column"] == [
        {"table": "postings", "column": "date"},
        {"table": "postings", "column": "narration"},
    ]
    rng = random.Random(0)
    drawn = [knowledge.arguments("beancount_query", SQL, 1, rng) for _ in range(300)]
    composed = {args["query"] for args, leaves in filter(None, drawn) if leaves[0].arm == "composed"}
    assert {"SELECT MAX(date) FROM postings", "SELECT MIN(narration) FROM postings"} & composed, composed


def test_a_value_another_tool_took_under_a_parameters_name_is_not_sent_where_its_own_description_lists_others():
    """mcp-mathematics: `analyze_number_theory` and `calculate_statistics` both take an `operation`, each described
    with its own list ("is_prime, prime_factors, divisors" and "mean, median, mode, stdev, etc."). Once
    "prime_factors" answered on the first, exploring sent it to the second as a value that worked, call after call
    (10 of 11 failed, "Elicitation not supported", an error naming nothing), and the failures were blamed on the
    numbers beside it. A value that worked on another tool's parameter of that name is no proof where the
    parameter lists its own; and the "etc." closing a list is none of its items."""
    import random

    from mcprl.scenarios.values import Knowledge

    def schema(description: str, **more: dict) -> dict:
        properties = {"operation": {"type": "string", "description": description}, **more}
        return {"type": "object", "properties": properties, "required": list(properties)}

    theory = schema("Number theory operation (is_prime, prime_factors, divisors, totient)", number={"type": "integer"})
    numbers = {"type": "array", "items": {"type": "number"}, "description": "List of numbers to analyze"}
    stats = schema("Statistical operation (mean, median, mode, stdev, etc.)", data=numbers)
    takes = {"theory": {"is_prime", "prime_factors", "divisors", "totient"}, "stats": {"mean", "median", "mode"}}
    for seed in range(4):
        knowledge = Knowledge([])
        rng = random.Random(seed)
        sent: dict[str, list[str]] = {"theory": [], "stats": []}
        for i in range(24):
            tool = "theory" if i < 6 else "stats"
            drawn = knowledge.arguments(tool, theory if tool == "theory" else stats, i, rng)
            if drawn is None:
                continue
            args, leaves = drawn
            sent[tool].append(args["operation"])
            ok = args["operation"] in takes[tool]
            text = json.dumps({"success": True, "result": i}) if ok else "Error: Elicitation not supported"
            knowledge.learn(
                tool, args, leaves, index=i, session=i, text=text, is_error=not ok, error_kind=None, values=[]
            )  # fmt: skip
        assert "etc" not in sent["stats"], (seed, sent)
        assert set(sent["theory"]) & takes["theory"], (seed, sent)
        assert sum(op in takes["theory"] for op in sent["stats"]) <= 1, (seed, sent)
        assert sum(op in takes["stats"] for op in sent["stats"]) >= 14, (seed, sent)


def test_what_a_write_was_sent_that_names_nothing_is_no_handle_it_made():
    """mcp-hashlib: `hash_properties {"algorithm": "test"}` failed, then `hash_scrypt {"password": "test", ...}` (a
    derivation that may write, for all its hints say) answered, and the failed call was made again, as if that
    write had made the handle "test". A write makes what it was sent as a name, an id, a path or a handle; not a
    password."""
    from mcprl.scenarios.values import Knowledge

    knowledge = Knowledge([], writers=frozenset({"hash_scrypt", "register"}))
    knowledge.handles.add("algorithm")
    scrypt = {"password": "test", "salt": "pepper"}
    knowledge.learn("hash_scrypt", scrypt, [], index=3, session=1, text="e984", is_error=False, error_kind=None,
                    values=[])  # fmt: skip
    assert not {"'test'", "'pepper'"} & knowledge.made_by(3)
    registered = {"name": "apollo", "algorithm": "sha256", "notes": "x"}
    knowledge.learn("register", registered, [], index=4, session=1, text="ok", is_error=False, error_kind=None,
                    values=[])  # fmt: skip
    assert {"'apollo'", "'sha256'"} <= knowledge.made_by(4) and "'x'" not in knowledge.made_by(4)


def test_a_value_a_fresh_server_held_before_any_write_is_issued_by_no_write():
    """Seen on mcp-hashlib (no tool annotated; a key's derivation is taken for a write): `algorithm` awaited a value
    (tools refused made-up ones), the algorithms `hash_info` lists were read after the derivation in a session it had
    opened, and the first tool sent one of them took the derivation for its issuer: it was made again, as it was,
    first in each of 20 sessions. A value a read gave before any write of a fresh server is the server's: no write
    issued it, and the key the derivation gave still is its own."""
    from mcprl.scenarios.values import Drawn, Knowledge

    knowledge = Knowledge([], writers=frozenset({"derive_key"}))
    key = "9f86d081884c7d659a2feaa0c55ad015"

    def learn(tool: str, args: dict, index: int, session: int, values: list) -> None:
        leaves = [Drawn(path=k, name=k, arm="probe", value=v) for k, v in args.items()]
        knowledge.learn(
            tool, args, leaves, index=index, session=session, text=json.dumps(values), is_error=False,
            error_kind=None, values=values,
        )  # fmt: skip

    learn("hash_info", {}, 0, 0, [("algorithms", "sha512"), ("algorithms", "md5")])
    knowledge.handles.add("algorithm")
    learn("derive_key", {"password": "test", "iterations": 1000}, 1, 1, [("key", key)])
    learn("hash_info", {}, 2, 1, [("algorithms", "sha512"), ("algorithms", "md5")])
    assert repr("sha512") not in knowledge.made_by(1) and repr(key) in knowledge.made_by(1)
    learn("hash_properties", {"algorithm": "sha512"}, 3, 1, [("digest_size", 64)])
    assert not knowledge.issuers.get("algorithm"), dict(knowledge.issuers)


def test_a_number_too_large_for_a_float_is_sent_as_a_value_of_its_type_and_ends_no_exploring():
    """mcp-math (PyPI): `factorial` gave the factorial of a number a result had given, 375 digits, and exploring
    ended: checking whether it fit an integer parameter converted it to a float, which overflowed. An integer is one
    as it is; a text of a number no float holds is no number a parameter takes."""
    import math

    from mcprl.scenarios.value_sources import coerce, fits_type

    big = math.factorial(200)
    assert fits_type(big, ["integer"]) and fits_type(big, ["number"]) and fits_type(big, ["string"])
    assert not fits_type(str(big), ["integer"]) and coerce(str(big), {"type": "integer"}) == str(big)
    assert fits_type("1e3", ["integer"]) and coerce("42", {"type": "integer"}) == 42
