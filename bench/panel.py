"""The grounding panel: third-party MCP servers from PyPI and npm (none written for mcprl), each installed
as a user would, each run on small fixed data, and what exploring and grounding make of it (docs/benchmarks.md,
issue 39's panels).

    python bench/panel.py install --dir D          # venvs, npm installs and fixtures under D (idempotent)
    python bench/panel.py run --dir D --out O [--only NAME,...] [-n 16] [--cpu 1] [--via scenarios|grounding]
    python bench/panel.py list                     # the table

`run` takes the servers one at a time, each on a fresh copy of its fixtures (servers write to them), pinned to
one core (`taskset -c CPU`, `OMP_NUM_THREADS=1`): `mcprl scenarios --server CMD -n 16` (the default, what the
panels of docs/benchmarks.md ran since the forty-seventh session: the offline generator's calls and the fallback
included) or `bench/grounding.py CMD -n 16` (`--via grounding`: exploring and grounding alone). Each server's
record is O/NAME.json (with its outputs under O/NAME/); O/summary.md and O/summary.json hold the table: calls,
errors, distinct calls, tasks kept (grounded; synthesized beside), read tools covered, and the count the docs
last gave.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

ROOT = Path(__file__).resolve().parent.parent
SCENARIOS = ROOT / "bench" / "scenarios"
MCP1 = "mcp<2"  # servers whose SDK calls fail on mcp 2's renamed FastMCP (docs: the fifty-fifth session)
PYDANTIC = "pydantic<2.12"  # mcp-units and mcp-sqlalchemy fail on pydantic 2.12


@dataclass(frozen=True)
class Server:
    """One server of the panel. `command` is a template: {bin} is the install's folder of programs (a venv's
    bin/, an npm install's node_modules/.bin), {fx} the fresh copy of the fixtures named in `fixtures`.
    `last`: the tasks the docs' last panel kept (None where not measured there)."""

    name: str
    source: Literal["pypi", "npm"]
    package: str  # pip requirement or npm spec, pinned
    command: str
    extra: tuple[str, ...] = ()  # more pins: beside it in its venv, or its npm folder
    fixtures: tuple[str, ...] = ()
    program: str = ""  # the program {bin} must hold once installed (default: the command's first {bin}/ word)
    last: int | None = None
    note: str = ""

    def exe(self) -> str:
        if self.program:
            return self.program
        word = next(w for w in self.command.split() if w.startswith("{bin}/"))
        return word.removeprefix("{bin}/")


