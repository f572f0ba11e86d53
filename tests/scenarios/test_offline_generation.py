"""Offline generation with the embedded model (`local`, SmolLM2-135M behind our endpoint, which
enforces `response_format` by grammar): `mcprl scenarios` and `autorl` must work with no API key.
Slow on a shared 2-core CPU (minutes each), hence marked integration."""

import json
import os
import subprocess
import sys

import pytest

from mcprl.scenarios.dedup import Deduper
from mcprl.types import Scenario, load_jsonl

pytestmark = pytest.mark.integration


def run(args: list[str], home, timeout: int = 1500) -> subprocess.CompletedProcess:
    env = {
        **os.environ,
        "MCPRL_HOME": str(home),
        "LITELLM_LOCAL_MODEL_COST_MAP": "True",
        "TOKENIZERS_PARALLELISM": "false",
    }
    return subprocess.run(
        [sys.executable, "-m", "mcprl.cli", *args], capture_output=True, text=True, env=env, timeout=timeout
    )


@pytest.fixture
def model_home(smollm2_dir):
    """An MCPRL_HOME whose models/ holds the pulled SmolLM2 (what `local` serves)."""
    return smollm2_dir.parent.parent


def test_scenarios_n8_gives_at_least_6_valid_distinct(model_home, tmp_path):
    out = tmp_path / "calc.jsonl"
    r = run(
        [
            "scenarios",
            "--source",
            "synthesized",
            "--server",
            "python -m mcprl.servers.calculator",
            "-n",
            "8",
            "-o",
            str(out),
        ],
        model_home,
    )
    assert r.returncode == 0, r.stderr[-3000:]
    assert r.stderr.count("generator call ") >= 2  # a line per call
    scenarios = load_jsonl(out, Scenario)
    deduper = Deduper()
    valid = [
        s
        for s in scenarios
        if len(s.task) >= 12 and 1 <= s.difficulty <= 5 and s.tools and deduper.duplicate_of(s.task) is None
    ]
    assert len(valid) >= 6, [s.task for s in scenarios]
    assert {t for s in valid for t in s.tools} <= {"add", "subtract", "multiply", "divide", "power"}


def test_autorl_one_step_finishes_offline(model_home, tmp_path):
    home = tmp_path / "home"
    (home / "models").mkdir(parents=True)
    (home / "models" / "smollm2-135m").symlink_to(model_home / "models" / "smollm2-135m")
    r = run(
        [
            "autorl",
            "Answer a question about geography in one sentence",
            "--steps",
            "1",
            # two inputs, the fewest a run takes (one to train on, one held out): each is a generator call
            # (~12 s of CPU here)
            "-n",
            "2",
            "--group-size",
            "2",
            "--groups-per-step",
            "1",
            "--max-turns",
            "1",
            "--max-tokens",
            "48",
            "--name",
            "geo",
        ],
        home,
    )
    assert r.returncode == 0, r.stderr[-3000:]
    d = home / "default" / "geo"
    assert len(load_jsonl(d / "autorl" / "inputs.jsonl", Scenario)) >= 2  # as many as asked for
    assert (d / "autorl" / "rubric.md").read_text().count("\n- ") >= 2
    rows = [json.loads(x) for x in (d / "metrics.jsonl").read_text().splitlines()]
    assert [x["step"] for x in rows if x["kind"] == "train"] == [1]
    assert "generator call (system prompt)" in r.stderr


def test_every_schema_we_send_compiles_strictly_on_our_endpoint(smollm2_dir):
    """A schema keyword the grammar cannot enforce would be an HTTP 400 from `local` (strict)."""
    from transformers import AutoTokenizer

    from mcprl.autorl.generate import RUBRIC_SCHEMA, SYSTEM_PROMPT_SCHEMA, inputs_schema
    from mcprl.judges.ruler import verdict_schema
    from mcprl.scenarios.synthesize import drafts_schema
    from mcprl.serving.protocol import ResponseFormat
    from mcprl.serving.structured import Grammars

    tok = AutoTokenizer.from_pretrained(smollm2_dir)
    grammars = Grammars(tok, {tok.eos_token_id}, len(tok))
    for schema in (
        verdict_schema(["1", "2", "3"], in_order=True),
        drafts_schema(["add", "divide"], 1),
        SYSTEM_PROMPT_SCHEMA,
        RUBRIC_SCHEMA,
        inputs_schema(1),
    ):
        fmt = ResponseFormat.model_validate(
            {"type": "json_schema", "json_schema": {"name": "r", "schema": schema, "strict": True}}
        )
        assert not grammars.compile(fmt).matcher.is_error()
