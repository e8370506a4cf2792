"""The residual-plus-None rewrite across modules, through the real CLI, on a package on disk
(fixtures/fix_cross/input/clipops): `ops.py` registers rules that live in `rules.py`.

- `clip_gradient` (`from .rules import clip_fwd, clip_bwd`) and `scaled_sin` (`R.scaled_fwd`
  after `from clipops import rules as R`) are rewritten in both files;
- `shift` is rewritten too, but only as an unsafe fix whose finding says why: `api.py` calls
  `shift_fwd` directly, and the rewrite changes what it returns (issue 37: a use in a third file
  makes a cross-module fix unsafe with the reason, as it does an in-file fix, not refused).

Small packages written here test what a third file does: one that imports and calls the rules
(unsafe, applied only with --unsafe-fixes), one that defines its own function of the same name
(not a use: the fix stays as it was).
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
UNSAFE = "(unsafe fix: clipops/api.py calls `shift_fwd`, and the rewrite changes fwd's return)"
ACROSS = ("(fix across modules with --unsafe-fixes: fwd and bwd are in {rules}, also in this run; "
          "`vjplint --fix --unsafe-fixes` rewrites both files together)")


def _package(tmp_path: Path) -> Path:
    shutil.copytree(CROSS / "input", tmp_path / "pkgroot")
    return tmp_path / "pkgroot" / "clipops"


def _shown(path: Path) -> str:
    """A path as the CLI (run from the repository root) shows it: relative under it, else absolute."""
    relative = os.path.relpath(path, ROOT)
    return str(path) if relative.startswith("..") else relative


def _texts(package: Path) -> dict:
    return {name: (package / name).read_text(encoding="utf-8") for name in FILES}


def _expected() -> dict:
    return _texts(CROSS / "expected" / "clipops")


def test_unsafe_fix_rewrites_primal_and_rules_files_and_is_idempotent(tmp_path):
    package = _package(tmp_path)
    proc = run_cli("--fix", "--unsafe-fixes", "--show-fixes", "--no-cache", str(package))
    assert proc.returncode == 0, proc.stderr  # `shift` too: --unsafe-fixes applies its unsafe fix
    assert _texts(package) == _expected()
    assert "4 × VJP101 (nondiff-array)" in proc.stdout
    assert "not rewritten across modules" not in proc.stderr
    check = run_cli("check", "--no-cache", "--output-format", "concise", str(package))
    assert check.returncode == 0 and "VJP101" not in check.stdout
    again = run_cli("--fix", "--unsafe-fixes", "--no-cache", str(package))
    assert again.returncode == 0 and "Fixed" not in again.stdout
    assert _texts(package) == _expected()


def test_plain_fix_leaves_cross_module_rewrites_alone(tmp_path):
    package = _package(tmp_path)
    before = _texts(package)
    proc = run_cli("--fix", "--no-cache", str(package))
    assert proc.returncode == 1
    assert _texts(package) == before
    ops = _shown(package / 'ops.py')
    assert ("vjplint: 3 rewrites across modules (fwd/bwd in another file) can be enabled with --unsafe-fixes: "
            f"`clip_gradient` ({ops}), `scaled_sin` ({ops}), `shift` ({ops})") in proc.stderr


def test_the_message_says_the_fix_is_available_when_the_rules_module_is_in_the_run(tmp_path):
    """Linted with its rules module, VJP101 names the file the fix also rewrites; the one whose
    fwd a third file calls (`shift`, called by api.py) says so as an in-file fix would, "(unsafe
    fix: ...)" (issue 37); the file linted alone keeps "no automatic fix"."""
    package = _package(tmp_path)
    across = ACROSS.format(rules="clipops/rules.py")
    proc = run_cli("--no-cache", "--output-format", "concise", "clipops", cwd=package.parent)
    lines = proc.stdout.splitlines()
    assert [line.split(" ", 1)[0] for line in lines if across in line] == [
        "clipops/ops.py:13:19:", "clipops/ops.py:13:34:", "clipops/ops.py:21:16:", "clipops/ops.py:29:11:"]
    assert [line.split(" ", 1)[0] for line in lines if line.endswith(f"{across} {UNSAFE}")] == [
        "clipops/ops.py:29:11:"]
    assert proc.stdout.count("(unsafe fix: ") == 1
    alone = run_cli("--no-cache", "--output-format", "concise", "clipops/ops.py", cwd=package.parent)
    assert across not in alone.stdout and "(unsafe fix: " not in alone.stdout
    assert alone.stdout.count("(no automatic fix: fwd ") == 4
    plain_fix = run_cli("--fix", "--no-cache", "--output-format", "concise", "clipops", cwd=package.parent)
    assert plain_fix.stdout.count(across) == 4 and plain_fix.stdout.count(UNSAFE) == 1


