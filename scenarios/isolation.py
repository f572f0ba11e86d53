"""Which tools may write, and whether a server's sessions start from fresh state: exploring (and a run on the
tasks grounded from it) calls a tool that may write only where its writes stay in the session that made them.

MCP's tool annotations decide first (`readOnlyHint`, `destructiveHint`), the tool's name and description second
(`mcprl.scenarios.lexicon.READ_WORDS`/`WRITE_WORDS`); a tool that says neither may write. A tool that may write is
called only where each session gets a fresh server (`isolated`: per-rollout stdio sessions by default), never on a
shared HTTP/SSE server unless `writes` is on; one that acts outside the server (`reaches_outside`: the open world its
annotations name, or a process or command of the machine) is not called at all unless `writes` is on: a fresh
server undoes none of it. A stdio command that names a file (a database given on the command line) keeps its state
outside the process: such a server is isolated where each session runs on copies of its files
(`ServerSpec.private_copy`, on by default where a copy is what they are: `mcprl.tools.copies.not_copied`), and
otherwise not taken as isolated unless the user says it is.
Exploring checks the rest as it goes (`mcprl.scenarios.explore`): whether a fresh session reads what the first write
left, and what a write changed under the home folder it was given (`mcprl.tools.copies.changed_paths`).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from mcprl.scenarios.config import ExploreConfig
from mcprl.scenarios.lexicon import DESCRIBED_READS, MACHINE, READ_WORDS, VERBS, WRITE_WORDS, singular, words_of
from mcprl.tools.copies import names_a_file, not_copied, worked_on

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
        why = not_copied(worked_on(spec))
        say(
            f"note: the server works on {path}"
            + (f" ({why}: not copied once a session)" if why else "")
            + ": its state may live outside the process, so tools that may write are not explored (pass "
            + ("--private-copy to copy it for each session anyway, " if why else "")
            + "--isolated if each session really starts fresh)"
        )
        return False
    return True


def by_reason(skipped: dict[str, str]) -> dict[str, list[str]]:
    """Tools left alone (tool -> why) grouped by why, in order: one line says each reason once."""
    grouped: dict[str, list[str]] = {}
    for tool, why in skipped.items():
        grouped.setdefault(why, []).append(tool)
    return grouped


OUTSIDE = "acts outside the server (a process, a command, the open world), which no fresh session undoes"


def reaches_outside(tool: dict[str, Any]) -> bool:
    """Whether `tool` may write to something outside the server, which no session started afresh undoes: MCP's
    `openWorldHint` says so (a web service, a browser), or what it acts on is the machine's (`MACHINE`: "Terminate a
    running process by PID", `start_process`, `run_command`), its name or its description's first sentence naming
    one past the verb they open with."""
    if not may_write(tool):
        return False
    if (tool.get("annotations") or {}).get("openWorldHint") is True:
        return True
    opening = re.split(r"(?<=[.!?:])\s", (tool.get("description") or "").strip(), maxsplit=1)[0]
    for text in (tool.get("name") or "", opening):
        words = [singular(w) for w in words_of(text)]
        if MACHINE & set(words[1:] if words and words[0] in VERBS else words):
            return True
    return False


def unsafe_writers(pool: ToolPool, cfg: ExploreConfig, say: Callable[[str], None] = print) -> dict[str, str]:
    """The tools exploring never calls unless `cfg.writes` says so, each with why: those that may write on a server
    whose sessions may share state (shared, or state kept outside its process), and on any server those that act
    outside it (`reaches_outside`). A run on tasks grounded here does not offer them either: a rollout's write would
    change the answers, or the machine."""
    assert pool.toolset is not None
    if cfg.writes:
        return {}
    shared = not is_isolated(pool, cfg, say)
    unsafe: dict[str, str] = {}
    for tool in pool.toolset.mcp_tools:
        if reaches_outside(tool):
            unsafe[tool["name"]] = OUTSIDE
        elif shared and may_write(tool):
            unsafe[tool["name"]] = (
                "may write, and the server is shared"
                if not pool.per_rollout
                else "may write, and the server's state may outlive its process"
            )
    return unsafe
