"""report.html for a run directory: curves (PNG), per-tool rates, turns, judge cost, and sample
trajectories from the first and the last step side by side. Built only from files the run
wrote, so it can be regenerated any time (`mcprl report DIR`)."""

from __future__ import annotations

import html
import json
from pathlib import Path
from typing import Any

from matplotlib.figure import Figure

from mcprl.run.config import RunConfig, load_saved
from mcprl.types import TrajectoryGroup, load_jsonl
from mcprl.usage import run_tools
from mcprl.usage.render import CSS as USAGE_CSS
from mcprl.usage.render import html_section, learning_series, run_reports, server_tool_rows
from mcprl.usage.report import tool_name


def _rows(run_dir: Path) -> list[dict[str, Any]]:
    p = run_dir / "metrics.jsonl"
    return [json.loads(line) for line in p.read_text().splitlines() if line.strip()] if p.exists() else []


def _plot(path: Path, title: str, series: list[tuple[str, list[int], list[float]]], ylabel: str, bands=None) -> None:
    # a Figure of its own, not pyplot's: no backend to choose and no window, only the file
    fig = Figure(figsize=(6, 3.4), dpi=100)
    ax = fig.subplots()
    for label, xs, ys in series:
        if xs:
            ax.plot(xs, ys, marker="o", label=label)
    for xs, lo, hi in bands or []:
        if xs:
            ax.fill_between(xs, lo, hi, alpha=0.2)
    ax.set_title(title)
    ax.set_xlabel("training step")
    ax.set_ylabel(ylabel)
    ax.grid(alpha=0.3)
    if any(xs for _, xs, _ in series):
        ax.legend()
    fig.tight_layout()
    fig.savefig(path)


def _render_messages(messages: list[dict[str, Any]]) -> str:
    out = []
    for m in messages:
        role = m.get("role", "?")
        body = m.get("content") or ""
        for tc in m.get("tool_calls") or []:
            fn = tc.get("function", {})
            body += f"\n→ {fn.get('name')}({fn.get('arguments')})"
        out.append(
            f'<div class="msg {html.escape(role)}"><b>{html.escape(role)}</b><pre>{html.escape(str(body))}</pre></div>'
        )
    return "\n".join(out)


def _sample(run_dir: Path, step_file: str) -> str:
    p = run_dir / "trajectories" / step_file
    if not p.exists():
        return "<p>(none)</p>"
    groups = load_jsonl(p, TrajectoryGroup)
    best = max(
        (t for g in groups for t in g.valid if t.written_from is None), key=lambda t: t.reward, default=None
    )  # the policy's
    if best is None:
        return "<p>(no valid trajectory)</p>"
    # from the task (the last user message) on: the system prompt and demonstration are the same in every one
    task = max(best.task_index(), 0)
    return f"<p>reward {best.reward:.2f}</p>" + _render_messages(best.messages[task:])