def test_diff_shows_both_files_and_writes_nothing(tmp_path):
    package = _package(tmp_path)
    before = _texts(package)
    proc = run_cli("--diff", "--unsafe-fixes", "--no-cache", str(package))
    assert proc.returncode == 1
    assert _texts(package) == before
    assert f"--- {package / 'ops.py'}" in proc.stdout or "ops.py" in proc.stdout
    assert "+def clip_bwd(res, g):" in proc.stdout and "+@jax.custom_vjp" in proc.stdout
    assert "Would fix 4 problems." in proc.stderr


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
    for line, name in ((12, "clip_gradient"), (20, "scaled_sin"), (28, "shift")):
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
    heads = [line.split(" (JAX ")[0] for line in proc.stdout.splitlines()[:3]]
    assert (proc.returncode, heads) == (0, [f"{shown}:12: clip_gradient: verified on {device_label()}",
                                            f"{shown}:20: scaled_sin: verified on {device_label()}",
                                            f"{shown}:28: shift: verified on {device_label()}"]), proc.stdout + proc.stderr
    assert proc.stdout.splitlines()[-1].endswith(": 3 verified, 0 failed, 0 unverified.")
    assert _texts(package) == before


PKG_OPS = '''from functools import partial

import jax

from .rules import clip_bwd, clip_fwd


@partial(jax.custom_vjp, nondiff_argnums=(0,))
def clip(hi: jax.Array, x):
    return x


clip.defvjp(clip_fwd, clip_bwd)
'''
PKG_RULES = '''import jax.numpy as jnp


def clip_fwd(hi, x):
    return x, None


def clip_bwd(hi, _, g):
    return (jnp.minimum(g, hi),)
'''
PKG_TEST = '''from pkg.rules import clip_bwd, clip_fwd


def test_rules():
    y, res = clip_fwd(1.0, 2.0)
    assert clip_bwd(1.0, res, 3.0) == (1.0,)
'''
NEW_OPS = PKG_OPS.replace("from functools import partial\n\n", "").replace(
    "@partial(jax.custom_vjp, nondiff_argnums=(0,))", "@jax.custom_vjp")
NEW_RULES = PKG_RULES.replace("return x, None", "return x, hi").replace(
    "def clip_bwd(hi, _, g):\n    return (jnp.minimum(g, hi),)", "def clip_bwd(hi, g):\n    return (None, jnp.minimum(g, hi))")


def _write(root: Path, files: dict) -> dict:
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text, encoding="utf-8")
    return files


def _read(root: Path, files: dict) -> dict:
    return {name: (root / name).read_text(encoding="utf-8") for name in files}


def test_a_test_module_calling_the_rules_makes_the_cross_module_fix_unsafe_with_the_reason(tmp_path):
    """Issue 37: pkg/test_ops.py imports and calls `clip_fwd`/`clip_bwd`; the cross-module rewrite
    is no longer refused: the finding says why it is unsafe, plain `--fix` leaves every file,
    `--fix --unsafe-fixes` rewrites ops.py and rules.py (the test module is the user's to update)."""
    files = _write(tmp_path, {"pkg/__init__.py": "", "pkg/ops.py": PKG_OPS, "pkg/rules.py": PKG_RULES,
                              "pkg/test_ops.py": PKG_TEST})
    check = run_cli("check", "--no-cache", "--output-format", "concise", "pkg", cwd=tmp_path)
    [line] = [line for line in check.stdout.splitlines() if "VJP101" in line]
    assert line.startswith("pkg/ops.py:9:10: VJP101 `hi` (position 0) is in nondiff_argnums")
    assert line.endswith(ACROSS.format(rules="pkg/rules.py") + " (unsafe fix: pkg/test_ops.py calls `clip_fwd` and "
                         "`clip_bwd`, and the rewrite changes fwd's return and bwd's parameters)"), line
    plain = run_cli("--fix", "--no-cache", "pkg", cwd=tmp_path)
    assert plain.returncode == 1 and _read(tmp_path, files) == files
    assert "vjplint: 1 rewrite across modules (fwd/bwd in another file) can be enabled with --unsafe-fixes: " \
           "`clip` (pkg/ops.py)" in plain.stderr
    unsafe = run_cli("--fix", "--unsafe-fixes", "--no-cache", "pkg", cwd=tmp_path)
    assert unsafe.returncode == 0, unsafe.stdout + unsafe.stderr
    assert _read(tmp_path, files) == {**files, "pkg/ops.py": NEW_OPS, "pkg/rules.py": NEW_RULES}


def test_a_module_with_its_own_function_of_the_fwd_name_is_not_a_use(tmp_path):
    """Issue 37: inf/m.py defines and calls its own `clip_fwd` (not the rules' one): the text
    search used to refuse the rewrite ("fwd `clip_fwd` is also named in inf/m.py"); it is no use,
    so the fix is offered as before, with no unsafe reason, and applied."""
    own = "def clip_fwd(a):\n    return a + 1\n\n\ndef twice(a):\n    return clip_fwd(clip_fwd(a))\n"
    files = _write(tmp_path, {"inf/__init__.py": "", "inf/ops.py": PKG_OPS, "inf/rules.py": PKG_RULES,
                              "inf/m.py": own})
    check = run_cli("check", "--no-cache", "--output-format", "concise", "inf", cwd=tmp_path)
    [line] = [line for line in check.stdout.splitlines() if "VJP101" in line]
    assert line.endswith(ACROSS.format(rules="inf/rules.py")), line
    proc = run_cli("--fix", "--unsafe-fixes", "--show-fixes", "--no-cache", "inf", cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "not rewritten across modules" not in proc.stderr
    assert _read(tmp_path, files) == {**files, "inf/ops.py": NEW_OPS, "inf/rules.py": NEW_RULES}