# The versions are the docs' where they name one; "newest" where they do not (the newest that installed here).
SERVERS: list[Server] = [
    Server("calculator", "pypi", "mcp-server-calculator==0.2.1", "{bin}/mcp-server-calculator", last=16),
    Server(
        "git",
        "pypi",
        "mcp-server-git==2026.10.10",
        "{bin}/mcp-server-git --repository {fx}/repo",
        fixtures=("repo",),
        last=16,
    ),
    Server("time", "pypi", "mcp-server-time==2026.10.10", "{bin}/mcp-server-time", last=10),
    Server("dice", "pypi", "mcp-dice==0.1.2", "{bin}/mcp-dice", extra=(MCP1,), last=16),
    Server(
        "sqlite",
        "pypi",
        "mcp-server-sqlite==2025.4.25",
        "{bin}/mcp-server-sqlite --db-path {fx}/shop.db",
        extra=(MCP1,),
        fixtures=("shop.db",),
        last=16,
    ),
    Server("units", "pypi", "mcp-units==0.3.3", "{bin}/mcp-units", extra=(PYDANTIC,), last=16),
    Server("chess", "pypi", "mcp-chess==0.1.9", "{bin}/mcp-chess", extra=(MCP1,), last=16),
    Server(
        "server-memory",
        "npm",
        "@modelcontextprotocol/server-memory@2026.8.31",
        "env MEMORY_FILE_PATH={fx}/memory.jsonl {bin}/mcp-server-memory",
        last=16,
        note="its graph file named on the command line, absent at first",
    ),
    Server(
        "server-filesystem",
        "npm",
        "@modelcontextprotocol/server-filesystem@2026.8.31",
        "{bin}/mcp-server-filesystem {fx}/files",
        fixtures=("files",),
        last=16,
    ),
    Server("time-mcp", "npm", "time-mcp@1.0.6", "{bin}/time-mcp", last=16),
    Server(
        "motherduck",
        "pypi",
        "mcp-server-motherduck==1.1.0",
        "{bin}/mcp-server-motherduck --db-path {fx}/md/shop.duckdb",
        fixtures=("md",),
        last=16,
        note="version: the newest (the docs name none)",
    ),
    Server(
        "sqlalchemy",
        "pypi",
        "mcp-sqlalchemy==0.2.4",
        "env DATABASE_URL=sqlite:///{fx}/shop.db {bin}/mcp-sqlalchemy",
        extra=(PYDANTIC,),
        fixtures=("shop.db",),
        last=16,
    ),
    Server("code-runner", "npm", "mcp-server-code-runner@0.1.8", "{bin}/mcp-server-code-runner", last=16),
    Server(
        "python-interpreter",
        "pypi",
        "mcp-python-interpreter==1.2.3",
        "{bin}/mcp-python-interpreter --dir {fx}/work --python-path {bin}/python",
        extra=(MCP1,),
        fixtures=("work",),
        last=16,
    ),
    Server(
        "spreadsheet",
        "pypi",
        "mcp-server-spreadsheet==0.3.3",
        "env -C {fx}/sheets {bin}/mcp-server-spreadsheet",
        fixtures=("sheets",),
        last=16,
    ),
    Server(
        "duckdb",
        "pypi",
        "mcp-server-duckdb==1.1.0",
        "{bin}/mcp-server-duckdb --db-path {fx}/shop.duckdb",
        extra=(MCP1,),
        fixtures=("shop.duckdb",),
        last=16,
    ),
    Server(
        "taskmanager",
        "npm",
        "@kazuph/mcp-taskmanager@1.1.1",
        "env TASK_MANAGER_FILE_PATH={fx}/tasks.json {bin}/mcp-taskmanager",
        last=16,
    ),
    Server(
        "text-editor",
        "pypi",
        "mcp-text-editor==1.0.2",
        "env -C {fx}/text {bin}/mcp-text-editor",
        extra=(MCP1,),
        fixtures=("text",),
        last=4,
        note="1.0.2 as in the docs (1.2.2 is the newest)",
    ),
    Server(
        "everything", "npm", "@modelcontextprotocol/server-everything@2026.8.31", "{bin}/mcp-server-everything", last=16
    ),
    Server(
        "knowledge-graph",
        "npm",
        "@itseasy21/mcp-knowledge-graph@1.0.7",
        "{bin}/mcp-knowledge-graph --memory-path {fx}/memory.jsonl",
        last=16,
    ),
    Server(
        "word",
        "pypi",
        "office-word-mcp-server==1.1.11",
        "env -C {fx}/word {bin}/word_mcp_server",
        fixtures=("word",),
        last=16,
    ),
    Server("calculator-mcp", "npm", "@wrtnlabs/calculator-mcp@0.2.1", "{bin}/calculator-mcp", last=16),
    Server(
        "excel",
        "pypi",
        "excel-mcp-server==2.2.2",
        "env -C {fx}/workbooks EXCEL_FILES_PATH={fx}/workbooks {bin}/excel-mcp-server stdio",
        fixtures=("workbooks",),
        last=16,
    ),
    Server(
        "csv-editor",
        "pypi",
        "csv-mcp-server==1.0.0",
        "env -C {fx}/workbooks {bin}/csv-editor",
        fixtures=("workbooks",),
        last=16,
    ),
    Server(
        "kanban",
        "pypi",
        "kanban-mcp==0.2.0",
        "env KANBAN_SQLITE_PATH={fx}/kanban/kanban.db KANBAN_PROJECT_DIR={fx}/kanban {bin}/kanban-mcp",
        fixtures=("kanban",),
        last=16,
    ),
    Server(
        "tree-sitter",
        "pypi",
        "mcp-server-tree-sitter==0.7.0",
        "env -C {fx}/proj {bin}/mcp-server-tree-sitter",
        extra=(MCP1,),
        fixtures=("proj",),
        last=12,
    ),
    Server(
        "memory-bank",
        "npm",
        "@movibe/memory-bank-mcp@0.4.1",
        "{bin}/memory-bank-mcp",
        last=7,
        # as a user starts it: its bank in the folder it runs in (each session's own); with --path naming a folder
        # of ours, exploring ran on copies of it, its writes withheld, and 0 tasks were grounded (66 calls)
    ),
    Server(
        "obsidian",
        "npm",
        "mcp-obsidian@1.0.0",
        "{bin}/mcp-obsidian {fx}/vault",
        # it imports zod undeclared: npm hoists zod 4 (zod-to-json-schema's peer), whose schemas it writes as {}
        extra=("zod@3.25.76",),
        fixtures=("vault",),
        last=4,
    ),
    Server(
        "markitdown",
        "pypi",
        "markitdown-mcp==0.0.1a8",
        "env -C {fx}/docs {bin}/markitdown-mcp",
        fixtures=("docs",),
        last=9,
    ),
    Server("simple-timeserver", "pypi", "mcp-simple-timeserver==3.3.2", "{bin}/mcp-simple-timeserver", last=5),
    Server(
        "pandas",
        "pypi",
        "mcp-pandas==0.5.1",
        "{bin}/mcp-pandas --data-path {fx}/sheets/sales.csv",
        extra=(MCP1,),
        fixtures=("sheets",),
        last=2,
    ),
    Server(
        "sequential-thinking",
        "npm",
        "@modelcontextprotocol/server-sequential-thinking@2026.8.31",
        "{bin}/mcp-server-sequential-thinking",
        last=0,
    ),
    Server(
        "beancount",
        "pypi",
        "beancount-mcp==0.1.1",
        "{bin}/beancount-mcp --transport stdio {fx}/ledger/main.beancount",
        extra=(MCP1,),
        fixtures=("ledger",),
        last=16,
        note="a ledger of 12 transactions written here, not bean-example's 3525 postings",
    ),
    Server("chess-mcp-server", "pypi", "chess-mcp-server==0.1.17", "{bin}/chess-mcp-server", last=9),
    Server(
        "shell-server",
        "pypi",
        "mcp-shell-server==1.1.14",
        "env ALLOW_COMMANDS=ls,cat,echo {bin}/mcp-shell-server",
        last=0,
        note="version: the newest; its one tool runs commands, never called while exploring",
    ),
    # first run in the sixty-seventh session, none of them tried before it
    Server("mcp-server-math", "pypi", "mcp-server-math==0.1.0", "{bin}/mcp-server-math", extra=(MCP1,)),
    Server("mcp-mathematics", "pypi", "mcp-mathematics==2.3.1", "{bin}/mcp-mathematics"),
    Server("mcp-todo", "pypi", "mcp-todo==0.0.4", "{bin}/mcp-todo", extra=(MCP1,)),
    Server(
        "mcp-json-yaml-toml",
        "pypi",
        "mcp-json-yaml-toml==0.10.2",
        "env -C {fx}/config {bin}/mcp-json-yaml-toml",
        fixtures=("config",),
    ),
    # first run in the sixty-eighth session
    Server(
        "sqlite-mcp-server",
        "pypi",
        "sqlite-mcp-server==0.1.7",
        "env -C {fx} {bin}/sqlite-mcp-server",
        extra=(MCP1,),
        fixtures=("shop.db",),
    ),
    Server(
        "todo-txt-mcp",
        "pypi",
        "todo-txt-mcp==1.0.2",
        "{bin}/todo-txt-mcp {fx}/todo/todo.txt",
        extra=(MCP1,),
        fixtures=("todo",),
    ),
    # first run in the sixty-ninth session (FastMCP 4: titles that say the name again, "Sympy Binomial")
    Server("mcp-sympy", "pypi", "mcp-sympy==0.1.0", "{bin}/mcp-sympy", extra=("fastmcp==4.2.3",)),
    Server("mcp-hashlib", "pypi", "mcp-hashlib==0.1.2", "{bin}/mcp-hashlib", extra=("fastmcp==4.2.3",)),
    Server("polars-mcp", "pypi", "polars-mcp==0.2.1", "{bin}/polars-mcp", extra=("polars==2.1.0", MCP1)),
    # (its own pin, mcp 1.6.0, imports a name pydantic 2.11 removed; its query needs an embedding model it downloads)
    Server(
        "chroma-mcp",
        "pypi",
        "chroma-mcp==0.2.6",
        "{bin}/chroma-mcp --client-type persistent --data-dir {fx}/chroma",
        extra=("chromadb==1.5.9", "pydantic<2.11"),
        fixtures=("chroma",),
    ),
]
# Left out: todo-mcp-server (needs a remote API), taskwarrior-mcp (runs Debian's `task`, absent here; where present
# every call hung on the MCP pipe it inherits as stdin).


