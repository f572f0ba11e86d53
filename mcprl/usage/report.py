"""What a model did with each of a server's tools, from recorded trajectories (`usage_report`).

Each episode's calls (the assistant messages' `tool_calls` from the task on, paired with the tool
messages that answered them, and with `metadata["tool_outcomes"]`: each call's error kind and
latency, as `mcprl.rollout.recording` records them) are compared with what its task needed: the tools of
its reference chain (`Scenario.reference`), else the tools the scenario declares (`Scenario.tools`),
else nothing, and the figures that need it are then reported as not computable (`unavailable`),
never as zeros. Sizes are bounded: at most `max_tools` tools in detail (the most called and needed;
the others summarised in `rest`), a few entries per table, error texts clipped.
"""

from __future__ import annotations

import json
import math
import re
from collections import Counter, defaultdict
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from mcprl.errors import clip
from mcprl.run.metrics import wilson_interval
from mcprl.tools.client import schema_validator
from mcprl.tools.validate import Finding, check_tools
from mcprl.types import SUCCESS_THRESHOLD, Scenario, ToolSchema, Trajectory, TrajectoryGroup

MAX_TOOLS = 40  # tools reported one by one; the rest are summarised
MAX_UNKNOWN = 20  # names of tools the server does not have, reported one by one
MAX_ENTRIES = 5  # entries of a per-tool table (confusions, parameters, error texts)
ERROR_TEXT_CHARS = 160
CHARS_PER_TOKEN = 4  # result size in tokens: characters / 4 (close for English and JSON with BPE tokenizers)
AGENT_TOOLS = frozenset({"complete_task"})  # offered by the agent, not the server (mcprl.rollout.loop.COMPLETE_TASK)


def needed_tools(scenario: Scenario | None) -> tuple[set[str], str] | None:
    """The tools a task needs and where that comes from ("reference chain" or "declared"), or None."""
    if scenario is not None and scenario.reference:
        return {c.tool for c in scenario.reference}, "reference chain"
    if scenario is not None and scenario.tools:
        return set(scenario.tools), "declared"
    return None


class Rate(BaseModel):
    """k of n, with its 95% Wilson interval (None when n is 0: nothing to measure)."""

    k: int
    n: int
    rate: float | None = None
    ci: tuple[float, float] | None = None

    @classmethod
    def of(cls, k: int, n: int) -> Rate:
        return cls(k=k, n=n, rate=k / n if n else None, ci=wilson_interval(k, n) if n else None)


class Count(BaseModel):
    name: str
    count: int


class ToolUsage(BaseModel):
    name: str
    calls: int = 0
    episodes_calling: int = 0
    # selection (None: no task said what it needs)
    tasks_needing: int | None = None
    episodes_needing: int | None = None
    called_when_needed: Rate | None = None
    called_when_not_needed: Rate | None = None
    called_instead: list[Count] = Field(default_factory=list, description="needed but not called: what was called")
    called_in_place_of: list[Count] = Field(
        default_factory=list, description="called, not needed: the needed tool not called"
    )
    # arguments
    schema_failures: int = 0
    schema_by_kind: list[Count] = Field(
        default_factory=list, description="missing_required, wrong_type, unknown_property, ..."
    )
    schema_by_parameter: list[Count] = Field(default_factory=list)
    unknown_parameters: list[Count] = Field(
        default_factory=list,
        description="arguments the schema does not define, in any call (allowed by the schema or not)",
    )
    rejections: int = Field(default=0, description="arguments passed the schema; the server answered an error")
    rejections_by_parameter: list[Count] = Field(default_factory=list, description="the parameter the error text names")
    top_errors: list[Count] = Field(default_factory=list, description="the commonest error texts, clipped")
    # results
    answered: int = 0
    errors: int = 0
    empty: int = 0
    timed_out: int = 0
    unanswered: int = Field(default=0, description="calls no tool message answered (the episode ended first)")
    answered_rate: Rate = Field(default_factory=lambda: Rate.of(0, 0))
    latency_p50_s: float | None = None
    latency_p95_s: float | None = None
    result_tokens_mean: float | None = None
    result_tokens_max: int | None = None
    # outcome (None: no episode was scored by a check)
    solved_when_right: Rate | None = None
    solved_when_wrong: Rate | None = None
    findings: list[str] = Field(default_factory=list, description="`mcprl validate` findings for the tool")


