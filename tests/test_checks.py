"""Scenario.check is typed (mcprl.checks): the JSON a user writes loads into the `Check` union and is written
back as it was; the shipped task sets write typed checks; a bad check names its file, line and scenario."""

from __future__ import annotations

import json

import pytest

from mcprl import tasks
from mcprl.checks import (
    ContainsCheck,
    HoldsCheck,
    JsonFieldCheck,
    PythonCheck,
    RegexCheck,
    ServerCheck,
    holds_answer,
    numbers,
    same_value,
)
from mcprl.errors import UserError
from mcprl.types import Scenario, dump_jsonl, load_jsonl

pytestmark = pytest.mark.unit

WRITTEN = [
    ({"kind": "exact", "value": "42"}, "ExactCheck"),
    ({"kind": "normalized"}, "NormalizedCheck"),
    ({"kind": "contains", "value": ["Paris", "Rome"]}, "ContainsCheck"),
    ({"kind": "holds", "on": "read_back", "max_other_numbers": None}, "HoldsCheck"),
    ({"kind": "holds", "value": 22.6, "any_of": False, "max_words": 7}, "HoldsCheck"),
    ({"kind": "regex", "pattern": "\\b42\\b", "ignore_case": True}, "RegexCheck"),
    ({"kind": "json_field", "field": "order.total", "value": 12.5}, "JsonFieldCheck"),
    ({"kind": "python", "function": "pkg.module:fn"}, "PythonCheck"),
    (
        {"kind": "server", "server": "inventory", "world_seed": 3, "expect_change": {"sku": "A", "change": -2}},
        "ServerCheck",
    ),
]


@pytest.mark.parametrize("check, model", WRITTEN)
def test_a_written_check_loads_typed_and_is_written_back_unchanged(tmp_path, check, model):
    f = tmp_path / "s.jsonl"
    f.write_text(json.dumps({"id": "q", "task": "t", "check": check}) + "\n")
    (scenario,) = load_jsonl(f, Scenario)
    assert type(scenario.check).__name__ == model
    assert scenario.model_dump(mode="json")["check"] == check
    dump_jsonl([scenario], tmp_path / "again.jsonl")
    assert json.loads((tmp_path / "again.jsonl").read_text())["check"] == check
    assert load_jsonl(tmp_path / "again.jsonl", Scenario) == [scenario]
    # a dump that leaves out defaults (autorl's inputs file) still names the kind
    assert Scenario.model_validate_json(scenario.model_dump_json(exclude_defaults=True)) == scenario


def test_fields_are_typed_and_defaults_apply():
    s = Scenario(task="t", check={"kind": "holds", "value": 3})
    assert isinstance(s.check, HoldsCheck) and s.check.on == "answer" and s.check.max_other_numbers == 3
    assert Scenario(task="t", check=ContainsCheck(value="x")).check.value == "x"
    assert isinstance(Scenario(task="t", check={"kind": "regex", "pattern": "a"}).check, RegexCheck)
    assert Scenario(task="t", check={"kind": "json_field", "field": "a.0"}).check == JsonFieldCheck(field="a.0")
    with pytest.raises(UserError, match="function: String should match pattern"):
        Scenario(task="t", check={"kind": "python", "function": "no colon"})
    assert PythonCheck(function="m:f").model_dump() == {"kind": "python", "function": "m:f"}
    made = Scenario(task="t", check=HoldsCheck(max_words=3))  # as grounding makes it, the kind by default
    assert made.model_dump(exclude_defaults=True)["check"] == {"kind": "holds", "max_words": 3}


def test_a_task_set_reads_its_own_keys_as_written():
    check = ServerCheck(server="words", word="apple", world_seed=0)
    assert check["word"] == "apple" and check.get("world_seed") == 0 and check.get("nope") is None
    assert "word" in check and "server" in check and "nope" not in check
    with pytest.raises(KeyError):
        check["nope"]


@pytest.mark.parametrize("name", ["calculator", "email", "inventory"])
def test_the_shipped_task_sets_write_typed_checks(name):
    for s in tasks.get(name).generate(4, seed=1):
        assert isinstance(s.check, ServerCheck) and s.check.server == name
        assert json.loads(s.model_dump_json())["check"]["kind"] == "server"


def test_a_bad_check_in_a_file_names_the_file_line_and_scenario(tmp_path):
    f = tmp_path / "s.jsonl"
    rows = [
        {"id": "q0", "task": "t", "check": {"kind": "exact"}},
        {"id": "q1", "task": "t", "check": {"kind": "fuzzy"}},
    ]
    f.write_text("\n".join(json.dumps(r) for r in rows))
    with pytest.raises(UserError, match=rf"{f}:2: scenario q1: invalid check .*'fuzzy'.*kinds: exact, normalized"):
        load_jsonl(f, Scenario)


def test_a_number_is_read_whole_with_its_unit_and_never_out_of_a_token():
    """A decimal with a unit is its value ("-5.5h" is -5.5: read as -5, a wrong answer held and a right one
    refused); a number with a unit counts as one, and one in scientific notation as its value (Python
    writes a small float so); a code, a hash or dice notation holds none."""
    assert numbers('"time_difference": "-5.5h"') == {-5.5} and numbers("12kg, 150ms") == {12, 150}
    assert holds_answer("-5.5h", -5.5) and not holds_answer("-5.5h", -5)
    assert numbers("SKU-1234 A4 2d6 86004dd47fc 5.5xyzw") == set()
    assert numbers("[10,8.25] total: $1,234.50") == {10, 8.25, 1234.5}
    assert numbers("1.9e-05 km, -1.11111111e-06, 3E+2") == {1.9e-05, -1.11111111e-06, 300}
    assert holds_answer("The answer is -1.11111111e-06.", -1.11111111e-06) and not holds_answer("1.9e-05", 1.9)
    assert numbers("3e45a 2e5x9") == set()


def test_a_fraction_stored_in_single_precision_is_held_by_the_number_a_person_writes():
    """A database's REAL column gives 0.9 as 0.8999999761581421 (single precision read back as double): a reply of
    0.9 holds it, one of 0.91 does not, and a whole number or a double's fraction is compared as before."""
    assert holds_answer("The ratio is 0.9.", 0.8999999761581421) and holds_answer("0.89999998", 0.8999999761581421)
    assert not holds_answer("The ratio is 0.91.", 0.8999999761581421) and not holds_answer("0.9", 0.8999999)
    assert not holds_answer("3.0000001", 3) and holds_answer("1e40 stars", 1e40)


def test_a_clocks_seconds_a_moment_apart_are_two_values():
    """A server's clock in seconds (1796022807.350497) read again 1.8 s later is another value, not the one answer
    a replay gives back (a relative tolerance of 1e-9 took them for one), while float noise is still one value."""
    assert not holds_answer("1796022809.123456", 1796022807.350497)
    assert not same_value("1796022809.123456", 1796022807.350497)
    assert holds_answer(str(0.1 + 0.2), 0.3) and same_value(0.1 + 0.2, 0.3) and same_value(1e40 * 3, 3e40)