# ---------------------------------------------------------------------------------------------- fixtures

FILES = {  # server-filesystem: three files in two subfolders
    "notes.md": "# Notes\nThe release is planned for Friday.\nAsk Dana about the budget.\n",
    "docs/todo.txt": "buy milk\ncall the plumber\nrenew passport\n",
    "reports/sales.csv": "month,sales\nJan,80\nFeb,95\nMar,110\n",
}
TEXT = {  # mcp-text-editor: three short files
    "garden.md": "# Garden\n\n- tomatoes\n- basil\n- beans\n\nWater every morning.\nHarvest in August.\n",
    "stock.csv": "item,count\napple,12\npear,7\nplum,3\n",
    "todo.txt": "buy milk\ncall the plumber\nrenew passport\n",
}
CONFIG = {  # mcp-json-yaml-toml: a project's configuration, one file of each kind
    "app.json": '{"name": "shop", "version": "2.4.1", "port": 8080, "features": ["search", "cart"]}\n',
    "deploy.yaml": "region: eu-west-1\nreplicas: 3\nimage:\n  name: shop\n  tag: 2.4.1\n",
    "pyproject.toml": '[project]\nname = "shop"\nversion = "2.4.1"\nrequires-python = ">=3.10"\n',
}
TASK_LIST = {  # todo-txt-mcp: a todo.txt of five, one done
    "todo.txt": "(A) Call Dana about the budget +Apollo @phone due:2024-03-08\n"
    "(B) 2024-03-01 Book a room for the review +Apollo @office\nRenew passport @errands\n"
    "x 2024-03-02 2024-02-28 Water the plants @home\nSend the draft to Sam +Report @email due:2024-03-05\n"
}
VAULT = {  # mcp-obsidian: a vault of three notes
    "Daily/2024-03-01.md": "# 2024-03-01\n\nCalled Dana about the budget.\n",
    "Reading list.md": "# Reading list\n\n- Kindred\n- Rebecca\n- Dune\n",
    "Projects/Apollo launch.md": "# Apollo launch\n\nstatus: active\nowner: Sam\ndue: 2024-04-15\n",
}
DOCS = {  # markitdown-mcp: a CSV, a Markdown table and a page
    "prices.csv": "item,price\ntea,3.5\ncoffee,4.25\ncake,5\n",
    "plan.md": "# Trip plan\n\n| city | nights |\n|---|---|\n| Oslo | 3 |\n| Bergen | 2 |\n| Tromso | 4 |\n",
    "trip.html": "<html><head><title>Trip</title></head><body><h1>Trip notes</h1>"
    "<p>The train to Bergen leaves at nine.</p></body></html>\n",
}
SALES = (  # sales.csv beside the workbooks: two numeric columns (mcp-pandas averages one)
    "date,region,product,units,price\n2024-03-01,North,tea,10,3.5\n2024-03-02,South,coffee,4,4.25\n"
    "2024-03-03,North,cake,6,5.0\n2024-03-04,East,tea,8,3.5\n2024-03-05,South,cake,3,5.0\n2024-03-06,East,coffee,12,4.25\n"
)
PROJ = {  # mcp-server-tree-sitter: a small Python project
    "main.py": "from pkg.shop import Cart\n\n\ndef main():\n    cart = Cart()\n    cart.add('tea', 2)\n"
    "    print(cart.total())\n\n\nif __name__ == '__main__':\n    main()\n",
    "pkg/__init__.py": "",
    "pkg/shop.py": "PRICES = {'tea': 3.5, 'cake': 5.0}\n\n\nclass Cart:\n    def __init__(self):\n"
    "        self.items = []\n\n    def add(self, item, qty=1):\n        self.items.append((item, qty))\n\n"
    "    def total(self):\n        return sum(PRICES[i] * q for i, q in self.items)\n",
}
LEDGER = """option "title" "Household"
option "operating_currency" "EUR"

2024-01-01 open Assets:Bank:Checking EUR
2024-01-01 open Income:Salary EUR
2024-01-01 open Expenses:Food:Groceries EUR
2024-01-01 open Expenses:Food:Restaurant EUR
2024-01-01 open Expenses:Home:Rent EUR
2024-01-01 open Expenses:Transport EUR
2024-01-01 open Equity:Opening-Balances EUR

2024-01-01 * "Opening balance"
  Assets:Bank:Checking  1000.00 EUR
  Equity:Opening-Balances
"""
LEDGER_ROWS = [  # date, payee, narration, account, amount
    ("2024-01-05", "Acme Corp", "Payroll", "Income:Salary", "-2500.00"),
    ("2024-01-06", "Landlord", "January rent", "Expenses:Home:Rent", "900.00"),
    ("2024-01-09", "Fresh Market", "Weekly groceries", "Expenses:Food:Groceries", "64.20"),
    ("2024-01-12", "China Garden", "Dinner with Natasha", "Expenses:Food:Restaurant", "48.50"),
    ("2024-01-15", "City Transit", "Monthly pass", "Expenses:Transport", "55.00"),
    ("2024-01-16", "Fresh Market", "Weekly groceries", "Expenses:Food:Groceries", "71.35"),
    ("2024-02-05", "Acme Corp", "Payroll", "Income:Salary", "-2500.00"),
    ("2024-02-06", "Landlord", "February rent", "Expenses:Home:Rent", "900.00"),
    ("2024-02-10", "Corner Bakery", "Birthday cake", "Expenses:Food:Restaurant", "32.00"),
    ("2024-02-13", "Fresh Market", "Weekly groceries", "Expenses:Food:Groceries", "58.90"),
    ("2024-02-15", "City Transit", "Monthly pass", "Expenses:Transport", "55.00"),
]

