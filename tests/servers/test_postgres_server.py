"""Exploring and grounding on a PostgreSQL database behind @modelcontextprotocol/server-postgres (npm), which we did not
write: one tool, `query`, whose schema requires nothing. `information_schema.tables` lists two hundred tables of the
engine's catalogue (`pg_catalog`) beside the database's own; the tasks ask about the database's, and every kept task's
answer comes back when its chain is replayed. Needs Debian's PostgreSQL (`make postgres`), root to make a database
in its cluster, and npm; skipped with the reason without them."""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess

import pytest

from mcprl.checks import holds_answer
from mcprl.scenarios.config import ExploreConfig
from mcprl.scenarios.explore import explore
from mcprl.scenarios.grounded import ground
from mcprl.scenarios.lexicon import known
from mcprl.tools import ServerSpec, ToolPool

pytestmark = [pytest.mark.integration, pytest.mark.anyio]
SERVER = "@modelcontextprotocol/server-postgres@0.6.2"
TABLES = {
    "customers": "CREATE TABLE customers (id serial PRIMARY KEY, name text, city text, joined date)",
    "products": "CREATE TABLE products (id serial PRIMARY KEY, name text, category text, price numeric(8,2))",
}
ROWS = [
    "INSERT INTO customers (name, city, joined) VALUES ('Ana Lopez', 'Porto', '2023-02-11'), "
    "('Ben Okafor', 'Lagos', '2023-05-30'), ('Cleo Martin', 'Lyon', '2024-01-08')",
    "INSERT INTO products (name, category, price) VALUES ('steel hammer', 'tools', 12.50), "
    "('copper wire', 'electrical', 7.25), ('oak shelf', 'furniture', 89.00), ('garden hose', 'garden', 24.99)",
]


def psql(port: str, *sql: str, database: str = "postgres") -> None:
    commands = " ".join(f"-c {shlex.quote(s)}" for s in sql)
    done = subprocess.run(
        ["su", "postgres", "-c", f"psql -q -v ON_ERROR_STOP=1 -p {port} -d {database} {commands}"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr


@pytest.fixture(scope="module")
def server(tmp_path_factory) -> str:
    """The server's command, installed once with npm (a session each call's group: npx would resolve it each time)."""
    if shutil.which("npm") is None:
        pytest.skip("npm is not installed")
    where = tmp_path_factory.mktemp("npm")
    done = subprocess.run(["npm", "install", "-q", "--prefix", str(where), SERVER], capture_output=True, text=True)
    if done.returncode != 0:
        pytest.skip(f"cannot install {SERVER} from npm: {done.stderr.strip()[-200:]}")
    return str(where / "node_modules" / ".bin" / "mcp-server-postgres")


@pytest.fixture(scope="module")
def database():
    """The URL of a database of two tables in the machine's PostgreSQL cluster (started if it was down), dropped
    after."""
    if shutil.which("pg_lsclusters") is None:
        pytest.skip("PostgreSQL's cluster tools are not installed (make postgres)")
    if os.geteuid() != 0:
        pytest.skip("making a database in the machine's PostgreSQL cluster needs root")
    listed = subprocess.run(["pg_lsclusters", "-h"], capture_output=True, text=True).stdout.split()
    if len(listed) < 4:
        pytest.skip("no PostgreSQL cluster (pg_createcluster)")
    version, cluster, port, status = listed[:4]
    if status != "online":
        started = subprocess.run(["pg_ctlcluster", version, cluster, "start"], capture_output=True, text=True)
        if started.returncode != 0:
            pytest.skip(f"cannot start PostgreSQL: {started.stderr.strip()[-200:]}")
    name = f"mcprl_test_{os.getpid()}"
    psql(port, f"CREATE ROLE {name} LOGIN PASSWORD '{name}'", f"CREATE DATABASE {name} OWNER {name}")
    try:
        psql(port, *TABLES.values(), *ROWS, f"GRANT SELECT ON ALL TABLES IN SCHEMA public TO {name}", database=name)
        yield f"postgresql://{name}:{name}@localhost:{port}/{name}"
    finally:
        psql(port, f"DROP DATABASE IF EXISTS {name}", f"DROP ROLE IF EXISTS {name}")


async def test_a_postgresql_database_grounds_tasks_on_its_own_tables_not_the_engines(server, database):
    spec = ServerSpec.parse(f"{server} {database}")
    async with ToolPool(spec) as pool:
        exploration = await explore(pool, ExploreConfig(calls=48), seed=0, say=lambda _: None)
        tasks, report = await ground(pool, 8, exploration, seed=0, say=lambda _: None)
        assert len(tasks) >= 6, report.summary()
        for t in tasks:  # every kept task's answer comes back on replay, and no task states it
            async with pool.session() as session:
                for step in t.reference:
                    outcome = await session.call(step.tool, step.arguments)
            assert holds_answer(outcome.text, t.answer), (t.task, t.answer, outcome.text)
            assert not holds_answer(t.task, t.answer), t.task
    # queries are composed over the database's tables, never over the engine's catalogue
    composed = [known(c.arguments.get("sql", "")) for c in exploration.calls if c.sources.get("sql") == "composed"]
    tables = {found[1]["table"] for found in composed if found and "table" in found[1]}
    assert tables and tables <= set(TABLES), tables
    # ... and each task is about them: it names a table (or one of its rows), a column or a value of a row
    columns = {c.split()[0] for made in TABLES.values() for c in made.partition("(")[2].split(", ")} - {"id", "name"}
    values = {w for row in ROWS for value in re.findall(r"'([^']*)'", row) for w in value.split()}
    ours = {w.lower().removesuffix("s") for w in [*TABLES, *columns, *values]}
    for t in tasks:
        assert {w.removesuffix("s") for w in re.findall(r"[\w-]+", t.task.lower())} & ours, t.task
