"""The residual-plus-None rewrite across modules, through the real CLI, on a package on disk
(fixtures/fix_cross/input/clipops): `ops.py` registers rules that live in `rules.py`.

- `clip_gradient` (`from .rules import clip_fwd, clip_bwd`) and `scaled_sin` (`R.scaled_fwd`
  after `from clipops import rules as R`) are rewritten in both files;
- `shift` is refused: `api.py` calls `shift_fwd` directly, and the rewrite would hand it a tuple.
"""

from __future__ import annotations

import os
import shutil
import stat
from pathlib import Path

import pytest
from tests.conftest import FIXTURES, ROOT, device_label, run_cli

CROSS = FIXTURES / "fix_cross"
FILES = ("__init__.py", "api.py", "ops.py", "rules.py")
REFUSED = ("fwd `shift_fwd` is also named in {api}, and the rewrite changes what it returns")


def _package(tmp_path: Path) -> Path:
    shutil.copytree(CROSS / "input", tmp_path / "pkgroot")
    return tmp_path / "pkgroot" / "clipops"


def _shown(path: Path) -> str:
    """A path as the CLI (run from the repository root) shows it."""
    return os.path.relpath(path, ROOT)


def _texts(package: Path) -> dict:
    return {name: (package / name).read_text(encoding="utf-8") for name in FILES}


def _expected() -> dict:
    return _texts(CROSS / "expected" / "clipops")


def test_unsafe_fix_rewrites_primal_and_rules_files_and_is_idempotent(tmp_path):
    package = _package(tmp_path)
    proc = run_cli("--fix", "--unsafe-fixes", "--show-fixes", "--no-cache", str(package))
    assert proc.returncode == 1, proc.stderr  # `shift` is left
    assert _texts(package) == _expected()
    assert "3 × VJP101 (nondiff-array)" in proc.stdout
    assert f"{_shown(package / 'ops.py')}: shift: not rewritten across modules: " + \
        REFUSED.format(api=_shown(package / "api.py")) in proc.stderr
    # the one diagnostic left says why shift's rules were not rewritten
    check = run_cli("check", "--no-cache", "--output-format", "concise", str(package))
    assert check.stdout.count("VJP101") == 1 and "`offset` (position 0)" in check.stdout
    again = run_cli("--fix", "--unsafe-fixes", "--no-cache", str(package))
    assert again.returncode == 1 and "Fixed" not in again.stdout
    assert _texts(package) == _expected()


def test_plain_fix_leaves_cross_module_rewrites_alone(tmp_path):
    package = _package(tmp_path)
    before = _texts(package)
    proc = run_cli("--fix", "--no-cache", str(package))
    assert proc.returncode == 1
    assert _texts(package) == before
    assert ("vjplint: 2 rewrites across modules (fwd/bwd in another file) can be enabled with --unsafe-fixes: "
            f"`clip_gradient` ({_shown(package / 'ops.py')}), `scaled_sin` ({_shown(package / 'ops.py')})"
            ) in proc.stderr


def test_the_message_says_the_fix_is_available_when_the_rules_module_is_in_the_run(tmp_path):
    """Linted with its rules module, VJP101 names the file the fix also rewrites; a derivative the
    cross-module plan refuses (`shift`), and the file linted alone, keep "no automatic fix", the
    refused one saying why it is not rewritten across modules (issue 37: a third file names it)."""
    package = _package(tmp_path)
    across = ("(fix across modules with --unsafe-fixes: fwd and bwd are in {rules}, also in this run; "
              "`vjplint --fix --unsafe-fixes` rewrites both files together)").format(rules="clipops/rules.py")
    proc = run_cli("--no-cache", "--output-format", "concise", "clipops", cwd=package.parent)
    lines = proc.stdout.splitlines()
    assert [line.split(" ", 1)[0] for line in lines if across in line] == [
        "clipops/ops.py:13:19:", "clipops/ops.py:13:34:", "clipops/ops.py:21:16:"]
    assert any(line.startswith("clipops/ops.py:29:11: VJP101") and line.endswith(
        "(no automatic fix: fwd `shift_fwd` comes from `.rules`, another file; not rewritten across modules: "
        "fwd `shift_fwd` is also named in clipops/api.py, and the rewrite changes what it returns)") for line in lines)
    alone = run_cli("--no-cache", "--output-format", "concise", "clipops/ops.py", cwd=package.parent)
    assert across not in alone.stdout
    assert alone.stdout.count("(no automatic fix: fwd ") == 4
    plain_fix = run_cli("--fix", "--no-cache", "--output-format", "concise", "clipops", cwd=package.parent)
    assert plain_fix.stdout.count(across) == 3