XLSX = """
import datetime, sys
from pathlib import Path
import openpyxl

out = Path(sys.argv[1])
when = datetime.datetime(2024, 3, 1, 10, 0)

def save(wb, path):
    wb.properties.creator = "panel"
    wb.properties.created = wb.properties.modified = when
    wb.save(path)

wb = openpyxl.Workbook()
staff = wb.active
staff.title = "Staff"
for row in [("name", "team", "started", "salary"), ("Ann Lee", "Sales", datetime.date(2019, 3, 1), 52000),
            ("Bob Stone", "Research", datetime.date(2020, 6, 15), 61000),
            ("Carla Diaz", "Sales", datetime.date(2021, 1, 10), 48000),
            ("Dev Patel", "Support", datetime.date(2022, 9, 5), 40000)]:
    staff.append(row)
budget = wb.create_sheet("Budget")
for row in [("item", "q1", "q2"), ("Travel", 1200, 900), ("Software", 3000, 3100), ("Training", 800, 650)]:
    budget.append(row)
budget["A6"] = "Total"
budget["B6"] = 5000
budget["C6"] = 4650
save(wb, out / "company.xlsx")
if len(sys.argv) > 2:
    wb = openpyxl.Workbook()
    orders = wb.active
    orders.title = "Orders"
    for row in [("id", "product", "quantity", "customer"), (1, "Steel bolt", 50, "Ada"), (2, "Oak plank", 2, "Ben"),
                (3, "Copper wire", 10, "Ada")]:
        orders.append(row)
    save(wb, out / "shop.xlsx")
"""
# two collections of documents, stored with embeddings of their own (the default embedding model is a download)
CHROMA = """
import random, sys
import chromadb
client, rng = chromadb.PersistentClient(path=sys.argv[1]), random.Random(0)
def add(name, docs, metadatas, **kw):
    c = client.create_collection(name, **kw)
    vectors = [[rng.random() for _ in range(384)] for _ in docs]
    c.add(ids=[f"{name[0]}{k + 1}" for k in range(len(docs))], documents=docs, embeddings=vectors, metadatas=metadatas)
add("recipes", ["Pancakes: flour, milk, two eggs, a pinch of salt.", "Tomato soup: tomatoes, onion, garlic, basil.",
    "Lemon cake: flour, sugar, butter, three lemons."],
    [{"course": "breakfast", "minutes": 20}, {"course": "starter", "minutes": 35},
     {"course": "dessert", "minutes": 60}],
    metadata={"description": "family recipes"})
add("meeting_notes", ["Budget review moved to Friday.", "Dana owns the launch checklist."],
    [{"date": "2024-03-01"}, {"date": "2024-03-04"}])
"""
DOCX = """
import datetime, sys
from pathlib import Path
import docx

out = Path(sys.argv[1])
when = datetime.datetime(2024, 3, 1, 10, 0)
for name, title, paragraphs in [
    ("report.docx", "Quarterly report",
     ["Sales grew by 12 percent in the first quarter.", "The Bergen office opened in March."]),
    ("notes.docx", "Meeting notes", ["Attendees: Ann, Bob and Carla.", "Next meeting on 2024-03-15."]),
]:
    d = docx.Document()
    d.add_heading(title, level=1)
    for p in paragraphs:
        d.add_paragraph(p)
    d.core_properties.author = "Ann Lee"
    d.core_properties.created = d.core_properties.modified = when
    d.save(out / name)
"""


