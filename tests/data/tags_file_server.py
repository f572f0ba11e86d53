"""Tags kept in `tags.json` beside the program, as server-memory keeps its knowledge graph: a file named nowhere (not
on the command line, not in the environment), state that outlives the server's process. A write can change nothing
(a tag removed that was not there, one added that was): a check for state outliving the process has nothing to go
by after such a write. As server-memory's, its tools say which writes destroy (`destructiveHint`): removing a tag,
not adding one. Run from a copy of it in a folder of its own:

    PYTHONPATH=<this repository> python <folder>/tags_file_server.py
"""

from __future__ import annotations

from tests.server_fork import hand_over

hand_over()  # under pytest: run by a fork of a process that has imported the SDK (tests/server_fork.py)

import json  # noqa: E402
from pathlib import Path  # noqa: E402

from mcprl.servers import serve  # noqa: E402

FILE = Path(__file__).with_name("tags.json")


def _tags() -> list[str]:
    return json.loads(FILE.read_text())


def list_tags() -> str:
    """List the tags."""
    return ", ".join(_tags()) or "no tags"


def remove_tag(name: str) -> str:
    """Remove a tag."""
    FILE.write_text(json.dumps([t for t in _tags() if t != name]))
    return "done"


def add_tag(name: str) -> str:
    """Add a tag."""
    FILE.write_text(json.dumps(list(dict.fromkeys([*_tags(), name]))))
    return "done"


def build(seed: int = 0):
    server = serve.new_server("tags", "Tags in a file.")
    # (as server-memory says of its tools: a removal destroys, an addition only adds)
    serve.add_tools(server, [list_tags, remove_tag, add_tag], writes=["remove_tag", "add_tag"], adds=["add_tag"])
    return server


if __name__ == "__main__":
    serve.main(build, "Tags kept in a file.")
