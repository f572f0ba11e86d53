"""A result that is a unified diff (a git server's `git_diff`, `diff -u`) is read as the files it changes,
each with the lines it adds and removes (mcprl.scenarios.results.diff_records), and asked about as such."""

from __future__ import annotations

import difflib
import random
import re
import subprocess

import pytest

from mcprl.checks import holds_answer
from mcprl.scenarios.candidates import candidates
from mcprl.scenarios.explored import Exploration, ExploredCall
from mcprl.scenarios.results import result_records

pytestmark = pytest.mark.unit

# lines a diff could mistake for its own markup: blank ones, headers, hunks and markers inside a file
TRICKY = ["", "--- a/x", "+++ b/y", "@@ -1 +1 @@", "-- comment", "++i;", " indented", "diff --git"]


def text(rng: random.Random, n: int) -> list[str]:
    words = ["alpha", "beta", "gamma", "delta", "epsilon", "zeta"]
    return [rng.choice(TRICKY) if rng.random() < 0.2 else " ".join(rng.sample(words, 2)) for _ in range(n)]


def test_a_diff_is_read_as_the_lines_each_file_gains_and_loses():
    """Over random edits of random files (new, deleted, changed; lines that look like diff markup), each file
    of `difflib`'s unified diff comes back as one record: its path, then exactly the lines it adds and removes."""
    rng = random.Random(0)
    for _ in range(200):
        diffs, expected = [], []
        for k in range(rng.randint(1, 3)):
            old = text(rng, rng.randint(0, 12)) if rng.random() < 0.8 else []
            new = [line for line in old if rng.random() < 0.8]
            for _ in range(rng.randint(0, 4)):
                new.insert(rng.randint(0, len(new)), text(rng, 1)[0])
            if old == new:
                continue
            path = f"dir/file{k}.txt"
            a = "/dev/null" if not old else f"a/{path}"
            b = "/dev/null" if not new and rng.random() < 0.5 else f"b/{path}"
            lines = list(difflib.unified_diff(old, new, a, b, lineterm="", n=rng.randint(0, 3)))
            diffs += [f"diff --git a/{path} b/{path}", *lines]
            sm = difflib.SequenceMatcher(a=old, b=new, autojunk=False)
            changed = []
            for op, i1, i2, j1, j2 in sm.get_opcodes():
                changed += [("removed", x.strip()) for x in old[i1:i2] if op in ("replace", "delete") and x.strip()]
                changed += [("added", x.strip()) for x in new[j1:j2] if op in ("replace", "insert") and x.strip()]
            expected.append((path, sorted(changed)))
        if not expected:
            continue
        records = result_records("Changes:\n" + "\n".join(diffs), None)
        assert [(r[0][1], sorted(r[1:])) for r in records] == expected, "\n".join(diffs)
        assert all(r[0][0] == "file" for r in records)


def test_a_commit_shown_with_its_diff_is_read_by_its_labelled_lines():
    """A diff after labelled lines (a commit's author and date) is part of that one record, which is asked
    for by its author and date as before."""
    shown = "commit 3558\nAuthor: Ann Lee <ann@example.com>\nDate: 2024-03-03\n\n    Add config\n\n"
    shown += "--- /dev/null\n+++ b/config.ini\n@@ -0,0 +1,2 @@\n+[defaults]\n+city = Lisbon\n"
    (record,) = result_records(shown, None)
    assert ("Author", "Ann Lee <ann@example.com>") in record and not any(k == "file" for k, _ in record)


def test_a_person_and_their_address_is_answered_by_the_name():
    """A field that writes a person as mail and git do ("Ann Lee <ann@example.com>") is answered by the name, which a
    reply naming the person holds, as the whole field does; no task states it."""
    shown = "commit 3558\nAuthor: Ann Lee <ann@example.com>\nDate: 2024-03-03\n\n    Add config\n\n"
    shown += "--- /dev/null\n+++ b/config.ini\n@@ -0,0 +1,2 @@\n+[defaults]\n+city = Lisbon\n"
    call = ExploredCall(index=0, session=0, tool="git_show", arguments={"revision": "3558"}, text=shown)
    tasks = [t for seed in range(16) for t in candidates(Exploration(calls=[call]), {}, seed=seed)]
    people = [t for t in tasks if holds_answer(t.answer if isinstance(t.answer, str) else "", "Ann Lee")]
    assert people, [(t.task, t.answer) for t in tasks]
    for t in people:
        assert t.answer == "Ann Lee" and not holds_answer(t.task, t.answer)
        assert holds_answer(t.reference[-1].result, t.answer)
        assert holds_answer("The author is Ann Lee.", t.answer)


def test_a_repositorys_diffs_ground_tasks_about_the_files_and_lines_they_change(tmp_path):
    """`git diff`'s own output of a real repository: every task asks for a changed file or a line it
    changes, its answer is what the diff states for the file the task is about, and no task states its answer."""
    repo = tmp_path / "r"
    run = ["git", "-C", str(repo), "-c", "user.name=A", "-c", "user.email=a@b"]
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    (repo / "TODO.md").write_text("# TODO\n- add humidity\n")
    (repo / "app.py").write_text("def f():\n    return 1\n")
    subprocess.run([*run, "add", "."], check=True)
    subprocess.run([*run, "commit", "-qm", "start"], check=True)
    (repo / "TODO.md").write_text("# TODO\n- add humidity\n- support Fahrenheit\n")
    (repo / "app.py").write_text("def f():\n    return 2\n")
    diff = subprocess.run([*run, "diff"], check=True, capture_output=True, text=True).stdout
    changes = {"TODO.md": {"- support Fahrenheit"}, "app.py": {"return 1", "return 2"}}

    call = ExploredCall(index=0, session=0, tool="git_diff_unstaged", arguments={}, text="Unstaged changes:\n" + diff)
    tasks = [t for seed in range(8) for t in candidates(Exploration(calls=[call]), {}, seed=seed)]
    assert tasks
    for t in tasks:
        assert not holds_answer(t.task, t.answer), t.task
        about = [f for f in changes if f in t.task]
        if t.answer in changes:  # a file, picked out by a line it changes
            assert any(line in t.task for line in changes[t.answer]), t.task
        else:  # a line (or the one number it states), of the file the task names
            assert [any(holds_answer(line, t.answer) for line in changes[f]) for f in about] == [True], (
                t.task,
                t.answer,
            )
        assert not re.search(r"\bthe (added|removed)\b", t.task), t.task  # a change is said as one, not as a thing