def _write(folder: Path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        path = folder / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


def _ledger() -> str:
    out = [LEDGER]
    for date, payee, narration, account, amount in LEDGER_ROWS:
        out.append(f'\n{date} * "{payee}" "{narration}"\n  {account}  {amount} EUR\n  Assets:Bank:Checking\n')
    return "".join(out)


def _with(venvs: Path, names: list[str], module: str) -> Path:
    """The python of the first installed venv among `names` that imports `module`."""
    for name in names:
        python = venvs / name / "bin" / "python"
        if python.exists() and subprocess.run([python, "-c", f"import {module}"], capture_output=True).returncode == 0:
            return python
    raise RuntimeError(f"no installed venv of {', '.join(names)} has {module}")


def _run(*argv: str | Path) -> None:
    subprocess.run([str(a) for a in argv], check=True, capture_output=True, text=True)


def _kanban(target: Path, venvs: Path) -> None:
    """A board of five items (a todo, an issue, a feature, an epic and its child), a tag, an update and a decision,
    made with kanban-mcp's own code in kanban.db of the folder KANBAN_PROJECT_DIR names, which keys the project
    (made in place, so that the board is the one of the folder the server is given)."""
    python = _with(venvs, ["kanban"], "kanban_mcp")
    target.mkdir(parents=True)
    _run("env", f"HOME={target}", python, "-c", KANBAN, target)


KANBAN = """
import os, sys
folder = sys.argv[1]
os.environ["KANBAN_SQLITE_PATH"] = folder + "/kanban.db"
from kanban_mcp.core import KanbanDB
from kanban_mcp.setup import auto_migrate

db = KanbanDB()
auto_migrate(db._backend)
project = db.ensure_project(folder)
db.create_item(project, "todo", "Write release notes", "Notes for version 1.2.", priority=3)
bug = db.create_item(project, "issue", "Login fails on Safari", "The session cookie is dropped.", priority=1)
export = db.create_item(project, "feature", "Export board as CSV", "Download the board as a table.", priority=2)
app = db.create_item(project, "epic", "Mobile app", "A phone client for the board.", priority=4)
db.create_item(project, "feature", "Offline mode", "Work without a network.", priority=3, parent_id=app)
db.add_tag_to_item(export, "ui")
db.add_update(project, "Release 1.2 is feature-complete.", [export])
db.add_decision(bug, "Keep the session in a cookie", rationale="Safari clears local storage")
"""

MADE_IN_PLACE = {"kanban"}  # made anew where a run uses it, not copied: its store is keyed by its own path
# name -> how to make it in a folder (given the venvs' folder)
FIXTURES: dict[str, Callable[[Path, Path], None]] = {
    "repo": lambda p, v: _run("sh", SCENARIOS / "make_git_repo.sh", p),
    "shop.db": lambda p, v: _run(sys.executable, SCENARIOS / "make_shop.py", "sqlite", p),
    # each DuckDB server its file written by its own duckdb: mcp-server-duckdb's 2.0 writes a storage version
    # (69) the 1.5 of mcp-server-motherduck cannot read
    "shop.duckdb": lambda p, v: _run(_with(v, ["duckdb"], "duckdb"), SCENARIOS / "make_shop.py", "duckdb", p),
    "md": lambda p, v: (
        p.mkdir(parents=True),
        _run(_with(v, ["motherduck"], "duckdb"), SCENARIOS / "make_shop.py", "duckdb", p / "shop.duckdb"),
    ),
    "files": lambda p, v: _write(p, FILES),
    "text": lambda p, v: _write(p, TEXT),
    "vault": lambda p, v: _write(p, VAULT),
    "docs": lambda p, v: _write(p, DOCS),
    "work": lambda p, v: _write(p, {"data.csv": "name,qty\napple,3\npear,7\n"}),
    "proj": lambda p, v: _write(p, PROJ),
    "config": lambda p, v: _write(p, CONFIG),
    "todo": lambda p, v: _write(p, TASK_LIST),
    "ledger": lambda p, v: _write(p, {"main.beancount": _ledger()}),
    "sheets": lambda p, v: (
        _write(p, {"sales.csv": SALES}),
        _run(_with(v, ["spreadsheet", "excel"], "openpyxl"), "-c", XLSX, p),
    ),
    "workbooks": lambda p, v: (
        _write(p, {"sales.csv": SALES}),
        _run(_with(v, ["excel", "spreadsheet"], "openpyxl"), "-c", XLSX, p, "both"),
    ),
    "word": lambda p, v: (p.mkdir(parents=True), _run(_with(v, ["word"], "docx"), "-c", DOCX, p)),
    "kanban": lambda p, v: _kanban(p, v),
    "chroma": lambda p, v: _run(_with(v, ["chroma-mcp"], "chromadb"), "-c", CHROMA, p),
}


# ---------------------------------------------------------------------------------------------- install


def bin_dir(server: Server, root: Path) -> Path:
    if server.source == "pypi":
        return root / "venv" / server.name / "bin"
    return root / "npm" / server.name / "node_modules" / ".bin"


def install_one(server: Server, root: Path) -> str:
    """Install `server` under `root` unless its marker says it is, as pinned; returns what happened."""
    wanted = " ".join([server.package, *server.extra])
    if server.source == "pypi":
        home = root / "venv" / server.name
        marker = home / ".panel"
        if marker.exists() and marker.read_text() == wanted and (home / "bin" / server.exe()).exists():
            return "already installed"
        shutil.rmtree(home, ignore_errors=True)
        made = subprocess.run(["python3", "-m", "venv", home], capture_output=True, text=True)
        if made.returncode:
            return f"not installed: venv failed: {made.stderr.strip()[-300:]}"
        pip = [home / "bin" / "pip", "install", "-q", server.package, *server.extra]
    else:
        home = root / "npm" / server.name
        marker = home / ".panel"
        if marker.exists() and marker.read_text() == wanted and (bin_dir(server, root) / server.exe()).exists():
            return "already installed"
        shutil.rmtree(home, ignore_errors=True)
        home.mkdir(parents=True)
        (home / "package.json").write_text(json.dumps({"name": f"panel-{server.name}", "private": True}) + "\n")
        pip = ["npm", "install", "--prefix", home, "--no-audit", "--no-fund", "--loglevel=error", server.package]
        pip += list(server.extra)
    done = subprocess.run([str(a) for a in pip], capture_output=True, text=True)
    if done.returncode:
        return f"not installed: {(done.stderr or done.stdout).strip()[-400:]}"
    if not (bin_dir(server, root) / server.exe()).exists():
        return f"not installed: no {server.exe()} in {bin_dir(server, root)}"
    marker.write_text(wanted)
    return "installed"


def make_fixtures(root: Path, names: set[str]) -> dict[str, str]:
    """Each fixture under root/fixtures, made anew; name -> 'made' or why not."""
    done = {}
    for name in sorted(names):
        path = root / "fixtures" / name
        if path.is_dir():
            shutil.rmtree(path)
        elif path.exists():
            path.unlink()
        path.parent.mkdir(parents=True, exist_ok=True)
        try:
            FIXTURES[name](path, root / "venv")
            done[name] = "made"
        except (subprocess.CalledProcessError, RuntimeError, OSError) as e:
            detail = getattr(e, "stderr", "") or str(e)
            done[name] = f"not made: {detail.strip()[-300:]}"
    return done


def fresh_fixtures(server: Server, root: Path, work: Path) -> Path:
    """A fresh copy of `server`'s fixtures in `work` (emptied first): the {fx} of its command."""
    if work.exists():
        shutil.rmtree(work)
    work.mkdir(parents=True)
    for name in server.fixtures:
        source = root / "fixtures" / name
        if name in MADE_IN_PLACE:
            FIXTURES[name](work / name, root / "venv")
        elif source.is_dir():
            shutil.copytree(source, work / name, symlinks=True)
        else:
            shutil.copy2(source, work / name)
    return work


def command_of(server: Server, root: Path, fx: Path) -> str:
    return server.command.format(bin=bin_dir(server, root), fx=fx)


def read_tools(command: str, timeout: float = 60) -> list[str]:
    """The server's read-only tools (`may_write` false), as bench/grounding.py counts them: one connection that
    lists its tools."""
    import anyio

    from mcprl.scenarios.isolation import may_write
    from mcprl.tools import ServerSpec
    from mcprl.tools.client import discover

    async def listed() -> list[str]:
        with anyio.fail_after(timeout):
            toolset = await discover(ServerSpec.parse(command))
        return [t["name"] for t in toolset.mcp_tools if not may_write(t)]

    return anyio.run(listed)


def install(args: argparse.Namespace) -> None:
    root = Path(args.dir).resolve()
    chosen = pick(args.only)
    for server in chosen:
        print(f"{server.name}: {install_one(server, root)} ({' '.join([server.package, *server.extra])})", flush=True)
    for name, how in make_fixtures(root, {f for s in chosen for f in s.fixtures}).items():
        print(f"fixture {name}: {how}", flush=True)
    if args.check:  # each server started on fresh fixtures and asked its tools
        for server in chosen:
            work = fresh_fixtures(server, root, root / "check" / server.name)
            try:
                reads = read_tools(command_of(server, root, work))
                print(f"{server.name}: starts, {len(reads)} read tools", flush=True)
            except Exception as e:  # noqa: BLE001 -- any failure to start is the line's
                print(f"{server.name}: does not start: {str(e)[-300:]}", flush=True)


# ---------------------------------------------------------------------------------------------- run


def _lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()] if path.exists() else []


