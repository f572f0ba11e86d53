"""Imports run one way. The module import graph of our packages, read from the source with `ast`
(imports inside functions included, since they run too, only later), must have no cycle, no
import of `mcprl.servers` from outside it, and no import of a module in a higher layer:

    foundations   leaf mechanisms: types, errors, paths, memory, weights, ...
    stages        the steps of the pipeline: tools, serving, scenarios, rollout, judges, train, ...
    plug-ins      servers/: MCP servers and their task sets, found through entry points
    applications  what puts the stages together for a user: CLIs, AutoRL, the training run, ...
                  and the package face `mcprl`, which re-exports names from every layer

A module may import its own layer and the layers below it, except where APART keeps two apart.
The repository's judges/, scenarios/, servers/ and autorl/ folders are mcprl.judges, ... (relative
symlinks in mcprl/), and are imported by those names only."""

from __future__ import annotations

import ast
import graphlib
import os
import subprocess
import sys
import textwrap
import tomllib
from pathlib import Path
from typing import NamedTuple

import pytest

pytestmark = pytest.mark.unit

REPO = Path(__file__).resolve().parents[1]
# Folder -> the package it is (mcprl/<folder> is a symlink to it, and installs as it).
PACKAGES = {
    "mcprl": "mcprl",
    "autorl": "mcprl.autorl",
    "judges": "mcprl.judges",
    "scenarios": "mcprl.scenarios",
    "servers": "mcprl.servers",
}
FOUNDATIONS, STAGES, PLUGINS, APPLICATIONS = range(4)
LAYER_NAMES = ("foundations", "stages", "plug-ins", "applications")

# Module prefix -> layer: a prefix covers the module of that name and everything under it, and
# the most specific prefix wins. There is no entry for all of mcprl, so that a new mcprl module
# has to be given a layer here (an unassigned module fails the test).
LAYERS = {
    "mcprl.types": FOUNDATIONS,
    "mcprl.errors": FOUNDATIONS,
    "mcprl.paths": FOUNDATIONS,
    "mcprl.version": FOUNDATIONS,
    # Scenario.check's models and value matching: grounding writes answers, the judges score them, alike
    "mcprl.checks": FOUNDATIONS,
    "mcprl.loading": FOUNDATIONS,  # package exports on first use; a user's module:attribute (an agent, a loss)
    "mcprl.model.memory": FOUNDATIONS,
    "mcprl.model.chat_format": FOUNDATIONS,
    "mcprl.model.attention": FOUNDATIONS,
    "mcprl.model.weights": FOUNDATIONS,
    "mcprl.tools": STAGES,
    "mcprl.serving": STAGES,
    "mcprl.llm": STAGES,  # any LLM endpoint, our own in-process one (mcprl.serving) included
    "mcprl.scenarios": STAGES,
    "mcprl.rollout": STAGES,
    "mcprl.judges": STAGES,
    "mcprl.train": STAGES,
    "mcprl.backends": STAGES,
    "mcprl.model": STAGES,  # Model and TrainableModel (mcprl.model.trainable); the rest of it is foundations
    "mcprl.tasks": STAGES,
    "mcprl.servers": PLUGINS,
    "mcprl.cli": APPLICATIONS,
    "mcprl.autorl": APPLICATIONS,
    "mcprl.run": APPLICATIONS,  # the training run, its settings, evaluation, report, demonstration
    "mcprl.usage": APPLICATIONS,  # the per-tool usage report (mcprl usage)
    "mcprl.cluster": APPLICATIONS,  # puts the stages on Ray workers; the stages never import Ray
}
# Modules placed by their exact name only. The package face `mcprl` resolves its public names on
# first access (importlib), so loading it loads nothing else; but those names come from every
# layer (LocalBackend, gather_trajectory_groups, ...), so no module of ours imports a name from it:
# each imports the module that defines the name (the version: mcprl.version).
EXACT = {"mcprl": APPLICATIONS}
# Modules the layers would let import each other, kept apart: the rollout and the MCP client are
# clients of any OpenAI-compatible endpoint (ours, vLLM, a hosted one) and import nothing of our
# endpoint's; what both sides need (mcprl.types.message_key) sits in a lower layer. Where tasks come from
# (mcprl.scenarios) imports nothing of how rollouts are judged: the checks' models and value matching
# (mcprl.checks) sit below both.
APART = {("mcprl.tools", "mcprl.serving"), ("mcprl.rollout", "mcprl.serving"), ("mcprl.scenarios", "mcprl.judges")}


