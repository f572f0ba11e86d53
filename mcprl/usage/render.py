"""The per-tool report for people: rich tables for the terminal (`print_reports`), an HTML section for
report.html (`html_section`). Several reports (a base model and a trained one, with and without
overrides) are shown side by side, a row per tool and a line per report."""

from __future__ import annotations

import html
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from mcprl.types import SUCCESS_THRESHOLD, TrajectoryGroup, load_jsonl
from mcprl.usage.report import AGENT_TOOLS, Count, Rate, ToolUsage, UsageReport, run_tools, usage_report

MISSING = "n/a"


def _rate(r: Rate | None) -> str:
    if r is None or r.rate is None or r.ci is None:
        return MISSING
    return f"{r.rate:.0%} [{r.ci[0] * 100:.0f}–{r.ci[1]:.0%}] n={r.n}"


def _counts(cs: list[Count]) -> str:
    return ", ".join(f"{c.name} {c.count}" for c in cs)


def _latency(u: ToolUsage) -> str:
    if u.latency_p50_s is None or u.latency_p95_s is None:
        return MISSING
    return f"{u.latency_p50_s * 1000:.0f}/{u.latency_p95_s * 1000:.0f} ms"


def _tokens(u: ToolUsage) -> str:
    return MISSING if u.result_tokens_mean is None else f"{u.result_tokens_mean:.0f} (max {u.result_tokens_max})"


def _args(u: ToolUsage) -> str:
    return f"{u.schema_failures} schema, {u.rejections} rejected"


def _results(u: ToolUsage) -> str:
    return f"{u.answered} ok, {u.errors} err, {u.empty} empty, {u.timed_out} timeout"


# (column, value of a tool's row) for the terminal table
COLUMNS: list[tuple[str, Callable[[ToolUsage], str]]] = [
    ("calls", lambda u: str(u.calls)),
    ("called when needed", lambda u: _rate(u.called_when_needed)),
    ("called when not needed", lambda u: _rate(u.called_when_not_needed)),
    ("answered", lambda u: _rate(u.answered_rate)),
    ("schema fail / rejected", lambda u: f"{u.schema_failures} / {u.rejections}"),
    ("ok / err / empty / timeout", lambda u: f"{u.answered} / {u.errors} / {u.empty} / {u.timed_out}"),
    ("latency p50/p95", _latency),
    ("result tokens", _tokens),
    ("solved: right / wrong", lambda u: f"{_rate(u.solved_when_right)} / {_rate(u.solved_when_wrong)}"),
]


def _names(reports: list[UsageReport]) -> list[str]:
    seen: dict[str, None] = {}
    for r in reports:
        for u in r.tools:
            seen.setdefault(u.name, None)
    return list(seen)


def _label(r: UsageReport, i: int) -> str:
    return r.label or r.model or f"#{i + 1}"


def details(reports: list[UsageReport]) -> list[str]:
    """What the table has no room for: confusions, arguments by parameter, error texts, findings, made-up
    names, the tools summarised, and the figures that could not be computed."""
    lines = []
    for i, r in enumerate(reports):
        who = _label(r, i)
        for u in r.tools:
            parts = []
            if u.called_instead:
                parts.append(f"needed, called instead: {_counts(u.called_instead)}")
            if u.called_in_place_of:
                parts.append(f"called in place of: {_counts(u.called_in_place_of)}")
            if u.schema_by_kind:
                parts.append(
                    f"schema failures: {_counts(u.schema_by_kind)} (by parameter: {_counts(u.schema_by_parameter)})"
                )
            if u.unknown_parameters:
                parts.append(f"arguments not in the schema: {_counts(u.unknown_parameters)}")
            if u.rejections_by_parameter:
                parts.append(f"rejected, by parameter: {_counts(u.rejections_by_parameter)}")
            if u.top_errors:
                parts.append("errors: " + " | ".join(f"{c.count}x {c.name}" for c in u.top_errors))
            if parts:
                lines.append(f"{who} {u.name}: " + "; ".join(parts))
        if r.unknown_tools:
            more = f" and {r.unknown_more} more names" if r.unknown_more else ""
            lines.append(
                f"{who}: {r.unknown_calls} calls of tools the server does not have: "
                + ", ".join(f"{t.name} {t.calls}" for t in r.unknown_tools)
                + more
            )
        if r.rest is not None:
            lines.append(
                f"{who}: {r.rest.tools} more tools, {r.rest.calls} calls, {r.rest.errors} errors "
                f"({', '.join(r.rest.names)}, ...)"
            )
        for why in r.unavailable:
            lines.append(f"{who}: not computed: {why}")
    for u in reports[0].tools if reports else []:
        for f in u.findings:
            lines.append(f"validate {u.name}: {f}")
    return lines


