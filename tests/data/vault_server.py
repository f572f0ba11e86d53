"""Notes in a folder its command line names (a vault), read by their paths within it: `read_notes` joins each path
it is sent to the vault's (an absolute one too, as a path under it), and says of one it cannot read where it looked
("ENOENT: no such file or directory, open '<vault>/README.md'"), as Node servers of notes do.

    python tests/data/vault_server.py VAULT
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from tests.server_fork import hand_over  # noqa: E402

hand_over()  # under pytest: run by a fork of a process that has imported the SDK (tests/server_fork.py)

import os  # noqa: E402

from mcprl.servers import serve  # noqa: E402

VAULT = sys.argv[1] if len(sys.argv) > 1 else "."


def read_notes(paths: list[str]) -> str:
    """Read the contents of several notes at once; each path is relative to the vault."""
    parts = []
    for path in paths:
        full = os.path.join(os.path.realpath(VAULT), path.lstrip("/"))
        if os.path.isdir(full):
            parts.append(f"{path}: Error - EISDIR: illegal operation on a directory, read")
        elif not os.path.isfile(full):
            parts.append(f"{path}: Error - ENOENT: no such file or directory, open '{full}'")
        else:
            parts.append(f"{path}:\n{Path(full).read_text()}")
    if all(": Error - " in p for p in parts):
        raise ValueError("\n---\n".join(parts))
    return "\n---\n".join(parts)


def build(seed: int = 0):
    server = serve.new_server("vault", "Notes in a vault.")
    serve.add_tools(server, [read_notes])
    return server


if __name__ == "__main__":
    serve.main(build, "Notes in a vault.", argv=sys.argv[2:])