class RestSummary(BaseModel):
    """The tools past `max_tools`, together."""

    tools: int = 0
    calls: int = 0
    errors: int = 0
    names: list[str] = Field(default_factory=list, description="the first few")


class UnknownTool(BaseModel):
    """A tool name the model called that the server does not have."""

    name: str
    calls: int
    episodes: int


class UsageReport(BaseModel):
    model: str = ""
    label: str = ""
    episodes: int = 0
    failed_rollouts: int = 0
    episodes_with_needs: int = 0
    needs_from: list[str] = Field(default_factory=list, description="where the tasks' needs came from")
    unavailable: list[str] = Field(default_factory=list, description="figures this run cannot compute, and why")
    server_tools: int = 0
    tools: list[ToolUsage] = Field(default_factory=list)
    rest: RestSummary | None = None
    unknown_tools: list[UnknownTool] = Field(default_factory=list)
    unknown_calls: int = 0
    unknown_more: int = Field(default=0, description="further made-up names, not listed")
    token_estimate: str = (
        f"result tokens ~ characters / {CHARS_PER_TOKEN} of the result the model saw (after truncation)"
    )

    def tool(self, name: str) -> ToolUsage | None:
        return next((t for t in self.tools if t.name == name), None)


class _Call(BaseModel):
    tool: str
    arguments: Any = None
    text: str | None = None  # the tool message's content; None when none answered the call
    error_kind: str | None = None
    latency_s: float | None = None


def _error_kind(text: str) -> str | None:
    """An error's kind from its text, for trajectories recorded before `tool_outcomes` (mcprl.tools.client's words)."""
    if not text.lstrip().lower().startswith("error"):
        return None
    if "bad arguments for" in text or "are not valid JSON" in text or "must be a JSON object" in text:
        return "bad_arguments"
    if "did not answer within" in text or "timed out on the server" in text:
        return "timeout"
    if "there is no tool named" in text:
        return "unknown_tool"
    if "is not available in this environment" in text:
        return "denied"
    return "tool_error"


def episode_calls(t: Trajectory) -> list[_Call]:
    """The tool calls of an episode, from the task on, each with its answer and recorded outcome."""
    msgs = t.agent_messages()
    answers = {m.get("tool_call_id"): str(m.get("content") or "") for m in msgs if m.get("role") == "tool"}
    unanswered = iter(
        [str(m.get("content") or "") for m in msgs if m.get("role") == "tool" and not m.get("tool_call_id")]
    )
    outcomes: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for o in t.metadata.get("tool_outcomes") or []:
        outcomes[str(o.get("tool"))].append(o)
    calls = []
    for m in msgs:
        for tc in m.get("tool_calls") or [] if m.get("role") == "assistant" else []:
            fn = tc.get("function") or tc
            name, raw = str(fn.get("name")), fn.get("arguments")
            try:
                args = json.loads(raw) if isinstance(raw, str) and raw.strip() else (raw if raw is not None else {})
            except ValueError:
                args = None
            text = answers.get(tc.get("id")) if tc.get("id") in answers else next(unanswered, None)
            rec = outcomes[name].pop(0) if outcomes[name] else {}
            kind = rec.get("error_kind") if rec else (_error_kind(text) if text is not None else None)
            calls.append(
                _Call(
                    tool=name,
                    arguments=args,
                    text=text,
                    error_kind=kind,
                    latency_s=rec.get("latency_s"),
                )
            )
    return calls


def _schema_problems(schema: dict[str, Any], validator: Any, call: _Call) -> list[tuple[str, str]]:
    """(kind, parameter) of each way the call's arguments fail the tool's input schema (`validator`: its
    `schema_validator`, None when the schema itself is broken)."""
    if not isinstance(call.arguments, dict):
        return [("invalid_json" if call.arguments is None else "not_an_object", "(arguments)")]
    if validator is None:
        return []
    out = []
    try:
        errors = list(validator.iter_errors(call.arguments))
    except RecursionError:
        return [("too_deep", "(arguments)")]
    for e in errors:
        top = str(e.absolute_path[0]) if e.absolute_path else None
        if e.validator == "required" and not e.absolute_path:
            missing = [p for p in (e.validator_value or []) if p not in call.arguments]
            out += [("missing_required", str(p)) for p in missing] or [("missing_required", "(arguments)")]
        elif e.validator == "additionalProperties" and not e.absolute_path:
            known = set(schema.get("properties") or {})
            out += [("unknown_property", str(p)) for p in call.arguments if p not in known] or [
                ("unknown_property", "?")
            ]
        elif e.validator == "type":
            out.append(("wrong_type", top or "(arguments)"))
        else:
            out.append((str(e.validator), top or "(arguments)"))
    return out