def print_reports(reports: list[UsageReport], console: Console | None = None) -> None:
    """The table, then the details; piped (CI logs) at 200 columns instead of rich's 80, so columns are not cut."""
    console = console or (Console() if sys.stdout.isatty() else Console(width=200))
    head = reports[0] if reports else UsageReport()
    t = Table(title=f"Tool use on {head.episodes} episodes ({head.server_tools} server tools)")
    t.add_column("tool")
    if len(reports) > 1:
        t.add_column("model")
    for col, _ in COLUMNS:
        t.add_column(col)
    t.add_column("validate")
    for name in _names(reports):
        for i, r in enumerate(reports):
            u = r.tool(name) or ToolUsage(name=name)
            cells = [name if i == 0 else ""] + ([_label(r, i)] if len(reports) > 1 else [])
            t.add_row(*cells, *(fn(u) for _, fn in COLUMNS), str(len(u.findings)) if i == 0 else "")
    console.print(t)
    for line in details(reports):
        console.print(line, markup=False, highlight=False)


def _bar(r: Rate | None) -> str:
    if r is None or r.rate is None or r.ci is None:
        return f'<span class="na">{MISSING}</span>'
    lo, hi = r.ci
    return (
        f'<div class="bar" title="{r.k} of {r.n}"><span style="width:{r.rate * 100:.1f}%"></span>'
        f'<i style="left:{lo * 100:.1f}%;width:{(hi - lo) * 100:.1f}%"></i></div>'
        f"{r.rate:.0%} <small>[{lo:.0%}–{hi:.0%}] n={r.n}</small>"
    )


HTML_RATES: list[tuple[str, Callable[[ToolUsage], Rate | None]]] = [
    ("called when needed", lambda u: u.called_when_needed),
    ("called when not needed", lambda u: u.called_when_not_needed),
    ("answered", lambda u: u.answered_rate),
    ("solved when called right", lambda u: u.solved_when_right),
    ("solved when called wrong", lambda u: u.solved_when_wrong),
]

CSS = """.usage td{vertical-align:top;font-size:.85em} .usage .bar{position:relative;width:8em;height:.6em;
background:#eee;display:inline-block;margin-right:.4em} .usage .bar span{position:absolute;left:0;top:0;bottom:0;
background:#36c} .usage .bar i{position:absolute;top:.2em;height:.2em;background:#000;opacity:.5}
.usage .na{color:#999} .usage .who{color:#666}"""


