"""report.html in a real headless browser (Debian's `chromium`) in a 1300-pixel window: every plot fits
its column and the page has no horizontal scroll. Skipped where no chromium is installed
(`apt-get install -y chromium`)."""

from __future__ import annotations

import html
import json
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

from mcprl.run.report import write_report

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="no chromium on PATH (apt-get install -y chromium)")

# Appended to a copy of the page: once loaded, how far each plot reaches past its column and the window.
PROBE = """<script>window.addEventListener('load', () => {
  const imgs = [...document.querySelectorAll('.cols img')];
  document.body.setAttribute('data-probe', JSON.stringify({
    window: window.innerWidth, page: document.documentElement.scrollWidth,
    plots: imgs.map(i => ({loaded: i.naturalWidth, right: i.getBoundingClientRect().right,
                           column: i.parentElement.getBoundingClientRect().right}))}));
});</script>"""


def _browser(*args: str) -> subprocess.CompletedProcess:
    with tempfile.TemporaryDirectory() as profile:
        return subprocess.run(
            [
                CHROMIUM,
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
                "--no-first-run",
                f"--user-data-dir={profile}",
                "--window-size=1300,2000",
                *args,
            ],
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )


def _run_dir(d: Path) -> Path:
    (d / "eval").mkdir(parents=True)
    rows = [
        {
            "kind": "eval" if s % 2 == 0 else "train",
            "step": s,
            "reward_mean": 0.1 * s,
            "tool_call_rate": 0.5,
            "turns_mean": 2.0,
            "tool_error_rate": 0.1,
            "trajectories": 4,
            "success_rate": 0.25,
            "success_ci": [0.05, 0.6],
            "tool/calls/add": 2,
        }
        for s in range(5)
    ]
    (d / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return d


def test_report_plots_fit_a_1300_pixel_window(tmp_path):
    page = write_report(_run_dir(tmp_path / "run"))
    probed = page.with_name("probed.html")
    probed.write_text(page.read_text().replace("</body>", PROBE + "</body>"))
    r = _browser("--virtual-time-budget=5000", "--dump-dom", probed.as_uri())
    assert 'data-probe="' in r.stdout, r.stderr[-2000:]
    probe = json.loads(html.unescape(r.stdout.split('data-probe="')[1].split('"')[0]))
    assert probe["window"] == 1300 and len(probe["plots"]) == 3
    assert all(p["loaded"] > 0 for p in probe["plots"])  # the PNGs were found and drawn
    assert all(p["right"] <= p["column"] + 0.5 for p in probe["plots"]), probe
    assert probe["page"] <= probe["window"], probe  # nothing past the right edge
    shot = tmp_path / "shot.png"
    _browser(f"--screenshot={shot}", page.as_uri())
    assert shot.exists() and shot.stat().st_size > 10_000