class Import(NamedTuple):
    source: str  # the importing module
    where: str  # path:line of the import statement
    target: str  # the imported module (the nearest one of ours that exists)


def modules(root: Path) -> dict[str, Path]:
    found = {}
    for folder, package in PACKAGES.items():
        for path in sorted((root / folder).rglob("*.py")):
            parts = path.relative_to(root / folder).with_suffix("").parts
            found[".".join([package, *(parts[:-1] if parts[-1] == "__init__" else parts)])] = path
    return found


def _statements(node: ast.AST):
    """Every node under `node`, except the bodies of `if TYPE_CHECKING:` blocks. Those imports never
    run (annotations stay strings under `from __future__ import annotations`), so they can neither
    close a cycle nor load another layer; `mcprl/__init__.py` uses them to name its lazy exports
    for type checkers."""
    for child in ast.iter_child_nodes(node):
        test = child.test if isinstance(child, ast.If) else None
        for c in child.orelse if getattr(test, "id", getattr(test, "attr", None)) == "TYPE_CHECKING" else [child]:
            yield c
            yield from _statements(c)


def imports(root: Path) -> list[Import]:
    known = modules(root)

    def nearest(name: str) -> str | None:  # `mcprl.servers.registry` that no longer exists is still `mcprl.servers`
        while name and name not in known:
            name = name.rpartition(".")[0]
        return name or None

    found = []
    for module, path in known.items():
        package = module if path.name == "__init__.py" else module.rpartition(".")[0]
        for node in _statements(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = ".".join(package.split(".")[: len(package.split(".")) - node.level + 1]) if node.level else ""
                base = ".".join(part for part in (base, node.module) if part)
                # `from a import b` imports the module a.b when there is one, else a name from a
                names = [f"{base}.{alias.name}" if f"{base}.{alias.name}" in known else base for alias in node.names]
            else:
                continue
            where = f"{path.relative_to(root)}:{node.lineno}"
            for name in names:
                target = nearest(name) if name.split(".")[0] == "mcprl" else None
                if target and target != module:
                    found.append(Import(module, where, target))
    return found


def _under(module: str, prefix: str) -> bool:
    return module == prefix or module.startswith(prefix + ".")


def layer(module: str) -> int | None:
    if module in EXACT:
        return EXACT[module]
    parts = module.split(".")
    for n in range(len(parts), 0, -1):
        if ".".join(parts[:n]) in LAYERS:
            return LAYERS[".".join(parts[:n])]
    return None


def _reachable(graph: dict[str, dict[str, None]], start: str) -> set[str]:
    seen: set[str] = set()
    todo = [start]
    while todo:
        for target in graph.get(todo.pop(), ()):
            if target not in seen:
                seen.add(target)
                todo.append(target)
    return seen


def by_folder_name(root: Path) -> list[str]:
    """Imports anywhere in the repository (tests, bench and examples too; not in .gitignore's build
    outputs) of a folder by its own name, `from judges import ...`: that runs from the repository's
    root only, never installed."""
    out = []
    for path in sorted(root.rglob("*.py")):
        if any(
            part.startswith(".") or part in ("__pycache__", "build", "dist", "runs")
            for part in path.relative_to(root).parts
        ):
            continue
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            names = (
                [alias.name for alias in node.names]
                if isinstance(node, ast.Import)
                else [node.module or ""]
                if isinstance(node, ast.ImportFrom) and not node.level
                else []
            )
            for name in names:
                folder = name.split(".")[0]
                if folder != "mcprl" and folder in PACKAGES:
                    out.append(
                        f"{path.relative_to(root)}:{node.lineno}: imports {name}, which runs from the repository's "
                        f"root only; import {PACKAGES[folder]}{name[len(folder) :]}"
                    )
    return out


def problems(root: Path) -> list[str]:
    """What breaks the rules, one line each, naming the import (path:line) that breaks it."""
    found = imports(root)
    out = [
        f"{path.relative_to(root)}: {module} is in no layer; add it (or its package) to LAYERS in "
        "tests/test_import_graph.py"
        for module, path in modules(root).items()
        if layer(module) is None
    ]
    out += by_folder_name(root)
    for imp in found:
        source_layer, target_layer = layer(imp.source), layer(imp.target)
        apart = next(
            (pair for pair in sorted(APART) if _under(imp.source, pair[0]) and _under(imp.target, pair[1])), None
        )
        if _under(imp.target, "mcprl.servers") and not _under(imp.source, "mcprl.servers"):
            out.append(
                f"{imp.where}: {imp.source} imports {imp.target}: only servers/ may import mcprl.servers "
                "(plug-ins are found through entry points, e.g. mcprl.tasks)"
            )
        elif apart:
            out.append(
                f"{imp.where}: {imp.source} imports {imp.target}: {apart[0]} and {apart[1]} are kept apart "
                "(APART in tests/test_import_graph.py); move what both need to a lower layer"
            )
        elif source_layer is not None and target_layer is not None and target_layer > source_layer:
            out.append(
                f"{imp.where}: {imp.source} ({LAYER_NAMES[source_layer]}) imports {imp.target} "
                f"({LAYER_NAMES[target_layer]}), a higher layer; import downward only"
            )
    graph: dict[str, dict[str, None]] = {}  # ordered, so that the same cycle is found every time
    for imp in found:
        graph.setdefault(imp.source, {})[imp.target] = None
    while True:  # one cycle per group of modules that all reach each other
        try:
            graphlib.TopologicalSorter(graph).prepare()
            break
        except graphlib.CycleError as e:
            cycle = e.args[1][::-1]  # graphlib lists a cycle against the import direction
            first = cycle.index(min(cycle))
            cycle = cycle[first:-1] + cycle[: first + 1]
            hops = [
                next(imp.where for imp in found if (imp.source, imp.target) == pair) for pair in zip(cycle, cycle[1:])
            ]
            out.append(
                f"import cycle {' -> '.join(cycle)}: " + ", ".join(f"{w} imports {b}" for w, b in zip(hops, cycle[1:]))
            )
            group = {m for m in _reachable(graph, cycle[0]) if cycle[0] in _reachable(graph, m)}
            if len(group) > len(cycle) - 1:
                out[-1] += f"; the cycles through it join {len(group)} modules: {', '.join(sorted(group))}"
            for module in group:
                del graph[module]
    return out


def test_imports_run_one_way():
    found = problems(REPO)
    assert not found, "\n".join(found)


def test_the_wheel_installs_every_package_under_its_name():
    """pyproject.toml lists the packages a wheel installs: every folder, by the name imported here
    (mcprl/templates too). The repository's judges/, scenarios/, servers/ and autorl/ are in mcprl/
    as relative symlinks, so setuptools copies them from there and a checkout imports them by the
    same names, with no package-dir and no path set at import time."""
    setuptools = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["setuptools"]
    assert "package-dir" not in setuptools
    for folder in PACKAGES:
        if folder != "mcprl":
            assert (REPO / "mcprl" / folder).is_symlink() and os.readlink(REPO / "mcprl" / folder) == f"../{folder}"
    folders = [
        ".".join([package, *d.relative_to(REPO / folder).parts])
        for folder, package in PACKAGES.items()
        for d in [REPO / folder, *(REPO / folder).rglob("*")]
        if d.is_dir() and not d.is_symlink() and d.name != "__pycache__"
    ]
    assert sorted(setuptools["packages"]) == sorted(folders)


def test_only_our_packages_import_under_mcprl(tmp_path):
    """From a checkout (PYTHONPATH=the repository, run from elsewhere), the four folders import as
    mcprl.*, and the repository's other folders (tests, bench, docs) do not."""
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    code = "import mcprl.scenarios, mcprl.judges, mcprl.servers.calculator, mcprl.autorl, mcprl.tasks"
    subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=env, check=True)
    for name in ("tests", "bench", "docs"):
        run = subprocess.run(
            [sys.executable, "-c", f"import mcprl.{name}"], cwd=tmp_path, env=env, capture_output=True, text=True
        )
        assert run.returncode != 0 and f"No module named 'mcprl.{name}'" in run.stderr