def _short(text: str) -> str:
    """An error text on one line, cut at ERROR_TEXT_CHARS (a megabyte error is read no further)."""
    line = " ".join(text[: 2 * ERROR_TEXT_CHARS].split())
    return line[:ERROR_TEXT_CHARS] + "..." if len(line) > ERROR_TEXT_CHARS or len(text) > 2 * ERROR_TEXT_CHARS else line


def _named_parameter(text: str, params: Iterable[str]) -> str:
    for p in params:
        if re.search(rf"\b{re.escape(p)}\b", text):
            return p
    return "(none named)"


def _percentile(xs: list[float], q: float) -> float | None:
    if not xs:
        return None
    xs = sorted(xs)
    return xs[min(len(xs) - 1, max(0, math.ceil(q * len(xs)) - 1))]  # nearest rank


def _top(counter: Counter[str], n: int = MAX_ENTRIES) -> list[Count]:
    return [Count(name=k, count=v) for k, v in sorted(counter.items(), key=lambda kv: (-kv[1], kv[0]))[:n]]


def tool_name(schema: ToolSchema) -> str:
    """The name of an OpenAI function schema or an MCP tool."""
    return str((schema.get("function") or schema).get("name"))


def _parameters(schema: ToolSchema) -> dict[str, Any]:
    fn = schema.get("function") or schema
    params = fn.get("parameters") or fn.get("inputSchema")
    return params if isinstance(params, dict) else {}


def _solved(t: Trajectory, threshold: float) -> bool | None:
    """Whether a verified episode solved its task (its check's score at least `threshold`, the run's
    `--success-threshold`, as mcprl.run.unsolved.solved counts); None when no check scored it."""
    return t.metrics["verify"] >= threshold if "verify" in t.metrics else None


