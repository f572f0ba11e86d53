"""Sessions on copies of what a stdio server works on: the files and folders its command line and environment name
(a repository, a database file, `MEMORY_FILE_PATH=graph.jsonl`, `DB_URL=sqlite:////data/shop.db`) and its working
directory.

A server given the user's files keeps its state there, past its process: a write made while exploring or in a
rollout would change the user's repository or database, and every later session would read it. With
`ServerSpec.private_copy` each session runs on a copy of them of its own, made when it starts and removed when it
ends, so the user's are never written and every session starts from them as they are: such a server is as
isolated as one that keeps its state in its process. The server is told the copies' paths (its command line, its
environment, its working directory); the calls and results carry the originals' (`PathMap`), so what the model
and the tasks see is the same with or without copies.

A copy is made only of what is small enough to copy once a session (`MAX_COPY_FILES`, `MAX_COPY_BYTES`) and does
not record where it lies (`names_its_place`: a copy of such a store elsewhere is another store): otherwise the files
are worked on as they are, and the writes are not called (`mcprl.scenarios.isolation`).
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import stat
import tempfile
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from mcprl.tools.spec import ServerSpec

DATA_FILE = r"\.(db|sqlite3?|duckdb|jsonl?|ndjson|csv|ya?ml|toml|txt|xlsx?|parquet)$"
# variables that tell a program where programs, libraries and the user's things are, not what it works on
RUNTIME_VARIABLES = frozenset(
    "PATH PYTHONPATH PYTHONHOME VIRTUAL_ENV NODE_PATH NODE_OPTIONS LD_LIBRARY_PATH LD_PRELOAD DYLD_LIBRARY_PATH "
    "CLASSPATH GOPATH HOME TMPDIR TEMP TMP PWD XDG_CONFIG_HOME XDG_DATA_HOME XDG_CACHE_HOME".split()
)
MAX_COPY_FILES = 20_000  # what a session copies at most, in files ...
MAX_COPY_BYTES = 100 * 2**20  # ... and in bytes: a tenth of a second or so on a disk, once per rollout
# the folders a session is given, each made anew (its working directory, its home, copies of the user's files): no
# answer holds one (a scenarios file is asked again in other sessions)
WORKDIR_PREFIX, HOME_PREFIX, COPY_PREFIX = "mcprl-server-", "mcprl-home-", "mcprl-copy-"
SESSION_FOLDER = re.compile(f"(?:{WORKDIR_PREFIX}|{HOME_PREFIX}|{COPY_PREFIX})\\w+")


def is_program(arg: str) -> bool:
    """Whether a command-line argument is a program: a script (`server.py`, `dist/index.js`) or an
    executable file (`.venv/bin/some-server` after `env -C DIR`), not data the server works on."""
    return bool(re.search(r"\.(py|m?js|ts|jar|rb)$", arg)) or Path(arg).is_file() and os.access(arg, os.X_OK)


def assigned(arg: str) -> str | None:
    """The value a command-line argument assigns (a flag's, "--db=shop.db", or a variable's that `env` sets,
    "MEMORY_FILE=graph.jsonl"); None for any other argument."""
    return arg.partition("=")[2] if re.match(r"-|[A-Za-z_]\w*=", arg) and "=" in arg else None


def local_path(value: str) -> str:
    """The path a value names: a URL's where it has no host (`sqlite:////data/shop.db` and `file:///data/shop.db`
    name /data/shop.db), else the value itself."""
    if url := re.match(r"[A-Za-z][\w+.-]*:///+(?=[^/])", value):
        return "/" + value[url.end() :]
    return value


def _given(command: list[str], env: dict[str, str]) -> Iterator[tuple[str, bool]]:
    """The values a server is given, each as the path it names and whether a URL named it: its command line's
    arguments after the program (a flag's or a variable's value where one is assigned) and its environment's, but
    where programs and libraries are (`RUNTIME_VARIABLES`)."""
    given = [assigned(arg) or arg for arg in command[1:] if arg.partition("=")[0] not in RUNTIME_VARIABLES]
    for value in given + [v for k, v in env.items() if k not in RUNTIME_VARIABLES]:
        path = local_path(value)
        yield path, path != value


def within(value: Any, folders: Sequence[Path]) -> bool:
    """Whether every local path a JSON value names (`local_path`, in any string of it) lies in one of `folders`: an
    absolute one under one of them, a relative one (taken in the folder the server runs in, one of them) not climbing
    above it ("../.."). Where a write may land without changing anything else of the machine's."""
    if isinstance(value, dict):
        return all(within(v, folders) for v in value.values())
    if isinstance(value, list):
        return all(within(v, folders) for v in value)
    if not isinstance(value, str):
        return True
    path = os.path.normpath(local_path(value.strip()) or ".")
    if not os.path.isabs(path):
        return path != ".." and not path.startswith("../")
    return any(Path(path).is_relative_to(f) for f in folders)