def row_of_scenarios(out: Path, reads: list[str]) -> dict[str, Any]:
    """The table's row from `mcprl scenarios`' files: its exploration record, grounding report and tasks."""
    calls = _lines(out / "scenarios.exploration.jsonl")
    report = (
        json.loads((out / "scenarios.grounding.json").read_text())
        if (out / "scenarios.grounding.json").exists()
        else {}
    )
    written = _lines(out / "scenarios.jsonl")
    covered = report.get("covered", {})
    return {
        "calls": len(calls),
        "errors": sum(bool(c.get("is_error")) for c in calls),
        "distinct": len({json.dumps([c["tool"], c["arguments"]], sort_keys=True) for c in calls}),
        "kept": report.get("kept", 0),
        "synthesized": sum((s.get("metadata") or {}).get("source") == "synthesized" for s in written),
        "live": report.get("live", 0),
        "dropped": report.get("dropped", {}),
        "covered": covered,
        "reads": reads,
        "reads_covered": [t for t in reads if covered.get(t)],
        "exploration": report.get("exploration", ""),
        "tasks": [{"task": s["task"], "answer": s.get("answer")} for s in written],
    }


def row_of_grounding(out: Path) -> dict[str, Any]:
    """The table's row from bench/grounding.py's JSON (one server)."""
    results = json.loads((out / "grounding.json").read_text()) if (out / "grounding.json").exists() else []
    if not results:
        return {}
    r = results[0]
    return {**r, "synthesized": 0, "dropped": r.get("dropped", {})}