def usage_report(
    groups: Iterable[TrajectoryGroup],
    tools: list[ToolSchema],
    *,
    model: str = "",
    label: str = "",
    findings: list[Finding] | None = None,
    max_tools: int = MAX_TOOLS,
    success_threshold: float = SUCCESS_THRESHOLD,
) -> UsageReport:
    """The per-tool report of `groups` (scored rollouts, each with its `scenario`) against the server's
    `tools` (OpenAI function schemas, or MCP tools: the server's own, not what overrides showed the model).
    `findings`: `mcprl validate`'s, computed from `tools` when not given; `success_threshold`: the run's
    `--success-threshold`, the check's score that solved a task."""
    schemas = {tool_name(s): _parameters(s) for s in tools}
    if findings is None:
        findings = check_tools(
            [
                {
                    "name": n,
                    "description": ((s.get("function") or s).get("description") or ""),
                    "inputSchema": schemas[n],
                }
                for n, s in zip(schemas, tools)
            ]
        )
    report = UsageReport(model=model, label=label, server_tools=len(schemas))
    calls_by: dict[str, list[_Call]] = defaultdict(list)
    episodes_calling: Counter[str] = Counter()
    needing_tasks: dict[str, set[str]] = defaultdict(set)
    episodes_needing: Counter[str] = Counter()
    called_needed: Counter[str] = Counter()
    called_not_needed: Counter[str] = Counter()
    not_needed_episodes: Counter[str] = Counter()
    instead: dict[str, Counter[str]] = defaultdict(Counter)
    in_place_of: dict[str, Counter[str]] = defaultdict(Counter)
    right: dict[str, list[bool]] = defaultdict(list)  # solved, per episode that called the tool right
    wrong: dict[str, list[bool]] = defaultdict(list)
    unknown: Counter[str] = Counter()
    unknown_eps: Counter[str] = Counter()
    needs_from: set[str] = set()
    scored = 0
    for g in groups:
        need = needed_tools(g.scenario)
        for t in g.trajectories:
            if t.written_from is not None:  # the run wrote it (a reference chain), not the policy
                continue
            if t.error is not None:
                report.failed_rollouts += 1
                continue
            report.episodes += 1
            calls = [c for c in episode_calls(t) if c.tool not in AGENT_TOOLS]
            called = {c.tool for c in calls}
            for c in calls:
                if c.tool in schemas:
                    calls_by[c.tool].append(c)
                else:
                    unknown[c.tool] += 1
            for name in called:
                (episodes_calling if name in schemas else unknown_eps)[name] += 1
            solved = _solved(t, success_threshold)
            scored += solved is not None
            if need is not None:
                needed, source = need
                needs_from.add(source)
                report.episodes_with_needs += 1
                for name in schemas:
                    if name in needed:
                        episodes_needing[name] += 1
                        needing_tasks[name].add(g.scenario.id if g.scenario else "")
                        called_needed[name] += name in called
                        if name not in called:
                            instead[name].update(called - needed or {"(no tool)"})
                    else:
                        not_needed_episodes[name] += 1
                        called_not_needed[name] += name in called
                        if name in called:
                            in_place_of[name].update((needed - called) or {"(none missing)"})
            if solved is not None:
                for name in called & set(schemas) | (need[0] & set(schemas) if need else set()):
                    ok = name in called and all(c.error_kind is None for c in calls if c.tool == name)
                    ok = ok and (need is None or name in need[0])
                    (right if ok else wrong)[name].append(solved)
    report.needs_from = sorted(needs_from)
    if report.episodes and not report.episodes_with_needs:
        report.unavailable.append(
            "selection (needed / called instead / called when not needed): no task has a reference "
            "chain or declared tools; ground tasks in the server, or give scenarios with `tools`"
        )
    elif report.episodes_with_needs < report.episodes:
        report.unavailable.append(
            f"selection covers the {report.episodes_with_needs} of {report.episodes} episodes whose "
            "task says what it needs"
        )
    if report.episodes and not scored:
        report.unavailable.append("outcome (solved when called right / wrong): no episode was scored by a check")
    latencies = [c.latency_s for cs in calls_by.values() for c in cs if c.latency_s is not None]
    if any(calls_by.values()) and not latencies:
        report.unavailable.append("latency: these trajectories did not record it (recorded since tool_outcomes)")
    rows = []
    for name, schema in schemas.items():
        cs = calls_by.get(name, [])
        u = ToolUsage(
            name=name,
            calls=len(cs),
            episodes_calling=episodes_calling[name],
            findings=[f"{f.level}: {f.message}" for f in findings if f.tool == name],
        )
        if report.episodes_with_needs:
            u.tasks_needing, u.episodes_needing = len(needing_tasks[name]), episodes_needing[name]
            u.called_when_needed = Rate.of(called_needed[name], episodes_needing[name])
            u.called_when_not_needed = Rate.of(called_not_needed[name], not_needed_episodes[name])
            u.called_instead, u.called_in_place_of = _top(instead[name]), _top(in_place_of[name])
        kinds: Counter[str] = Counter()
        params: Counter[str] = Counter()
        rejected: Counter[str] = Counter()
        texts: Counter[str] = Counter()
        sizes = []
        validator: Any = ...  # built at the first schema failure
        known = set(schema.get("properties") or {})
        unknown_params: Counter[str] = Counter()
        for c in cs:
            if isinstance(c.arguments, dict) and known:
                unknown_params.update(p for p in c.arguments if p not in known)
            if c.text is None and c.error_kind is None:
                u.unanswered += 1
                continue
            text = c.text or ""
            sizes.append(len(text))
            if c.error_kind is None:
                if text.strip():
                    u.answered += 1
                else:
                    u.empty += 1
                continue
            texts[_short(text)] += 1
            if c.error_kind == "timeout":
                u.timed_out += 1
                continue
            u.errors += 1
            if c.error_kind == "bad_arguments":
                u.schema_failures += 1
                if validator is ...:
                    validator = schema_validator(schema) if isinstance(schema, dict) else None
                problems = _schema_problems(schema, validator, c) or [("other", "(arguments)")]
                kinds.update({k for k, _ in problems})
                params.update({p for _, p in problems})
            elif c.error_kind in ("tool_error", "protocol"):
                u.rejections += 1
                rejected[_named_parameter(text[:2000], (schema.get("properties") or {}))] += 1
        u.schema_by_kind, u.schema_by_parameter = _top(kinds), _top(params)
        u.unknown_parameters = _top(unknown_params)
        u.rejections_by_parameter, u.top_errors = _top(rejected), _top(texts, 3)
        u.answered_rate = Rate.of(u.answered, len(cs))
        lat = [c.latency_s for c in cs if c.latency_s is not None]
        u.latency_p50_s, u.latency_p95_s = _percentile(lat, 0.5), _percentile(lat, 0.95)
        if sizes:
            u.result_tokens_mean = round(sum(sizes) / len(sizes) / CHARS_PER_TOKEN, 1)
            u.result_tokens_max = max(sizes) // CHARS_PER_TOKEN
        if scored:
            u.solved_when_right = Rate.of(sum(right[name]), len(right[name]))
            u.solved_when_wrong = Rate.of(sum(wrong[name]), len(wrong[name]))
        rows.append(u)
    rows.sort(key=lambda u: (-(u.calls + (u.episodes_needing or 0)), u.name))
    report.tools = rows[:max_tools]
    if len(rows) > max_tools:
        rest = rows[max_tools:]
        report.rest = RestSummary(
            tools=len(rest),
            calls=sum(u.calls for u in rest),
            errors=sum(u.errors + u.timed_out for u in rest),
            names=[u.name for u in rest[:10]],
        )
    report.unknown_calls = sum(unknown.values())
    ranked = sorted(unknown.items(), key=lambda kv: (-kv[1], kv[0]))
    report.unknown_tools = [
        UnknownTool(name=clip(n, 80), calls=k, episodes=unknown_eps[n]) for n, k in ranked[:MAX_UNKNOWN]
    ]
    report.unknown_more = max(0, len(ranked) - MAX_UNKNOWN)
    return report


