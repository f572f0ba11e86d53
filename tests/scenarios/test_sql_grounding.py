"""Grounding on a server whose one tool runs SQL (mcprl.scenarios.lexicon.QUERIES): exploring composes queries
over the tables and columns that the server's answers name, and each task asks what its query means, in words,
never pasting it; every kept task's answer comes back when its reference chain is replayed."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pytest

from mcprl.checks import holds_answer
from mcprl.scenarios.config import ExploreConfig
from mcprl.scenarios.explore import explore
from mcprl.scenarios.grounded import ground
from mcprl.scenarios.lexicon import QUERIES, composed, known, question, shaped
from mcprl.scenarios.values import echoes, gist
from mcprl.tools import ServerSpec, ToolPool

pytestmark = pytest.mark.anyio
SQL_SERVER = Path(__file__).resolve().parent / "sql_server.py"
SQL_WORDS = re.compile(r"\b(?:SELECT|FROM|WHERE|COUNT\(|MAX\(|MIN\()")


def test_a_composed_query_reads_back_into_its_question_which_states_no_sql():
    names = {"table": [{"table": "loans"}], "column": [{"table": "loans", "column": "book_id"}]}
    queries = composed("sql", "", names)
    assert queries and all(shaped(q) for q in queries)
    # text that is not a query is not taken for one
    assert not any(shaped(t) for t in ("select the best one", "show me the weather", "update the notes", "Porto"))
    assert all(shaped(t) for t in ("SELECT 1", "show tables", "INSERT INTO t VALUES (1)", "delete from t where x=1"))
    for q in queries:
        query, binding = known(q)  # type: ignore[misc]
        assert binding["table"] == "loans"
        asked = question(q, 3)
        if query.ask is not None:
            assert asked is not None and "loans" in asked and not SQL_WORDS.search(asked)
            if "column" in binding:
                assert "book id" in asked  # a column's name as a person writes it
    # the same query however it is spaced, cased or limited is known; an unknown one has no question
    assert known("select  count(*) from loans;") is not None
    assert known("SELECT * FROM loans LIMIT 20") is not None
    assert known("SELECT member FROM loans WHERE days > 7") is None and question("SELECT 1", 1) is None
    # a text column's largest value is the last in alphabetical order, but a date's is the latest
    top = "SELECT MAX(date) FROM orders"
    assert "alphabetical" in question(top, "Cleo")  # type: ignore[operator]
    latest = question(top, "2024-03-11", dated=True)
    assert latest is not None and "latest" in latest and "alphabetical" not in latest
    # ... asked for as a date, the column named as one whatever its name: "the earliest ordered" asks nothing
    earliest = question("SELECT MIN(ordered) FROM orders", "2024-02-01", dated=True) or ""
    assert re.search(r"\bearliest date\b", earliest) and "ordered column" in earliest, earliest
    # a name that is not an identifier is never composed into a query
    assert composed("sql", "", {"table": [{"table": "drop table; --"}]}) == []
    # every known query with a question is one over names
    assert all(q.over for qs in QUERIES.values() for q in qs if q.ask)
    # a result that only says back what the call sent is no news; one that computed something is
    assert echoes("[(26,)]", {"sql": "SELECT 26"})
    assert not echoes("[(4,)]", {"sql": "SELECT COUNT(*) FROM books"})
    assert not echoes("Echo: hi there", {"message": "hi there"})
    # ... and rows of the number a query was sent, in a JSON result of keys and types (beancount-mcp's BQL: "SELECT
    # 1" answered, then "SELECT 2" to "SELECT 28" took 22 of its 47 calls as new answers) say what the last did
    rows = '{{"columns": [{{"name": "{0}", "type": "builtins.int"}}], "rows": [["{0}"], ["{0}"]]}}'
    assert gist(rows.format(1), {"query": "SELECT 1"}) == gist(rows.format(2), {"query": "SELECT 2"})
    assert gist("5", {"expression": "2 + 3"}) != gist("6", {"expression": "2 + 4"})


@pytest.fixture(scope="module")
def sql_grounded():
    import anyio

    async def run():
        async with ToolPool(ServerSpec.parse(f"{sys.executable} {SQL_SERVER}")) as pool:
            exploration = await explore(pool, ExploreConfig(calls=48), seed=0, say=lambda _: None)
            tasks, report = await ground(pool, 10, exploration, seed=0, say=lambda _: None)
            replayed = []
            async with pool.session() as session:  # the database is read-only: one session replays every chain
                for t in tasks:
                    for step in t.reference:
                        outcome = await session.call(step.tool, step.arguments)
                    replayed.append(outcome.data_text)
        return exploration, tasks, report, replayed

    return anyio.run(run)


def test_an_sql_tool_grounds_tasks_that_ask_in_words_and_replay(sql_grounded):
    exploration, tasks, report, replayed = sql_grounded
    assert len(tasks) >= 8, report.summary()
    for t, result in zip(tasks, replayed):
        # the answer comes back when the reference chain is replayed
        answers = t.answer if isinstance(t.answer, list) else [t.answer]
        assert all(holds_answer(result, a) for a in answers), (t.task, t.answer, result)
        # no task pastes its query, nor states its answer
        assert not SQL_WORDS.search(t.task), t.task
        for step in t.reference:
            for v in step.arguments.values():
                assert not (shaped(v) and str(v).lower() in t.task.lower()), t.task
        assert not any(holds_answer(t.task, a) for a in answers), (t.task, t.answer)
    # the tasks ask about both tables, and about columns the server's answers named (no probe names one)
    assert all(any(table in t.task for t in tasks) for table in ("books", "loans"))
    columns = {"title", "author", "year", "pages", "book id", "member", "days"}
    assert any(c in t.task for t in tasks for c in columns)
    # rows printed without their columns' names are read by the columns a listing named: a book's field, asked by
    # the book ("What is the year of the book Emma?"), not by the query that found it
    assert any(t.metadata["kind"] == "field" and t.metadata["field"] in columns for t in tasks)


def test_exploring_composes_queries_only_over_names_that_answered(sql_grounded):
    exploration, *_ = sql_grounded
    composed_calls = [c for c in exploration.calls if c.sources.get("sql") == "composed"]
    # once a table listing answered, a query is composed over a table or a column of the database, never over a
    # value of a row ("SELECT COUNT(*) FROM Ada")
    first_listing = min(
        c.index for c in exploration.calls if not c.is_error and (k := known(c.arguments["sql"])) and k[0].lists
    )
    columns = {"books": {"id", "title", "author", "year", "pages"}, "loans": {"id", "book_id", "member", "days"}}
    for c in composed_calls:
        if c.index > first_listing:
            _, binding = known(c.arguments["sql"])  # type: ignore[misc]
            assert binding["table"] in columns and binding.get("column", "id") in columns[binding["table"]]
    assert sum(not c.is_error for c in composed_calls) >= 10
    # the calls are not spent on values varied into answers that say back what was sent ("SELECT 26")
    assert sum(echoes(c.text, c.arguments) for c in exploration.calls if not c.is_error) <= 4


async def test_a_tool_whose_schema_requires_nothing_that_refused_a_call_sent_nothing_is_sent_its_parameters():
    """@modelcontextprotocol/server-postgres's `query` requires nothing in its schema and refuses a call without `sql`
    ("Client was passed a null or undefined query"): exploring made that one call, sent nothing, and stopped, no
    value of an optional parameter ever drawn from a source that makes one up. What a call sent nothing left out is
    all a caller can change: its parameters are given values from then on."""
    async with ToolPool(ServerSpec.parse(f"{sys.executable} {SQL_SERVER} --loose-schema")) as pool:
        exploration = await explore(pool, ExploreConfig(calls=24), seed=0, say=lambda _: None)
    calls = exploration.calls
    assert calls[0].arguments == {} and calls[0].is_error  # (the plainest call first, as for any tool)
    answered = [c for c in calls if not c.is_error]
    assert len(answered) >= 10 and all(c.arguments.get("sql") for c in answered), exploration.summary()
    assert any(known(c.arguments["sql"]) and known(c.arguments["sql"])[0].lists for c in answered)  # a table listing
    # no failed call made twice
    failed = [json.dumps([c.tool, c.arguments], sort_keys=True) for c in calls if c.is_error]
    assert len(failed) == len(set(failed))