def names_a_file(command: list[str], env: dict[str, str] | None = None) -> str | None:
    """The first value a stdio server is given (`_given`) that names an existing file or folder, or looks like a
    data file's path: where a server keeps state that outlives its process."""
    for value, _ in _given(command, env or {}):
        if value.startswith("-") or "/" not in value and "." not in value or is_program(value):
            continue  # a flag, a module name, or the server's own program (after `env VAR=value`, say)
        if re.search(DATA_FILE, value, re.I) or Path(value).exists():
            return value
    return None


def worked_on(spec: ServerSpec) -> list[Path]:
    """What a stdio server works on that a session would copy: every absolute path it is given (`_given`: an
    existing file or folder, or a data file to be made in an existing folder; a URL's path only where it exists, as
    `sqlite:///shop.db`'s is relative) and its working directory; a path inside another of them goes with that one."""
    found: list[Path] = []
    for value, in_url in _given(spec.command, spec.env):
        if not os.path.isabs(value) or is_program(value):
            continue
        path = Path(value)
        if path.exists() or re.search(DATA_FILE, value, re.I) and path.parent.is_dir() and not in_url:
            found.append(path)
    if spec.cwd is not None:
        found.append(Path(spec.cwd).absolute())
    found = sorted({Path(os.path.normpath(p)) for p in found}, key=lambda p: len(p.parts))
    return [p for i, p in enumerate(found) if not any(p.is_relative_to(q) for q in found[:i])]


def too_large(paths: list[Path]) -> str | None:
    """Why `paths` are not copied once a session ("12,000 files, 2.1 GB"), or None when they are small enough.
    Counted until past a limit, so a large tree costs a bounded walk."""
    files = size = 0
    stack = [p for p in paths if p.exists()]
    while stack and files <= MAX_COPY_FILES and size <= MAX_COPY_BYTES:
        path = stack.pop()
        try:
            info = path.lstat()
            if stat.S_ISDIR(info.st_mode):
                stack.extend(Path(e.path) for e in os.scandir(path))
                continue
        except OSError:
            continue  # not readable: it is not copied either
        files, size = files + 1, size + info.st_size
    if files <= MAX_COPY_FILES and size <= MAX_COPY_BYTES:
        return None
    return f"over {MAX_COPY_FILES:,} files" if files > MAX_COPY_FILES else f"over {MAX_COPY_BYTES // 2**20} MB"


def names_its_place(paths: list[Path]) -> Path | None:
    """A data file under `paths` (`DATA_FILE`) that holds one of their paths, or None. A store that records where
    it lies (kanban-mcp's board keeps each project under its folder's path, and the id it derives from it) opens on
    a copy elsewhere as another store, empty: a copy of it is not what the user has."""
    places = {p for path in paths for p in (str(path), os.path.realpath(path))}
    needles = [p.encode() for p in places]
    for root in paths:
        for folder, _, files in os.walk(root) if root.is_dir() else [(str(root.parent), [], [root.name])]:
            for name in files:
                if re.search(DATA_FILE, name, re.I):
                    with contextlib.suppress(OSError):
                        held = Path(folder, name).read_bytes()
                        if any(n in held for n in needles):
                            return Path(folder, name)
    return None


def not_copied(paths: list[Path]) -> str | None:
    """Why a session does not get copies of `paths` of its own (`too_large`, `names_its_place`), or None where it
    does."""
    if large := too_large(paths):
        return large
    if (store := names_its_place(paths)) is not None:
        return f"{store.name} there names where it lies, so a copy elsewhere would be another store"
    return None


class PathMap:
    """Paths of the originals and of their copies, each replaced by the other in any string of a JSON value; a
    path is replaced whole (`/data/shop` is not in `/data/shop2` nor `/old/data/shop`) and with what follows it
    (`/data/shop/a.csv`)."""

    def __init__(self, pairs: list[tuple[str, str]]) -> None:
        # the folder each copy was made in, its own: a copied file's holds what the server makes beside it too (a
        # database's journal), so what a call changed is seen there
        self.folders = [Path(c).parent for _, c in pairs]
        self.originals = [Path(o) for o, _ in pairs]  # what the copies are of, as calls and results name them
        # the copies of data files the user named that were not there, or held nothing (the server makes them: a store
        # of its own; an empty file is what a database server leaves where it was started once and never written)
        self.made = [
            Path(c) for o, c in pairs if not os.path.lexists(o) or os.path.isfile(o) and not os.path.getsize(o)
        ]
        # the copies as the server may see them too, through the links of the temp folder (macOS' /private/var)
        back = [(c, o) for o, c in pairs] + [(os.path.realpath(c), o) for o, c in pairs if os.path.realpath(c) != c]
        self._in = self._pattern(pairs)
        self._out = self._pattern(back)

    @staticmethod
    def _pattern(pairs: list[tuple[str, str]]) -> tuple[re.Pattern[str], dict[str, str]] | None:
        if not pairs:
            return None
        pairs = sorted(pairs, key=lambda pair: -len(pair[0]))  # the longest first, where one holds another
        alternatives = "|".join(re.escape(a) for a, _ in pairs)
        return re.compile(rf"(?<![\w.~-])(?:{alternatives})(?![\w.~-])"), dict(pairs)

    def inward(self, value: Any) -> Any:
        """`value` with the originals' paths as the copies' (what the server is sent)."""
        return _replaced(value, self._in)

    def outward(self, value: Any) -> Any:
        """`value` with the copies' paths as the originals' (what the server answered, as it reads for the user)."""
        return _replaced(value, self._out)


