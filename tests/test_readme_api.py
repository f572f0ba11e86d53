"""The README's "API in ten lines" runs as written, on the tiny model and one step: the public API
is `mcprl.*`, no submodule import, and the groups carry their scenarios for the judge."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

from tests.server_fork import shipped

REPO = Path(__file__).resolve().parents[1]


def test_the_readme_api_example_trains_a_step(tmp_path, tiny_model_dir):
    readme = (REPO / "README.md").read_text()
    section = readme[readme.index("## The API in ten lines") :]
    code = re.search(r"```python\n(.*?)```", section, re.S)[1]
    assert "from mcprl." not in code and "import mcprl." not in code  # the public API only
    code = code.replace('"smollm2-135m"', repr(str(tiny_model_dir))).replace("range(3)", "range(1)")
    # the calculator module, a process per rollout still, forked from the test's fork server (tests/server_fork.py):
    # sixteen rollouts' servers, ~1.5 s of CPU of imports each started afresh
    calculator = '"python -m mcprl.servers.calculator"'
    assert calculator in code
    code = code.replace(calculator, repr(shipped("calculator")))
    r = subprocess.run(
        [sys.executable, "-c", code],
        env={**os.environ, "MCPRL_HOME": str(tmp_path)},
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert r.returncode == 0, r.stderr[-3000:]
    assert (tmp_path / "default" / "calc-agent" / "checkpoints" / "0001").is_dir()
    # the step's metrics: four groups, each scored against its scenario's check (none left unjudged)
    assert "'groups': 4.0" in r.stdout and "'groups_skipped_judge': 0.0" in r.stdout, r.stdout
