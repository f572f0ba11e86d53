from collections import Counter

import pytest

from mcprl.errors import UserError
from mcprl.scenarios.coverage import difficulty_histogram, tool_coverage
from mcprl.scenarios.dedup import Deduper, similarity
from mcprl.scenarios.split import split_train_val
from mcprl.types import Scenario

pytestmark = pytest.mark.unit


def test_deduper_catches_normalised_and_near_duplicates():
    d = Deduper()
    assert d.duplicate_of("What's the weather in Paris today?") is None
    assert d.duplicate_of("what's the WEATHER in paris, today") == "What's the weather in Paris today?"
    assert d.duplicate_of("What is the weather in Paris today") == "What's the weather in Paris today?"
    assert d.duplicate_of("What is the weather in Oslo today?") is None


def test_deduper_keeps_tasks_that_differ_in_a_number():
    d = Deduper()
    assert similarity("Compute (12 + 5) * 3 using the tools.", "Compute (12 + 7) * 3 using the tools.") >= 0.8
    assert d.duplicate_of("Compute (12 + 5) * 3 using the tools.") is None
    assert d.duplicate_of("Compute (12 + 7) * 3 using the tools.") is None
    assert d.duplicate_of("Compute (12 + 7) * 3 using the tools!") is not None


def test_threshold_is_configurable():
    strict, loose = Deduper(threshold=0.95), Deduper(threshold=0.3)
    for d in (strict, loose):
        d.duplicate_of("Find the price of apples in the store")
    assert strict.duplicate_of("Find the price of oranges in the store") is None
    assert loose.duplicate_of("Find the price of oranges in the store") is not None


def tasks(n: int) -> list[Scenario]:
    return [Scenario(task=f"task number {i}") for i in range(n)]


def test_split_is_deterministic_and_independent_of_order():
    items = tasks(20)
    a = split_train_val(items, 0.25, seed=1)
    b = split_train_val(list(reversed(items)), 0.25, seed=1)
    val_a = {s.task for s in a if s.split == "val"}
    assert len(val_a) == 5
    assert val_a == {s.task for s in b if s.split == "val"}
    assert [s.task for s in a] == [s.task for s in items], "order is kept"
    assert val_a != {s.task for s in split_train_val(items, 0.25, seed=2) if s.split == "val"}
    assert all(s.split is None for s in items), "inputs are not modified"


@pytest.mark.parametrize("n, fraction, n_val", [(1, 0.2, 0), (2, 0.2, 1), (3, 0.9, 2), (10, 0.0, 0), (10, 0.01, 1)])
def test_split_sizes(n, fraction, n_val):
    assert sum(s.split == "val" for s in split_train_val(tasks(n), fraction)) == n_val


@pytest.mark.parametrize("fraction", [1.0, -0.1])
def test_bad_val_fraction_is_a_user_error(fraction):
    with pytest.raises(UserError, match="--val-fraction"):
        split_train_val(tasks(3), fraction)


def test_histogram_and_coverage():
    items = [
        Scenario(task="a", difficulty=1, tools=["add", "add"]),
        Scenario(task="b", difficulty=1, tools=["add", "divide", "unknown"]),
        Scenario(task="c", difficulty=4),
    ]
    assert difficulty_histogram(items) == {1: 2, 2: 0, 3: 0, 4: 1, 5: 0}
    assert tool_coverage(items, ["add", "multiply", "divide"]) == {"add": 2, "multiply": 0, "divide": 1}


def test_a_run_holds_out_a_repeated_task_whole_and_once():
    """Task generators repeat tasks: no task may be both trained on and held out."""
    from mcprl.scenarios.split import split_for_run

    scenarios = [Scenario(id=f"s{i}", task=f"task {i % 7}") for i in range(40)]
    for seed in range(5):
        train, val = split_for_run(scenarios, 0.25, None, seed)
        assert not {s.task for s in train} & {s.task for s in val}
        assert (
            len({s.task for s in val}) == len(val)
            and len(train) + sum(s.task == v.task for v in val for s in scenarios) == 40
        )
        assert len(val) >= 1 and len(train) >= 1
    with pytest.raises(UserError, match="distinct"):
        split_for_run([Scenario(id=f"s{i}", task="same") for i in range(5)], 0.25, None, 0)


def test_a_run_never_holds_out_the_last_task_of_a_tool():
    """Every tool some task uses keeps a training task (by the tools a task names or its reference chain calls), and
    val still gets its share from the tools with tasks to spare."""
    from mcprl.scenarios.split import split_for_run
    from mcprl.types import ReferenceCall

    scenarios = [Scenario(id=f"log{i}", task=f"log task {i}", tools=["log"]) for i in range(20)]
    scenarios += [Scenario(id="branch", task="which branch?", reference=[ReferenceCall(tool="branch")])]
    scenarios += [Scenario(id=f"show{i}", task=f"show task {i}", tools=["show", "log"]) for i in range(2)]
    held = Counter()
    for seed in range(40):
        train, val = split_for_run(scenarios, 0.25, None, seed)
        trained = {t for s in train for t in {*s.tools, *(c.tool for c in s.reference)}}
        assert trained == {"log", "branch", "show"}
        assert len(val) == 6 and not {s.task for s in train} & {s.task for s in val}
        held.update(s.id for s in val)
    assert "branch" not in held and held["show0"] + held["show1"] > 0  # one of two may go, never both
    # every task its tool's only one: one is held out all the same, as before
    alone = [Scenario(id=f"t{i}", task=f"task {i}", tools=[f"tool{i}"]) for i in range(3)]
    assert len(split_for_run(alone, 0.25, None, 0)[1]) == 1


def test_a_run_never_holds_out_the_last_task_asking_a_thing_of_a_tool():
    """mcp-server-git's one "What is the current branch?" went to val beside "What are the git branches?", the
    question people ask of the branches most never trained on (a hand-written "Which branch is checked out right
    now?" 0/3 before and after). What a tool is asked (the field of a grounded task) keeps a training task as the
    tool does; val takes its share from what is asked more than once."""
    from mcprl.scenarios.split import split_for_run
    from mcprl.types import ReferenceCall

    def asking(i: int, tool: str, field: str | None) -> Scenario:
        metadata = {"source": "grounded", "kind": "field" if field else "listing", "field": field}
        return Scenario(
            id=f"{tool}{i}", task=f"{tool} {field} {i}", reference=[ReferenceCall(tool=tool)], metadata=metadata
        )

    scenarios = [asking(i, "git_log", ["author", "date", "message"][i % 3]) for i in range(18)]
    scenarios += [asking(0, "git_branch", None), asking(1, "git_branch", "current")]
    scenarios += [asking(0, "git_status", "modified"), asking(1, "git_status", "new file")]
    for seed in range(40):
        train, val = split_for_run(scenarios, 0.25, None, seed)
        asked = {(s.reference[-1].tool, s.metadata["field"]) for s in train}
        assert asked == {(s.reference[-1].tool, s.metadata["field"]) for s in scenarios}, seed
        assert len(val) == round(22 * 0.25) and all(s.reference[-1].tool == "git_log" for s in val)