def files_of(roots: list[Path]) -> dict[str, tuple[int, int]]:
    """What `roots` hold: each file's size and modification time, and each folder, by path (what a call changed
    there, compared)."""
    held = {}
    for root in roots:
        for folder, _, files in os.walk(root):
            held[folder] = (-1, 0)  # (a folder made or removed; its own time changes with what it holds)
            for name in files:
                path = os.path.join(folder, name)
                with contextlib.suppress(OSError):
                    info = os.lstat(path)
                    held[path] = (info.st_size, info.st_mtime_ns)
    return held


def changed_paths(before: dict[str, tuple[int, int]], after: dict[str, tuple[int, int]]) -> list[str]:
    """The paths two `files_of` snapshots differ at: files written, made or removed, folders made or removed."""
    return sorted(path for path in before.keys() | after.keys() if before.get(path) != after.get(path))


def own_records(
    roots: list[Path], original: dict[str, tuple[int, int]], changed: list[str], made: Sequence[Path] = ()
) -> bool:
    """Whether the `changed` paths of `roots` (`changed_paths`) are all records of the server's own: none of them
    a file or folder of the user's (`original`, a `files_of` snapshot of the copies as they were made), each under a
    hidden folder the server made (`.csv_history/` beside a data file it loaded; not one the user had, `.notes/`), or
    a file the user named that was not there (`made`, `PathMap.made`: `--memory-path graph.jsonl` before the first
    write), or one beside it that it names (its journal, `shop.db-journal`)."""

    def made_hidden(path: str) -> bool:
        root = next((r for r in map(str, roots) if path.startswith(f"{r}{os.sep}")), None)
        if root is None:
            return False
        parts = Path(os.path.relpath(path, root)).parts
        return any(
            part.startswith(".") and os.path.join(root, *parts[: i + 1]) not in original for i, part in enumerate(parts)
        )

    def store(path: str) -> bool:
        return any(path.startswith(str(m)) for m in made)

    return bool(changed) and all(store(path) or path not in original and made_hidden(path) for path in changed)


def _replaced(value: Any, pattern: tuple[re.Pattern[str], dict[str, str]] | None) -> Any:
    if pattern is None:
        return value
    if isinstance(value, str):
        return pattern[0].sub(lambda m: pattern[1][m.group(0)], value)
    if isinstance(value, dict):
        return {_replaced(k, pattern): _replaced(v, pattern) for k, v in value.items()}
    if isinstance(value, list):
        return [_replaced(v, pattern) for v in value]
    return value


def _special(folder: str, names: list[str]) -> list[str]:
    """The entries of `folder` a copy leaves out: sockets, pipes and devices (no data, and not copyable)."""
    left = []
    for name in names:
        try:
            mode = os.lstat(os.path.join(folder, name)).st_mode
        except OSError:
            left.append(name)
            continue
        if not (stat.S_ISDIR(mode) or stat.S_ISREG(mode) or stat.S_ISLNK(mode)):
            left.append(name)
    return left


@contextmanager
def copied(spec: ServerSpec) -> Iterator[tuple[ServerSpec, PathMap]]:
    """A copy of what `spec`'s server works on (`worked_on`), in a temp folder removed at the end, and the spec that
    runs it there: its command line, environment and working directory name the copies. Each keeps its name
    (`.../0/effrepo`), so the server says the same names; a data file not made yet is made in the copy's folder."""
    with tempfile.TemporaryDirectory(prefix=COPY_PREFIX) as root:
        pairs = []
        for i, path in enumerate(worked_on(spec)):
            copy = Path(root, str(i), path.name or "root")
            copy.parent.mkdir()
            if path.is_dir():
                shutil.copytree(path, copy, symlinks=True, ignore=_special)
            elif path.exists():
                shutil.copy2(path, copy)
            pairs.append((str(path), str(copy)))
        paths = PathMap(pairs)
        update = {"command": paths.inward(spec.command), "env": paths.inward(spec.env)}
        if spec.cwd is not None:
            update["cwd"] = paths.inward(str(Path(spec.cwd).absolute()))
        yield spec.model_copy(update=update), paths
