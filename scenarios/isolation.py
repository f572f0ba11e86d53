"""Which tools may write, and whether a server's sessions start from fresh state: exploring (and a run on the
tasks grounded from it) calls a tool that may write only where its writes stay in the session that made them.

MCP's tool annotations decide first (`readOnlyHint`, `destructiveHint`), the tool's name and description second
(`mcprl.scenarios.lexicon.READ_WORDS`/`WRITE_WORDS`); a tool that says neither may write. A tool that may write is
called only where each session gets a fresh server (`isolated`: per-rollout stdio sessions by default), never on a
shared HTTP/SSE server unless `writes` is on. A stdio command that names a file (a database given on the command
line) keeps its state outside the process: such a server is isolated where each session runs on copies of its
files (`ServerSpec.private_copy`, on by default where they are small enough), and otherwise not taken as isolated
unless the user says it is.
Exploring checks the rest as it goes (`mcprl.scenarios.explore`): whether a fresh session reads what the first write
left, and what a write changed under the home folder it was given (`mcprl.tools.copies.changed_paths`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from mcprl.scenarios.config import ExploreConfig
from mcprl.scenarios.lexicon import DESCRIBED_READS, READ_WORDS, WRITE_WORDS, singular, words_of
from mcprl.tools.copies import names_a_file, too_large, worked_on

if TYPE_CHECKING:
    from mcprl.tools import ToolPool


def may_write(tool: dict[str, Any]) -> bool:
    """Whether calling `tool` (an MCP tool definition) may change the server's state."""
    hints = tool.get("annotations") or {}
    if hints.get("readOnlyHint") is True:
        return False
    if hints.get("readOnlyHint") is False or hints.get("destructiveHint") is True:
        return True
    for text, described in ((tool.get("name") or "", False), (tool.get("description") or "", True)):
        words = words_of(text)[:2]
        if described:  # (a description's verbs as a name's: "Lists the tables", "Deletes a file")
            words = [singular(w) for w in words]
        if any(w in WRITE_WORDS for w in words):
            return True
        if any(w in (DESCRIBED_READS if described else READ_WORDS) for w in words):
            return False
    return True


def is_isolated(pool: ToolPool, cfg: ExploreConfig, say: Callable[[str], None]) -> bool:
    """Whether each session of `pool` starts from fresh server state (see the module's docstring)."""
    if cfg.isolated is not None:
        return cfg.isolated
    if not pool.per_rollout:
        return False
    # (a working directory given, or a file the command names: the files there outlive the process, unless each
    # session has copies of its own)
    spec = pool.spec
    if not spec.private_copy and (path := spec.cwd or names_a_file(spec.command, spec.env)) is not None:
        large = too_large(worked_on(spec))
        say(
            f"note: the server works on {path}"
            + (f" ({large}, not copied once a session)" if large else "")
            + ": its state may live outside the process, so tools that may write are not explored (pass "
            + ("--private-copy to copy it for each session anyway, " if large else "")
            + "--isolated if each session really starts fresh)"
        )
        return False
    return True


def unsafe_writers(pool: ToolPool, cfg: ExploreConfig, say: Callable[[str], None] = print) -> list[str]:
    """The tools that may write on a server whose sessions may share state (shared, or state kept
    outside its process): exploring never calls them unless `cfg.writes` says so, and a run on
    tasks grounded here does not offer them either, since a rollout's write would change the answers."""
    assert pool.toolset is not None
    if cfg.writes or is_isolated(pool, cfg, say):
        return []
    return [tool["name"] for tool in pool.toolset.mcp_tools if may_write(tool)]
