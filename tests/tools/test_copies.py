"""Sessions on copies of what a stdio server works on (`mcprl.tools.copies`): which paths are copied, how paths are
said both ways, and a real server's writes landing in its session's copy, never in the user's folder."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from mcprl.tools import ServerSpec, ToolPool, copies
from mcprl.tools.copies import PathMap, within, worked_on

FOLDER = Path(__file__).resolve().parents[1] / "data" / "folder_server.py"


def test_a_path_is_said_the_other_way_whole_and_with_what_follows_it_never_as_part_of_another():
    paths = PathMap([("/data/shop", "/tmp/c/0/shop"), ("/data/shop/orders.db", "/tmp/c/1/orders.db")])
    sent = {
        "file": "/data/shop/a.csv",
        "uri": "file:///data/shop",
        "others": ["/data/shop2", "/old/data/shop", "/data/shopping", "/data/shop/orders.db"],
        "/data/shop": "a key too",
    }
    inward = paths.inward(sent)
    assert inward == {
        "file": "/tmp/c/0/shop/a.csv",
        "uri": "file:///tmp/c/0/shop",
        "others": ["/data/shop2", "/old/data/shop", "/data/shopping", "/tmp/c/1/orders.db"],
        "/tmp/c/0/shop": "a key too",
    }
    assert paths.outward(inward) == sent
    assert paths.outward("Repository path 'x' is outside the allowed repository '/tmp/c/0/shop'") == (
        "Repository path 'x' is outside the allowed repository '/data/shop'"
    )


def test_what_a_server_works_on_is_every_absolute_path_its_command_names_and_its_folder(tmp_path):
    repo, data = tmp_path / "repo", tmp_path / "data"
    (repo / "src").mkdir(parents=True)
    data.mkdir()
    script = tmp_path / "server.py"
    script.write_text("")
    command = [
        sys.executable,
        str(script),  # the server's own program
        "--repository",
        str(repo),
        f"--db={data}/new.db",  # a database the server makes: in the copy's folder
        str(repo / "src"),  # inside the repository: copied with it
        "/no/such/folder",
        "relative/name",
    ]
    spec = ServerSpec(target="x", transport="stdio", command=command, cwd=str(tmp_path / "data"))
    assert sorted(worked_on(spec)) == sorted([repo, data])
    no_cwd = spec.model_copy(update={"cwd": None})
    assert sorted(worked_on(no_cwd)) == sorted([repo, data / "new.db"])


def test_a_file_a_url_names_in_the_command_or_the_environment_is_copied_and_the_copy_is_named_so(tmp_path):
    """`DB_URL=sqlite:////data/shop.db`, `--db-url sqlite:////...`, `file:///...`: the file a URL with no host names
    is what the server works on, and the server is told the copy's URL; a URL whose path is relative (three slashes
    in SQLAlchemy's) or names no file is not, nor a folder where its programs are (`PYTHONPATH`)."""
    db = tmp_path / "shop.db"
    db.write_bytes(b"x")
    for spec in (
        ServerSpec.parse(f"{sys.executable} {FOLDER}", env=[f"DB_URL=sqlite:///{db}"]),
        ServerSpec.parse(f"env DB_URL=sqlite:///{db} {sys.executable} {FOLDER}"),
        ServerSpec.parse(f"{sys.executable} {FOLDER} --db-url sqlite:///{db}"),
        ServerSpec.parse(f"{sys.executable} {FOLDER} --data=file://{db}"),
    ):
        assert worked_on(spec) == [db] and spec.private_copy
        with copies.copied(spec) as (session, paths):
            told = [*session.command, *session.env.values()]
            (url,) = [v for v in told if "://" in v]
            copy = Path(copies.local_path(url.partition("=")[2] if "=" in url else url))
            assert copy != db and copy.read_bytes() == b"x" and paths.outward(url).endswith(str(db))
    for url in ("sqlite:///shop.db", f"sqlite:///{tmp_path}/none.db", "https://example.com/shop.db"):
        assert worked_on(ServerSpec.parse(f"{sys.executable} {FOLDER}", env=[f"DB_URL={url}"])) == []
    # where its programs and libraries are is nothing it works on
    assert worked_on(ServerSpec.parse(f"{sys.executable} {FOLDER}", env=[f"PYTHONPATH={tmp_path}"])) == []
    assert worked_on(ServerSpec.parse(f"env PYTHONPATH={tmp_path} HOME={tmp_path} {sys.executable} {FOLDER}")) == []


