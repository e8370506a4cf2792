"""`--fix` over many files in worker processes gives what one process gives: the same files
written, the same report in the same order, the same counts, with a cross-module group (the
`clipops` package, whose rewrite spans `ops.py` and `rules.py`) written together as before.

Each run uses its own copy of one tree; `--jobs 1` fixes in this process, `--jobs 3` in three
workers (an explicit job count is always honoured when there are two files or more to fix).
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from tests.conftest import FIXTURES, run_cli

FIX = FIXTURES / "fix"
SMALL = FIXTURES / "fix_small"


def _tree(root: Path) -> Path:
    """A project: the cross-module package, and every residual and small-fix input as a module."""
    tree = root / "project"
    shutil.copytree(FIXTURES / "fix_cross" / "input", tree)
    shutil.copy(FIX / "pyproject.toml", tree / "pyproject.toml")
    flat = tree / "flat"
    flat.mkdir()
    for case in sorted([*FIX.iterdir(), *SMALL.iterdir()]):
        if (case / "input.py").is_file():
            shutil.copy(case / "input.py", flat / f"{case.name}.py")
    return tree


def _files(tree: Path) -> dict:
    return {str(p.relative_to(tree)): p.read_bytes() for p in sorted(tree.rglob("*.py"))}


def _run(tree: Path, jobs: int, *extra: str):
    proc = run_cli("--fix", "--unsafe-fixes", "--show-fixes", "--no-cache", "--jobs", str(jobs), *extra, ".",
                   cwd=tree, timeout=600)
    return proc.returncode, proc.stdout, proc.stderr, _files(tree)


@pytest.mark.parametrize("extra", [(), ("--output-format", "json")])
def test_parallel_fix_equals_serial_fix(tmp_path, extra):
    serial_tree, parallel_tree = _tree(tmp_path / "serial"), _tree(tmp_path / "parallel")
    before = _files(serial_tree)
    serial = _run(serial_tree, 1, *extra)
    parallel = _run(parallel_tree, 3, *extra)
    assert parallel == serial
    code, out, err, after = serial
    changed = sorted(name for name in after if after[name] != before[name])
    # the group is written together, and several single files are fixed besides
    assert {"clipops/ops.py", "clipops/rules.py"} <= set(changed), changed
    assert len([name for name in changed if name.startswith("flat/")]) >= 10, changed
    if not extra:
        assert "Applied fixes:" in out and "VJP101 (nondiff-array)" in out


def test_parallel_diff_equals_serial_diff_and_writes_nothing(tmp_path):
    serial_tree, parallel_tree = _tree(tmp_path / "serial"), _tree(tmp_path / "parallel")
    before = _files(serial_tree)
    serial = _run(serial_tree, 1, "--diff")
    parallel = _run(parallel_tree, 3, "--diff")
    assert parallel == serial
    assert serial[3] == before and serial[1].count("+++ ") >= 10


def test_fix_many_in_workers_equals_in_process_and_writes_nothing(tmp_path):
    """Workers only compute; the parent writes, file by file, after checking the bytes it read."""
    from vjplint.batch.parallel import fix_many
    from vjplint.model.run_facts import NO_FACTS
    from vjplint.settings.config import Config

    text = (FIX / "safe_canonical" / "input.py").read_text(encoding="utf-8")
    tasks = [(i, f"m{i}.py", os.fspath(tmp_path / f"m{i}.py"), len(text), False, 0, text, ()) for i in range(3)]
    alone = fix_many(tasks, [(Config(), NO_FACTS)], 1)
    together = fix_many(tasks, [(Config(), NO_FACTS)], 3)
    assert sorted(together) == sorted(alone) == [0, 1, 2]
    assert [(together[i].text, together[i].fixed_count, together[i].errors) for i in range(3)] == \
        [(alone[i].text, alone[i].fixed_count, alone[i].errors) for i in range(3)]
    assert all(r.text != text and r.fixed_count for r in alone.values())
    assert not any(p.exists() for p in tmp_path.iterdir())  # nothing written by fix_many
