"""Task sets found through the `mcprl.tasks` entry points: a package of the user's own (a real
distribution on sys.path, as pip would install it) registers a generator and a checker, and the
verify judge dispatches a scenario's check to it; broken or missing registrations are one-line
UserErrors saying what to do."""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path

import pytest

from mcprl import tasks
from mcprl.errors import UserError
from mcprl.judges.verify import VerifyJudge, build_checks
from mcprl.types import Trajectory, TrajectoryGroup

pytestmark = pytest.mark.unit

WORDS_TASKS = """
from mcprl.types import Scenario

SERVER = "python -m words_server --seed {seed}"
DEMONSTRATION = [{"role": "user", "content": "Say apple."}, {"role": "assistant", "content": "apple"}]
WORDS = ["apple", "pear", "plum", "fig"]


def generate(n, seed=0, difficulties=(1,)):
    return [Scenario(id=f"words-{seed}-{i}", task=f"Say {WORDS[(seed + i) % 4]}.", difficulty=1,
                     check={"kind": "server", "server": "TASK_SET_NAME", "word": WORDS[(seed + i) % 4]}) for i in range(n)]


def check(scenario, trajectory):
    return float(trajectory.final_answer().strip() == scenario.check["word"])
"""  # noqa: E501 (the module as installed)


def install(site: Path, dist: str, entry_points: dict[str, str], modules: dict[str, str]) -> None:
    """Write an installed distribution into `site`: its dist-info (METADATA, entry_points.txt) and modules."""
    info = site / f"{dist.replace('-', '_')}-0.1.dist-info"  # the project name escaped, as in a wheel
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist}\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text("[mcprl.tasks]\n" + "".join(f"{k} = {v}\n" for k, v in entry_points.items()))
    for module, source in modules.items():
        path = site / (module.replace(".", "/") + ".py")
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(source))


@pytest.fixture
def site(tmp_path, monkeypatch, request):
    """A directory on sys.path that distributions are installed into; the names a test uses carry
    the test's own suffix, since imported modules and loaded task sets outlive the test."""
    root = tmp_path / "site"
    root.mkdir()
    monkeypatch.syspath_prepend(str(root))
    yield root
    for name in [m for m in sys.modules if m.startswith("user_")]:
        del sys.modules[name]
    tasks.get.cache_clear()


def answering(text: str) -> Trajectory:
    return Trajectory(messages=[{"role": "user", "content": "task"}, {"role": "assistant", "content": text}])


@pytest.mark.anyio
async def test_a_users_package_registers_a_task_set_and_the_verify_judge_dispatches_to_its_checker(site):
    install(
        site,
        "user-words",
        {"words": "user_words.tasks"},
        {"user_words.__init__": "", "user_words.tasks": WORDS_TASKS.replace("TASK_SET_NAME", "words")},
    )

    assert {"words", "calculator", "email", "inventory"} <= set(tasks.names())
    words = tasks.get("words")
    assert Path(sys.modules["user_words.tasks"].__file__).is_relative_to(site)
    assert words.name == "words" and words.demonstration[1]["content"] == "apple"
    assert words.command(seed=3) == "python -m words_server --seed 3"
    scenarios = words.generate(2, seed=1)
    build_checks(scenarios, "words")  # every check resolves before a run starts

    group = TrajectoryGroup(scenario=scenarios[0], trajectories=[answering("pear"), answering("plum")])
    await VerifyJudge().score_group(group)
    assert group.skipped is None and [t.reward for t in group.trajectories] == [1.0, 0.0]


def test_a_shipped_task_set_names_the_server_serving_its_world():
    assert tasks.get("inventory").command(seed=4) == "python -m mcprl.servers.inventory --seed 4"


def test_the_shipped_task_sets_are_found_without_installed_metadata(monkeypatch):
    """A source tree on PYTHONPATH (an offline GPU machine, a worker handed the checkout) has no entry points."""
    monkeypatch.setattr(tasks, "entry_points", lambda group: [])
    tasks.get.cache_clear()
    try:
        assert tasks.names() == ("calculator", "email", "inventory")
        assert tasks.get("calculator").generate(1)[0].check["server"] == "calculator"
    finally:
        tasks.get.cache_clear()


def test_an_unknown_task_set_lists_the_registered_ones_and_how_to_register_one():
    with pytest.raises(UserError) as e:
        tasks.get("nope")
    assert str(e.value) == (
        f"no task set named 'nope'; registered: {', '.join(tasks.names())} "
        "(a package registers one under the entry-point group 'mcprl.tasks')"
    )


@pytest.mark.parametrize(
    "entry_point, modules, message",
    [
        (
            "user_broken.tasks",
            {"user_broken.tasks": "raise RuntimeError('needs WORDS_HOME\\nsecond line')"},
            r"cannot be imported \(RuntimeError: needs WORDS_HOME\); fix the module or the entry point$",
        ),
        ("user_absent.tasks", {}, r"cannot be imported \(ModuleNotFoundError: No module named 'user_absent'\)"),
        (
            "user_half.tasks",
            {"user_half.tasks": "def generate(n, seed=0, difficulties=(1,)):\n    return []\n"},
            r"has no check\(\); define it in user_half.tasks$",
        ),
        ("user_empty.tasks", {"user_empty.tasks": "CHECK = 1\n"}, r"has no generate\(\) and no check\(\)"),
    ],
)
def test_a_broken_registration_is_a_one_line_error_naming_the_entry_point(site, entry_point, modules, message):
    install(site, "user-broken", {"broken": entry_point}, modules)
    with pytest.raises(UserError, match=message) as e:
        tasks.get("broken")
    assert str(e.value).startswith(f"task set 'broken' (entry point broken = {entry_point} in 'mcprl.tasks')")
    assert "\n" not in str(e.value)


def test_a_name_registered_by_two_packages_is_an_error_not_a_coin_toss(site, monkeypatch):
    for dist in ("user-one", "user-two"):
        module = dist.replace("-", "_") + ".tasks"
        install(site / dist, dist, {"twice": module}, {module: WORDS_TASKS.replace("TASK_SET_NAME", "twice")})
        monkeypatch.syspath_prepend(str(site / dist))
    with pytest.raises(
        UserError, match=r"task set 'twice' is registered more than once \(user_\w+.tasks, user_\w+.tasks\)"
    ):
        tasks.get("twice")


def test_a_task_set_without_a_server_says_so_when_asked_for_one(site):
    source = WORDS_TASKS.replace('SERVER = "python -m words_server --seed {seed}"\n', "").replace(
        "TASK_SET_NAME", "serverless"
    )
    install(site, "user-serverless", {"serverless": "user_serverless"}, {"user_serverless": source})
    serverless = tasks.get("serverless")
    assert serverless.generate(1)[0].check["server"] == "serverless"
    with pytest.raises(UserError, match="task set 'serverless' names no MCP server; set SERVER"):
        serverless.command()