def run_one(server: Server, args: argparse.Namespace, root: Path, out_root: Path) -> dict[str, Any]:
    out = out_root / server.name
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    fx = fresh_fixtures(server, root, out_root / "work" / server.name)
    command = command_of(server, root, fx)
    # the worktree's mcprl whatever the venv's editable install points at
    path = os.pathsep.join([str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])])
    pin = [
        "taskset",
        "-c",
        str(args.cpu),
        "env",
        "OMP_NUM_THREADS=1",
        "TOKENIZERS_PARALLELISM=false",
        f"PYTHONPATH={path}",
    ]
    if args.via == "grounding":
        argv = [sys.executable, str(ROOT / "bench" / "grounding.py"), command, "-n", str(args.n)]
        argv += ["--out", str(out / "grounding.json")]
    else:
        mcprl = str(Path(sys.executable).parent / "mcprl")
        argv = [mcprl, "scenarios", "--server", command, "-n", str(args.n), "-o", str(out / "scenarios.jsonl")]
    started = time.monotonic()
    with open(out / "log.txt", "w") as log:
        try:
            rc: int | str = subprocess.run(
                pin + argv, stdout=log, stderr=subprocess.STDOUT, timeout=args.timeout
            ).returncode
        except subprocess.TimeoutExpired:
            rc = f"timed out after {args.timeout} s"
    seconds = round(time.monotonic() - started, 1)
    record: dict[str, Any] = {"server": server.name, "package": server.package, "command": command, "rc": rc}
    record["seconds"] = seconds
    try:
        if args.via == "grounding":
            row = row_of_grounding(out)
        else:
            # the tools listed afresh on the fixtures as the run left them (listing changes nothing)
            row = row_of_scenarios(out, read_tools(command))
    except Exception as e:  # noqa: BLE001 -- a server that cannot be summed up is a line of the table
        row = {"error": str(e)[-300:]}
    if not row.get("calls") and rc:
        tail = (out / "log.txt").read_text().strip().splitlines()[-3:]
        row["error"] = row.get("error") or " / ".join(tail)[-300:]
    record.update(row, last=server.last, note=server.note)
    (out_root / f"{server.name}.json").write_text(json.dumps(record, indent=2))
    return record