def html_section(reports: list[UsageReport]) -> str:
    """The per-tool section of report.html: a row per tool, a line per report in each figure's cell."""
    if not reports or not any(r.episodes for r in reports):
        return "<h2>Tool use</h2><p>(no episodes recorded)</p>"
    esc = html.escape
    head = "".join(f"<th>{esc(c)}</th>" for c, _ in HTML_RATES)
    rows = []
    for name in _names(reports):
        cells_rate = []
        for _, fn in HTML_RATES:
            cells_rate.append(
                "<td>"
                + "<br>".join(
                    f'<span class="who">{esc(_label(r, i))}</span> {_bar(fn(r.tool(name) or ToolUsage(name=name)))}'
                    for i, r in enumerate(reports)
                )
                + "</td>"
            )
        plain = "<br>".join(
            esc(f"{_label(r, i)}: {u.calls} calls; {_args(u)}; {_results(u)}; {_latency(u)}; {_tokens(u)} tokens")
            for i, r in enumerate(reports)
            for u in [r.tool(name) or ToolUsage(name=name)]
        )
        findings = "<br>".join(esc(f) for f in (reports[0].tool(name) or ToolUsage(name=name)).findings) or "none"
        rows.append(f"<tr><td><b>{esc(name)}</b></td>{''.join(cells_rate)}<td>{plain}</td><td>{findings}</td></tr>")
    notes = "".join(f"<li>{esc(line)}</li>" for line in details(reports) if not line.startswith("validate "))
    labels = ", ".join(f"{esc(_label(r, i))} ({r.episodes} episodes)" for i, r in enumerate(reports))
    return (
        f"<h2>Tool use</h2><p>{labels}. Rates with 95% intervals; {esc(reports[0].token_estimate)}.</p>"
        f'<table class="usage"><tr><th>tool</th>{head}<th>calls, arguments, results, latency, size</th>'
        f"<th>validate</th></tr>{''.join(rows)}</table><ul>{notes}</ul>"
    )


def run_reports(run_dir: Path, success_threshold: float = SUCCESS_THRESHOLD) -> list[UsageReport]:
    """The per-tool reports of a run's first and last evaluation (eval/step_NNNN.jsonl): the base model and
    the trained one, against the run's tools (tools.json); [] when it has neither. `success_threshold`: the
    run's `--success-threshold`."""
    tools = run_tools(run_dir)
    files = sorted((Path(run_dir) / "eval").glob("step_*.jsonl"))
    if not tools or not files:
        return []
    chosen = [files[0]] if len(files) == 1 else [files[0], files[-1]]
    out = []
    for i, f in enumerate(chosen):
        step = int(f.stem.split("_")[1])
        label = f"trained (step {step})" if i else f"base (step {step})" if step == 0 else f"step {step}"
        out.append(
            usage_report(load_jsonl(f, TrajectoryGroup), tools, label=label, success_threshold=success_threshold)
        )
    return out


def server_tool_rows(train_rows: list[dict[str, Any]], tools: list[str]) -> tuple[list[str], list[str]]:
    """report.html's call counts: the names of `tools` (the server's) called in training, and the names
    called that the server does not have (a model's made-up `math.pow`), apart."""
    called = sorted({k.split("/", 2)[2] for r in train_rows for k in r if k.startswith("tool/calls/")})
    known = set(tools)
    made_up = [n for n in called if tools and n not in known and n not in AGENT_TOOLS]
    return [n for n in called if n not in made_up], made_up


def learning_series(train_rows: list[dict[str, Any]], limit: int = 8) -> list[tuple[str, list[int], list[float]]]:
    """Per training step, the share of episodes that needed a tool and called it (metrics.jsonl's
    `tool/called_when_needed/NAME` over `tool/needed/NAME`): which tool a run learned to call. The `limit`
    tools most often needed."""
    needed: dict[str, float] = {}
    for r in train_rows:
        for k, v in r.items():
            if k.startswith("tool/needed/"):
                needed[k.split("/", 2)[2]] = needed.get(k.split("/", 2)[2], 0.0) + v
    top = sorted(needed, key=lambda n: (-needed[n], n))[:limit]
    out = []
    for name in top:
        pts = [
            (r["step"], r.get(f"tool/called_when_needed/{name}", 0.0) / r[f"tool/needed/{name}"])
            for r in train_rows
            if r.get(f"tool/needed/{name}")
        ]
        out.append((name, [s for s, _ in pts], [y for _, y in pts]))
    return out
