"""Code projects registered by their folder, kept in the server's process, as code-analysis servers
(mcp-server-tree-sitter) keep them: `register_project(path)` answers the project's name (its path); the tools that
read files take that name and refuse any other ("Project 'x' not found"); `configure` sets and answers the server's
settings, a write that gives values in every session.

    python tests/data/projects_server.py [--wide]        (started in the folder whose files are read)

`--wide`: as many tools as mcp-server-tree-sitter's 26, eight more listings that take nothing and eight more reads of
a project (its size, its counts of symbols, classes, ...).
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from tests.server_fork import hand_over  # noqa: E402

hand_over()  # under pytest: run by a fork of a process that has imported the SDK (tests/server_fork.py)

import json  # noqa: E402
import os  # noqa: E402

from mcprl.servers import serve  # noqa: E402

PROJECTS: dict[str, str] = {}  # name -> root folder
SETTINGS: dict = {"log_level": "INFO", "cache_enabled": True, "max_file_size_mb": 5}


def _root(project: str) -> str:
    if project not in PROJECTS:
        raise ValueError(f"Project '{project}' not found")
    return PROJECTS[project]


def configure(
    config_path: str | None = None,
    cache_enabled: bool | None = None,
    max_file_size_mb: int | None = None,
    log_level: str | None = None,
) -> str:
    """Configure the server; answers its settings."""
    given = {"config_path": config_path, "cache_enabled": cache_enabled, "max_file_size_mb": max_file_size_mb}
    SETTINGS.update({k: v for k, v in {**given, "log_level": log_level}.items() if v is not None})
    return json.dumps(SETTINGS)


def register_project(path: str, description: str | None = None) -> str:
    """Register a project directory for code exploration; the project is named by its path."""
    if not os.path.isdir(path):
        raise ValueError(f"Path is not a directory: {path}")
    PROJECTS[path] = path
    return json.dumps({"name": path, "root_path": path, "description": description, "files": len(os.listdir(path))})


def list_files(project: str) -> str:
    """List the files of a registered project."""
    root = _root(project)
    return json.dumps(sorted(str(p.relative_to(root)) for p in Path(root).rglob("*.py")))


def get_file(project: str, path: str) -> str:
    """The text of a file of a registered project."""
    full = Path(_root(project), path)
    if not full.is_file():
        raise ValueError(f"File '{path}' not found in project '{project}'")
    return full.read_text()


def count_functions(project: str) -> str:
    """How many functions each file of a registered project defines."""
    root = Path(_root(project))
    return json.dumps({str(p.relative_to(root)): p.read_text().count("def ") for p in root.rglob("*.py")})


def _listing(things: str):
    def listing() -> str:
        return json.dumps({things: [f"{things}-1", f"{things}-2"]})

    listing.__name__, listing.__doc__ = f"list_{things}", f"List the {things} the server knows."
    return listing


def _measure(what: str):
    def measure(project: str) -> str:
        root = Path(_root(project))
        return json.dumps({what: sum(len(p.read_text()) % 7 for p in root.rglob("*.py"))})

    measure.__name__, measure.__doc__ = f"project_{what}", f"The {what.replace('_', ' ')} of a registered project."
    return measure


WIDE = "--wide" in sys.argv
MORE = [
    *map(_listing, "languages templates themes plugins caches formats encodings parsers".split()),
    *map(_measure, "size symbol_count class_count import_count line_count test_count todo_count depth".split()),
]


def build(seed: int = 0):
    server = serve.new_server("projects", "Code projects registered by their folder.")
    serve.add_tools(
        server,
        [configure, register_project, list_files, get_file, count_functions, *(MORE if WIDE else [])],
        writes=["configure", "register_project"],
        adds=["register_project"],
    )
    return server


if __name__ == "__main__":
    serve.main(build, "Code projects registered by their folder.", argv=[a for a in sys.argv[1:] if a != "--wide"])