def table(records: list[dict[str, Any]]) -> str:
    head = "| server | calls | errors | distinct | kept | synthesized | reads covered | docs' last | seconds |"
    lines = [head, "|---" * (head.count("|") - 1) + "|"]
    for r in records:
        if "reads" not in r:
            lines.append(
                f"| {r['server']} | - | - | - | - | - | - | {r.get('last')} | {r['seconds']} ({r.get('error', '')}) |"
            )
            continue
        lines.append(
            f"| {r['server']} | {r['calls']} | {r['errors']} | {r['distinct']} | {r['kept']} | {r['synthesized']} | "
            f"{len(r['reads_covered'])}/{len(r['reads'])} | {r.get('last')} | {r['seconds']} |"
        )
    return "\n".join(lines)


def run(args: argparse.Namespace) -> None:
    os.sched_setaffinity(0, {args.cpu})  # the panel's own work too stays on the core it was given
    os.environ["OMP_NUM_THREADS"] = "1"
    root, out_root = Path(args.dir).resolve(), Path(args.out).resolve()
    out_root.mkdir(parents=True, exist_ok=True)
    records = []
    for server in pick(args.only):
        if not (bin_dir(server, root) / server.exe()).exists():
            print(f"{server.name}: not installed (python bench/panel.py install --dir {root})", flush=True)
            continue
        r = run_one(server, args, root, out_root)
        records.append(r)
        covered = f"{len(r['reads_covered'])}/{len(r['reads'])}" if "reads" in r else "-"
        print(
            f"{server.name}: {r.get('calls', '-')} calls ({r.get('errors', '-')} errors, "
            f"{r.get('distinct', '-')} distinct), "
            f"{r.get('kept', '-')} kept (+{r.get('synthesized', 0)} synthesized), reads {covered}, last {server.last}; "
            f"{r['seconds']} s{'; ' + r['error'] if r.get('error') else ''}",
            flush=True,
        )
    # the table of every server with a record under O, this run's and earlier ones' (`--only` reruns a few)
    records = [json.loads(f.read_text()) for s in SERVERS if (f := out_root / f"{s.name}.json").exists()]
    summary = table(records)
    (out_root / "summary.md").write_text(summary + "\n")
    (out_root / "summary.json").write_text(json.dumps(records, indent=2))
    print(summary)


def pick(only: str | None) -> list[Server]:
    if not only:
        return SERVERS
    names = [n.strip() for n in only.split(",") if n.strip()]
    unknown = [n for n in names if n not in {s.name for s in SERVERS}]
    if unknown:
        raise SystemExit(f"unknown servers: {', '.join(unknown)}; see `python bench/panel.py list`")
    return [s for s in SERVERS if s.name in names]


def main() -> None:
    sys.path.insert(0, str(ROOT))  # the worktree's mcprl, as the runs' PYTHONPATH
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    i = sub.add_parser("install", help="venvs, npm installs and fixtures under --dir")
    i.add_argument("--dir", required=True)
    i.add_argument("--only", help="comma-separated server names")
    i.add_argument("--check", action="store_true", help="start each server once and list its tools")
    r = sub.add_parser("run", help="ground each server, one at a time, on fresh fixtures")
    r.add_argument("--dir", required=True)
    r.add_argument("--out", required=True)
    r.add_argument("--only", help="comma-separated server names")
    r.add_argument("-n", type=int, default=16)
    r.add_argument("--cpu", type=int, default=1)
    r.add_argument("--via", choices=["scenarios", "grounding"], default="scenarios")
    r.add_argument("--timeout", type=int, default=900, help="seconds a server's run may take")
    sub.add_parser("list", help="the servers, their packages and commands")
    args = ap.parse_args()
    if args.cmd == "install":
        install(args)
    elif args.cmd == "run":
        run(args)
    else:
        for s in SERVERS:
            print(f"{s.name}\t{s.source}\t{s.package}{' ' + ' '.join(s.extra) if s.extra else ''}\t{s.command}")


if __name__ == "__main__":
    main()