def test_diff_shows_both_files_and_writes_nothing(tmp_path):
    package = _package(tmp_path)
    before = _texts(package)
    proc = run_cli("--diff", "--unsafe-fixes", "--no-cache", str(package))
    assert proc.returncode == 1
    assert _texts(package) == before
    assert f"--- {package / 'ops.py'}" in proc.stdout or "ops.py" in proc.stdout
    assert "+def clip_bwd(res, g):" in proc.stdout and "+@jax.custom_vjp" in proc.stdout
    assert "Would fix 3 problems." in proc.stderr


def test_a_read_only_rules_file_keeps_every_file_of_the_group_unchanged(tmp_path):
    package = _package(tmp_path)
    before = _texts(package)
    rules = package / "rules.py"
    os.chmod(rules, stat.S_IRUSR | stat.S_IRGRP)
    try:
        proc = run_cli("--fix", "--unsafe-fixes", "--no-cache", str(package))
    finally:
        os.chmod(rules, stat.S_IRUSR | stat.S_IWUSR)
    assert proc.returncode == 2
    assert "cannot write the files rewritten together" in proc.stderr and "none of them was changed" in proc.stderr
    assert f"{_shown(rules)}: the file is read-only" in proc.stderr
    assert _texts(package) == before  # ops.py was not rewritten alone either
    assert not [p for p in package.iterdir() if p.name.endswith(".vjplint-tmp")]


@pytest.mark.jax
def test_verify_proves_both_rewrites_with_the_rewritten_rules_module(jax_cpu, tmp_path):
    """--verify runs the rewritten ops.py against the rewritten rules.py (a companion module):
    with the old rules.py the rewritten primal could not work, so `verified` proves both."""
    package = _package(tmp_path)
    proc = run_cli("--fix", "--unsafe-fixes", "--verify", "--no-cache", str(package), timeout=300)
    for line, name in ((12, "clip_gradient"), (20, "scaled_sin")):
        assert (f"vjplint: verify: {_shown(package / 'ops.py')}:{line}: {name}: verified on {device_label()} "
                f"(rewritten with {_shown(package / 'rules.py')})") in proc.stderr, proc.stderr
    assert _texts(package) == _expected()


@pytest.mark.jax
def test_verify_catches_a_wrong_rewrite_of_the_rules_module(jax_cpu, tmp_path):
    from vjplint.settings.config import Config
    from vjplint.verify.api import verify_rewrites

    package = _package(tmp_path)
    expected = _expected()
    planted = expected["rules.py"].replace("return (None, None, jnp.clip(g, lo, hi))",
                                           "return (jnp.clip(g, lo, hi), None, None)")
    assert planted != expected["rules.py"]
    ops, rules = package / "ops.py", package / "rules.py"
    originals = _texts(package)
    reports = verify_rewrites(str(ops), originals["ops.py"], expected["ops.py"],
                              [{"name": "clip_gradient", "moved_positions": [0, 1]}], Config(root=str(package.parent)),
                              companions=[(str(rules), originals["rules.py"], planted)])
    assert [r.status for r in reports] == ["failed"]
    assert reports[0].reason.startswith("grad: ")
    # without the companion the rewritten primal meets the old rules and fails too
    alone = verify_rewrites(str(ops), originals["ops.py"], expected["ops.py"],
                            [{"name": "clip_gradient", "moved_positions": [0, 1]}], Config(root=str(package.parent)))
    assert [r.status for r in alone] == ["failed"]


@pytest.mark.jax
def test_verify_command_proves_what_diff_rewrites_across_modules(jax_cpu, tmp_path):
    """Issue 37: `vjplint verify --unsafe-fixes DIR` said "Nothing to verify" where `--diff
    --unsafe-fixes DIR` rewrites ops.py with rules.py; it now proves those rewrites, and writes nothing."""
    package = _package(tmp_path)
    before = _texts(package)
    proc = run_cli("verify", "--unsafe-fixes", "-q", str(package), timeout=300)
    shown = _shown(package / "ops.py")
    heads = [line.split(" (JAX ")[0] for line in proc.stdout.splitlines()[:2]]
    assert (proc.returncode, heads) == (0, [f"{shown}:12: clip_gradient: verified on {device_label()}",
                                            f"{shown}:20: scaled_sin: verified on {device_label()}"]), proc.stdout + proc.stderr
    assert proc.stdout.splitlines()[-1].endswith(": 2 verified, 0 failed, 0 unverified.")
    assert _texts(package) == before
