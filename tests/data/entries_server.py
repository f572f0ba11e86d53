"""Folders of files, each listed with an optional exclusion (names or `*` patterns) and an optional flag that
changes nothing the listing says (`follow_links`: there are no links): values a call may be given that leave its
answer as it was. Files are read several at once, each failing alone (`read_files`).

    python tests/data/entries_server.py
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from tests.server_fork import hand_over  # noqa: E402

hand_over()  # under pytest: run by a fork of a process that has imported the SDK (tests/server_fork.py)

from fnmatch import fnmatch  # noqa: E402
from typing import Annotated  # noqa: E402

from pydantic import Field  # noqa: E402

from mcprl.servers import serve  # noqa: E402

FOLDERS = {
    "reports": {"q1.csv": 120, "q2.csv": 340, "summary.txt": 18},
    "archive": {"2023.txt": 99, "2022.txt": 87},
    "photos": {"beach.jpg": 5120, "hills.jpg": 4210, "city.png": 3002},
    "music": {"intro.mp3": 7001, "theme.mp3": 6550},
    "drafts": {"letter.doc": 230, "essay.doc": 410},
    "recipes": {"soup.md": 44, "bread.md": 61, "salad.md": 29},
}


def folders() -> str:
    """The folders there are, one per line."""
    return "\n".join(FOLDERS)


def list_files(
    folder: Annotated[str, Field(description="a folder")],
    exclude: Annotated[list[str] | None, Field(description="names or patterns to leave out")] = None,
    follow_links: Annotated[bool, Field(description="follow symbolic links")] = False,
) -> str:
    """The files in a folder, each with its size in bytes."""
    if folder not in FOLDERS:
        raise ValueError(f"no folder '{folder}'")
    kept = [(n, size) for n, size in FOLDERS[folder].items() if not any(fnmatch(n, p) for p in exclude or [])]
    return "\n".join(f"{n}: {size} bytes" for n, size in kept) or "no files"


def recent_files() -> list[dict]:
    """The files changed lately, with their folders."""
    return [{"name": "q2.csv", "folder": "reports"}, {"name": "soup.md", "folder": "recipes"}]


def read_files(names: Annotated[list[str], Field(description="the names of the files to read")]) -> str:
    """Each file's size and folder, or what went wrong reading it, one file after another (a file that is not there
    does not stop the others)."""
    found = {name: (folder, size) for folder, files in FOLDERS.items() for name, size in files.items()}
    parts = [
        f"{name}: Error - no such file"
        if name not in found
        else f"{name}:\nsize: {found[name][1]}\nfolder: {found[name][0]}"
        for name in names
    ]
    return "\n---\n".join(parts)


def build(seed: int = 0):
    server = serve.new_server("entries", "Folders of files.")
    serve.add_tools(server, [folders, list_files, recent_files, read_files])
    return server


if __name__ == "__main__":
    serve.main(build, "Folders of files.")