def write_report(run_dir: Path) -> Path:
    run_dir = Path(run_dir)
    rows = _rows(run_dir)
    train = [r for r in rows if r["kind"] == "train" and not r.get("reference_step")]  # the steps that rolled out
    evals = [r for r in rows if r["kind"] == "eval"]
    figs = run_dir / "report"
    figs.mkdir(parents=True, exist_ok=True)
    steps = [r["step"] for r in train]
    _plot(
        figs / "reward.png",
        "Training reward",
        [
            ("mean reward", steps, [r["reward_mean"] for r in train]),
            ("tool-call rate", steps, [r["tool_call_rate"] for r in train]),
        ],
        "",
    )
    ev = [r for r in evals if "success_rate" in r]
    if ev:
        xs = [r["step"] for r in ev]
        _plot(
            figs / "val.png",
            "Held-out success",
            [("success", xs, [r["success_rate"] for r in ev])],
            "rate",
            bands=[(xs, [r["success_ci"][0] for r in ev], [r["success_ci"][1] for r in ev])],
        )
    else:
        xs = [r["step"] for r in evals]
        _plot(
            figs / "val.png", "Held-out mean judge score", [("score", xs, [r["reward_mean"] for r in evals])], "score"
        )
    _plot(
        figs / "turns.png",
        "Turns and tool errors",
        [
            ("turns/episode", steps, [r["turns_mean"] for r in train]),
            ("tool error rate", steps, [r["tool_error_rate"] for r in train]),
        ],
        "",
    )

    learned = learning_series(train)
    if learned:
        _plot(figs / "tools.png", "Called when needed, per tool", learned, "share of episodes")
    tools, made_up = server_tool_rows(train, [tool_name(t) for t in run_tools(run_dir)])
    tool_rows = []
    for name in tools:
        calls = sum(r.get(f"tool/calls/{name}", 0) for r in train)
        errors = sum(r.get(f"tool/errors/{name}", 0) for r in train)
        episodes = sum(r["trajectories"] for r in train) or 1
        tool_rows.append(
            f"<tr><td>{html.escape(name)}</td><td>{calls:.0f}</td><td>{calls / episodes:.2f}</td>"
            f"<td>{(errors / calls if calls else 0):.0%}</td></tr>"
        )
    cost = sum(r.get("judge_cost_usd", 0.0) for r in rows)
    judge_s = sum(r.get("judge_latency_s", 0.0) for r in rows)
    config = (run_dir / "config.json").read_text() if (run_dir / "config.json").exists() else "{}"
    settings = load_saved(run_dir / "config.json") if (run_dir / "config.json").exists() else RunConfig()
    drawn = sum(r.get("groups_drawn", 0) for r in train)
    dropped = sum(r.get("groups_dropped", 0) for r in train)
    first_eval, last_eval = (evals[0], evals[-1]) if evals else (None, None)

    def fmt_eval(r):
        if r is None:
            return "n/a"
        if "success_rate" in r:
            lo, hi = r["success_ci"]
            return f"{r['success_rate']:.0%} (95% CI {lo:.0%}–{hi:.0%}) at step {r['step']}"
        return f"mean score {r['reward_mean']:.3f} at step {r['step']}"

    grounding = run_dir / "scenarios" / "grounding.json"
    grounded = ""
    if grounding.exists():  # the run's tasks were grounded in the server (mcprl.scenarios.grounded)
        g = json.loads(grounding.read_text())
        dropped_why = ", ".join(f"{n} {why}" for why, n in g.get("dropped", {}).items()) or "none"
        per_tool = "".join(
            f"<tr><td>{html.escape(t)}</td><td>{g.get('covered', {}).get(t, 0)}</td></tr>" for t in g.get("tools", [])
        )
        grounded = (
            f"<h2>Grounded tasks</h2><p>{html.escape(g.get('exploration', ''))}</p>"
            f"<p>{g.get('kept', 0)} tasks kept of {g.get('candidates', 0)} candidates; dropped: "
            f"{html.escape(dropped_why)}. "
            f"The record of every call is in scenarios/exploration.jsonl.</p>"
            f"<table><tr><th>tool</th><th>tasks using it</th></tr>{per_tool}</table>"
        )
    made_up_note = (
        (
            "<p>Called in training, not tools of the server: "
            + html.escape(", ".join(f"{n} ({sum(r.get(f'tool/calls/{n}', 0) for r in train):.0f})" for n in made_up))
            + "</p>"
        )
        if made_up
        else ""
    )
    first_file = f"step_{train[0]['step']:04d}.jsonl" if train else ""
    last_file = f"step_{train[-1]['step']:04d}.jsonl" if train else ""
    page = f"""<!doctype html><html><head><meta charset="utf-8"><title>mcprl report: {html.escape(run_dir.name)}</title>
<style>body{{font-family:system-ui,sans-serif;max-width:1200px;margin:2em auto;color:#222}} pre{{white-space:pre-wrap;margin:0}}
.msg{{border-left:3px solid #ccc;padding:.3em .6em;margin:.3em 0;font-size:.85em}} .assistant{{border-color:#36c}} .tool{{border-color:#3a3}}
.cols{{display:flex;gap:1em}} .cols>div{{flex:1;min-width:0}} .cols img{{max-width:100%;height:auto}}
table{{border-collapse:collapse}} td,th{{border:1px solid #ddd;padding:.3em .6em}} {USAGE_CSS}</style></head><body>
<h1>mcprl run: {html.escape(run_dir.parent.name)}/{html.escape(run_dir.name)}</h1>
<p>Held-out: before {fmt_eval(first_eval)}; after {fmt_eval(last_eval)}. Training steps: {len(train)}.
Judge cost: ${cost:.4f} ({judge_s:.1f} s of judge calls).</p>
<p>Demonstration: {html.escape(str(settings.demonstration_source or "n/a"))}. Tool-use shaping weight: {settings.judge.shaping}.
Task help: {"on" if settings.scenarios.task_help else "off"}. Dynamic sampling: {drawn:.0f} extra groups drawn, {dropped:.0f} groups without reward variance dropped.</p>
<div class="cols"><div><img src="report/reward.png"></div><div><img src="report/val.png"></div><div><img src="report/turns.png"></div></div>
{grounded}
<h2>Tools</h2><table><tr><th>tool</th><th>calls</th><th>calls per episode</th><th>error rate</th></tr>{"".join(tool_rows) or "<tr><td colspan=4>no tool calls</td></tr>"}</table>
{made_up_note}
{html_section(run_reports(run_dir, settings.train.success_threshold))}
{'<div class="cols"><div><img src="report/tools.png"></div><div></div></div>' if learned else ""}
<h2>Sample trajectories (best of the step)</h2><div class="cols"><div><h3>first step</h3>{_sample(run_dir, first_file) if train else ""}</div>
<div><h3>last step</h3>{_sample(run_dir, last_file) if train else ""}</div></div>
<h2>Configuration</h2><pre>{html.escape(config)}</pre></body></html>"""  # noqa: E501 (the page as written)
    out = run_dir / "report.html"
    out.write_text(page)
    return out