def test_sessions_get_copies_where_the_files_are_small_enough_or_the_user_says(tmp_path, monkeypatch):
    folder = tmp_path / "notes"
    folder.mkdir()
    for i in range(5):
        (folder / f"{i}.txt").write_text("x" * 100)
    command = f"{sys.executable} {FOLDER} {folder}"
    assert ServerSpec.parse(command).private_copy
    assert not ServerSpec.parse(f"{sys.executable} {FOLDER}").private_copy  # nothing of the user's to copy
    assert not ServerSpec.parse(command, private_copy=False).private_copy
    assert not ServerSpec.parse("http://localhost:9/mcp").private_copy
    monkeypatch.setattr(copies, "MAX_COPY_FILES", 4)
    assert copies.too_large([folder]) == "over 4 files"
    assert not ServerSpec.parse(command).private_copy
    assert ServerSpec.parse(command, private_copy=True).private_copy
    monkeypatch.setattr(copies, "MAX_COPY_FILES", 100)
    monkeypatch.setattr(copies, "MAX_COPY_BYTES", 400)
    assert copies.too_large([folder]) == "over 0 MB"


def test_files_that_name_where_they_lie_are_not_copied(tmp_path):
    """A store that records its folder's path (kanban-mcp's board) is another store once copied elsewhere; a file
    that is no data file (a compiled module holds its source's path) does not keep a folder from being copied."""
    folder = tmp_path / "board"
    folder.mkdir()
    (folder / "notes.txt").write_text("nothing of where it is")
    (folder / "cache.pyc").write_bytes(f"\0{folder}\0".encode())
    command = f"{sys.executable} {FOLDER} {folder}"
    assert copies.not_copied([folder]) is None and ServerSpec.parse(command).private_copy
    (folder / "board.db").write_bytes(f"\0\1project\0{folder}\0".encode())
    assert (
        copies.not_copied([folder]) == "board.db there names where it lies, so a copy elsewhere would be another store"
    )
    assert not ServerSpec.parse(command).private_copy
    assert ServerSpec.parse(command, private_copy=True).private_copy
    # (a file named on its own, holding its own path)
    store = tmp_path / "store.json"
    store.write_text(f'{{"path": "{store}"}}')
    assert copies.names_its_place([store]) == store


@pytest.mark.anyio
async def test_a_servers_writes_land_in_its_sessions_copy_and_it_answers_with_the_users_paths(tmp_path):
    """The folder server writes tables into the folder it runs in. Each session runs in a copy of it of its own:
    what one session saves, it reads back, the next does not see, and the user's folder is as it was; every path
    the server is sent and answers with is the user's."""
    folder = tmp_path / "tables"
    folder.mkdir()
    (folder / "orders.csv").write_text("customer,quantity\nAna Ruiz,2\n")
    before = {p: p.read_bytes() for p in folder.rglob("*")}
    spec = ServerSpec.parse(f"{sys.executable} {FOLDER}", cwd=str(folder))
    assert spec.private_copy
    new = str(folder / "new.csv")
    async with ToolPool(spec) as pool:
        async with pool.session() as session:
            saved = await session.call("save_table", {"file": new, "text": "x,y\n3,4\n"})
            assert saved.text == f"saved {new}" and not saved.is_error
            assert (await session.call("read_table", {"file": new})).text == "x: 3, y: 4"
            assert (await session.call("read_table", {"file": "orders.csv"})).text == "customer: Ana Ruiz, quantity: 2"
            missing = await session.call("read_table", {"file": str(folder / "none.csv")})
            assert missing.is_error and str(folder / "none.csv") in missing.text
        async with pool.session() as session:
            again = await session.call("read_table", {"file": new})
            assert again.is_error and again.text.endswith(f"cannot open {new}")
    assert {p: p.read_bytes() for p in folder.rglob("*")} == before