def test_the_check_reports_every_kind_of_break(tmp_path):
    """The checks above on a small tree that breaks every rule once, and keeps to them otherwise."""
    files = {
        "mcprl/__init__.py": (
            "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from mcprl.run.runner import run\n"
        ),
        "mcprl/types.py": "import os\n",
        "mcprl/errors.py": "def f():\n    from mcprl.run.runner import run\n",  # upward, lazily
        "mcprl/run/runner.py": "from . import config\nfrom mcprl import types, tasks\n",
        "mcprl/run/config.py": "from .runner import run\n",  # closes a cycle
        "mcprl/tasks.py": "import mcprl.types\n",
        "mcprl/brand_new.py": "",
        "mcprl/version.py": "",
        # the face
        "mcprl/tools/transport.py": "from mcprl import __version__\nfrom mcprl.version import __version__\n",
        "mcprl/serving/prompts.py": "from mcprl.types import Message\n",
        "mcprl/rollout/recording.py": "from mcprl.serving.prompts import key\n",  # kept apart
        "judges/__init__.py": "from mcprl.servers.calculator import tasks\nfrom . import base\n",
        "judges/base.py": "",
        "servers/__init__.py": "",
        "servers/calculator/__init__.py": "from mcprl.tasks import get\nfrom mcprl.servers import calculator\n",
        "autorl/__init__.py": "",
        "scenarios/__init__.py": "",
        "tests/test_it.py": "import mcprl.judges\nfrom scenarios import split\n",  # by the folder's name
    }
    for name, source in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(textwrap.dedent(source))
    assert problems(tmp_path) == [
        "mcprl/brand_new.py: mcprl.brand_new is in no layer; add it (or its package) to LAYERS in "
        "tests/test_import_graph.py",
        "tests/test_it.py:2: imports scenarios, which runs from the repository's root only; import mcprl.scenarios",
        "mcprl/errors.py:2: mcprl.errors (foundations) imports mcprl.run.runner (applications), a higher layer; import "
        "downward only",
        "mcprl/rollout/recording.py:1: mcprl.rollout.recording imports mcprl.serving.prompts: mcprl.rollout and "
        "mcprl.serving are kept apart "
        "(APART in tests/test_import_graph.py); move what both need to a lower layer",
        "mcprl/tools/transport.py:1: mcprl.tools.transport (stages) imports mcprl (applications), a higher layer; "
        "import downward only",
        "judges/__init__.py:1: mcprl.judges imports mcprl.servers.calculator: only servers/ may import mcprl.servers "
        "(plug-ins are found through entry points, e.g. mcprl.tasks)",
        "import cycle mcprl.run.config -> mcprl.run.runner -> mcprl.run.config: "
        "mcprl/run/config.py:1 imports mcprl.run.runner, mcprl/run/runner.py:1 imports mcprl.run.config",
    ]