def step_metrics(
    groups: list[TrajectoryGroup], tools: list[ToolSchema], *, success_threshold: float = SUCCESS_THRESHOLD
) -> dict[str, float]:
    """Per-tool figures for a training step's metrics.jsonl line: `tool/needed/NAME` (episodes whose task
    needed it), `tool/called_when_needed/NAME`, `tool/answered/NAME` (calls answered without error)."""
    if not tools:  # no server (a run without tools): nothing to compare calls with
        return {}
    r = usage_report(groups, tools, findings=[], success_threshold=success_threshold)
    out: dict[str, float] = {}
    for u in r.tools:
        if u.episodes_needing:
            out[f"tool/needed/{u.name}"] = float(u.episodes_needing)
            out[f"tool/called_when_needed/{u.name}"] = float(u.called_when_needed.k if u.called_when_needed else 0)
        if u.calls:
            out[f"tool/answered/{u.name}"] = float(u.answered)
    if r.unknown_calls:
        out["tool/unknown_calls"] = float(r.unknown_calls)
    return out


def run_tools(run_dir: Path) -> list[ToolSchema]:
    """The server's tools a run recorded (its tools.json, mcprl.tools.discovery), or [] when it has none."""
    f = Path(run_dir) / "tools.json"
    return list(json.loads(f.read_text()).get("tools") or []) if f.exists() else []


class UsageRun(BaseModel):
    """One model's rollouts (with or without the tool overrides) in `mcprl usage`."""

    label: str
    model: str
    overrides: str | None = Field(default=None, description="the overrides file the model was shown the tools with")
    success_rate: float | None = None
    success_ci: tuple[float, float] | None = None
    reward_mean: float = 0.0
    usage: UsageReport


class UsageResult(BaseModel):
    """`mcprl usage --json`: the same tasks and samples for every run, side by side."""

    server: str
    scenarios: int
    samples: int
    runs: list[UsageRun]


def changes(result: UsageResult) -> list[str]:
    """Per tool, how each run's called-when-needed rate compares with the first run's, with whether the
    95% intervals separate (a change past the noise) or overlap."""
    if len(result.runs) < 2:
        return []
    first, lines = result.runs[0], []
    for other in result.runs[1:]:
        for u in first.usage.tools:
            v = other.usage.tool(u.name)
            a, b = u.called_when_needed, v.called_when_needed if v else None
            if not (a and b and a.ci and b.ci and a.rate is not None and b.rate is not None):
                continue
            apart = a.ci[1] < b.ci[0] or b.ci[1] < a.ci[0]
            lines.append(
                f"{u.name}: called when needed {a.rate:.0%} ({first.label}) -> {b.rate:.0%} ({other.label}): "
                + ("the intervals separate" if apart else "within the intervals")
            )
    return lines