def test_what_a_copy_holds_changes_with_a_file_written_or_removed_and_a_folder_made(tmp_path):
    from mcprl.tools.copies import files_of

    (tmp_path / "a.txt").write_text("a")
    before = files_of([tmp_path])
    assert files_of([tmp_path]) == before  # (reading it changes nothing)
    (tmp_path / "new").mkdir()
    assert files_of([tmp_path]) != before
    (tmp_path / "new").rmdir()
    (tmp_path / "a.txt").write_text("ab")
    assert files_of([tmp_path]) != before
    (tmp_path / "a.txt").unlink()
    assert files_of([tmp_path]) != before


def test_records_a_server_makes_under_hidden_folders_are_its_own_and_any_change_of_the_users_files_is_not(tmp_path):
    """What a write changed in a session's copy is the server's own records only where all of it is made anew (none
    of the user's files, as the session found them, written over or removed) under a hidden folder; one inside a
    hidden folder the user gave is theirs."""
    from mcprl.tools.copies import changed_paths, files_of, own_records

    root = tmp_path / "0"
    (root / "data" / ".notes").mkdir(parents=True)
    (root / "data" / "stock.csv").write_text("item,qty\n")
    roots = [root]
    original = files_of(roots)

    def changed_by(write) -> list[str]:
        before = files_of(roots)
        write()
        return changed_paths(before, files_of(roots))

    history = root / "data" / ".history"
    assert own_records(roots, original, changed_by(lambda: (history.mkdir(), (history / "s1.json").write_text("{}"))))
    # (written over again later in the session: still a record of its own, not the user's)
    assert own_records(roots, original, changed_by(lambda: (history / "s1.json").write_text('{"rows": 3}')))
    assert not own_records(roots, original, changed_by(lambda: (root / "data" / "stock.csv").write_text("item\n")))
    assert not own_records(roots, original, changed_by(lambda: (root / "data" / "out.csv").write_text("a\n")))
    assert not own_records(roots, original, changed_by(lambda: (root / "data" / ".notes" / "n.txt").write_text("a")))
    assert not own_records(roots, original, [])


@pytest.mark.anyio
async def test_a_write_to_a_copied_file_shows_in_its_sessions_copy_folders_and_not_in_the_users_file(tmp_path):
    """A server named a data file (`env ORDERS=.../orders.csv`, as a database server is named its database): the
    session's copy folders change when a call writes that file's copy (a walk of the copied file itself saw nothing,
    so a database server's writes were never noticed), and do not when a call only reads it."""
    from mcprl.tools.copies import files_of

    orders = tmp_path / "orders.csv"
    orders.write_text("customer,quantity\nAna Ruiz,2\n")
    spec = ServerSpec.parse(f"env ORDERS={orders} {sys.executable} {FOLDER}")
    assert spec.private_copy
    async with ToolPool(spec) as pool:
        async with pool.session() as session:
            held = files_of(session.copy_folders)
            assert held and not (await session.call("read_table", {"file": str(orders)})).is_error
            assert files_of(session.copy_folders) == held
            saved = await session.call("save_table", {"file": str(orders), "text": "x,y\n3,4\n"})
            assert not saved.is_error and files_of(session.copy_folders) != held
    assert orders.read_text() == "customer,quantity\nAna Ruiz,2\n"


def test_a_value_is_within_folders_where_every_path_it_names_lies_in_one_of_them(tmp_path):
    """What a write may be sent: paths in the session's own folders, said absolute, as a URL or relative to where the
    server runs, and no path above them."""
    own = [tmp_path / "work", tmp_path / "home"]
    assert within({"path": f"{tmp_path}/work/bank", "files": ["notes.md", f"file://{tmp_path}/home/a.txt"]}, own)
    assert within({"path": "bank/notes", "text": "Send the draft to Sam by Friday.", "n": 3}, own)
    for outside in ("/", f"{tmp_path}/work2", f"{tmp_path}/work/../home2", "..", "../x", "a/../../x", "file:///etc"):
        assert not within({"path": outside}, own), outside
    assert not within({"items": [{"path": "/tmp/elsewhere"}]}, own)
