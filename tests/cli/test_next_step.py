"""Messages that say the next step (issue 47): hidden unsafe fixes in every summary, `verify` and
`--fix` when only unsafe fixes exist, `verify --python`, a package the verifier cannot import."""

from __future__ import annotations

import shutil
import sys

import pytest
from tests.cli.test_ruff_flags import SAFE, UNSAFE
from tests.conftest import FIXTURES, device_label, run_cli

NOTHING = "Nothing to verify: no fix rewrites anything here.\n"


def test_a_run_whose_fixes_are_all_unsafe_counts_them_as_hidden(tmp_path):
    (tmp_path / "b.py").write_text(UNSAFE)
    for extra in ((), ("--output-format", "concise"), ("--fix",), ("--statistics",)):
        proc = run_cli("--no-cache", *extra, "b.py", cwd=tmp_path)
        assert proc.returncode == 1
        assert proc.stdout.endswith("Found 1 problem. (1 hidden fix can be enabled with --unsafe-fixes.)\n"), extra
    assert (tmp_path / "b.py").read_text() == UNSAFE


def test_rewrites_across_modules_count_as_hidden_fixes(tmp_path):
    shutil.copytree(FIXTURES / "fix_cross" / "input" / "clipops", tmp_path / "clipops")
    proc = run_cli("--no-cache", "--output-format", "concise", "clipops", cwd=tmp_path)
    assert proc.stdout.endswith("Found 4 problems. (4 hidden fixes can be enabled with --unsafe-fixes.)\n")
    proc = run_cli("--no-cache", "--fix", "clipops", cwd=tmp_path)
    assert proc.stdout.endswith("Found 4 problems. (4 hidden fixes can be enabled with --unsafe-fixes.)\n")
    proc = run_cli("--no-cache", "--diff", "clipops", cwd=tmp_path)
    assert (proc.returncode, proc.stdout) == (0, "")
    assert proc.stderr.endswith("\nNo fixes available (4 additional fixes available with --unsafe-fixes).\n")
    alone = run_cli("--no-cache", "--output-format", "concise", "clipops/ops.py", cwd=tmp_path)
    assert alone.stdout.endswith("Found 4 problems.\n")  # linted alone, the rules' module is not there to rewrite


def test_verify_says_when_only_unsafe_fixes_rewrite(tmp_path):
    (tmp_path / "b.py").write_text(UNSAFE)
    (tmp_path / "c.py").write_text("x = 1\n")
    proc = run_cli("verify", "b.py", "c.py", cwd=tmp_path)
    assert (proc.returncode, proc.stderr) == (0, "")
    assert proc.stdout == ("Nothing to verify: no safe fix rewrites anything here, but unsafe fixes rewrite b.py; "
                           "run `vjplint verify --unsafe-fixes` to verify them.\n")
    proc = run_cli("verify", "c.py", cwd=tmp_path)
    assert (proc.returncode, proc.stdout) == (0, NOTHING)


def test_verify_python_must_name_an_interpreter(tmp_path):
    (tmp_path / "a.py").write_text(SAFE)
    proc = run_cli("verify", "--python", "no/such/python", "a.py", cwd=tmp_path)
    assert (proc.returncode, proc.stdout) == (2, "")
    assert proc.stderr == ("vjplint: error: --python no/such/python: no such interpreter (give the path of a "
                           "Python executable, e.g. .venv/bin/python)\n")
    help_text = " ".join(run_cli("verify", "--help").stdout.split())
    assert "--python PATH the interpreter that imports and runs the code" in help_text


@pytest.mark.jax
def test_verify_python_runs_the_harness_in_that_interpreter(tmp_path):
    """`--python` names the interpreter (here one without JAX: the report says which one)."""
    (tmp_path / "a.py").write_text(SAFE)
    bare = tmp_path / "bare-python"
    bare.write_text(f"#!/bin/sh\nexec {sys.executable} -S \"$@\"\n")  # -S: no site-packages, so no JAX
    bare.chmod(0o755)
    proc = run_cli("verify", "--python", str(bare), "a.py", cwd=tmp_path)
    assert proc.returncode == 2, proc.stdout
    assert proc.stderr.startswith("vjplint: error: JAX cannot be imported by ")


@pytest.mark.jax
def test_verify_on_a_module_whose_package_is_not_installed_says_what_to_do(tmp_path):
    (tmp_path / "a.py").write_text('import importlib.metadata\n__version__ = importlib.metadata.version('
                                   '"vjplint-test-not-installed")\n' + SAFE)
    proc = run_cli("verify", "a.py", cwd=tmp_path)
    assert proc.returncode == 1, proc.stderr
    head = proc.stdout.splitlines()[0]
    assert head.startswith(f"a.py:8: clip: unverified on {device_label()} (JAX ")
    assert head.endswith(": the module cannot be imported at line 2: PackageNotFoundError: No package metadata was "
                         "found for vjplint-test-not-installed; install the package into that interpreter "
                         "(`pip install -e .` in its project), or run with `--python PATH` naming an "
                         "interpreter that has it (or set `python` in [tool.vjplint.verify])"), head


@pytest.mark.jax
def test_check_grads_on_a_module_whose_package_is_not_installed_says_what_to_do(tmp_path):
    """The same next step as verify's: check-grads imports the module the same way, with the same `--python`."""
    (tmp_path / "a.py").write_text('import importlib.metadata\n__version__ = importlib.metadata.version('
                                   '"vjplint-test-not-installed")\n' + SAFE)
    proc = run_cli("check-grads", "--output-format", "concise", "a.py", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr  # VJP509 is information: nothing was found wrong
    assert proc.stdout.splitlines()[0] == (
        "a.py:8:2: VJP509 `clip` not checked: the module cannot be imported at line 2: PackageNotFoundError: No "
        "package metadata was found for vjplint-test-not-installed; install the package into that interpreter "
        "(`pip install -e .` in its project), or run with `--python PATH` naming an interpreter that has it (or "
        "set `python` in [tool.vjplint.verify])"), proc.stdout


def test_unfixable_holds_for_rewrites_across_modules_too(tmp_path):
    shutil.copytree(FIXTURES / "fix_cross" / "input" / "clipops", tmp_path / "clipops")
    before = {p.name: p.read_text() for p in (tmp_path / "clipops").glob("*.py")}
    proc = run_cli("--no-cache", "--fix", "--unsafe-fixes", "--unfixable", "VJP101", "clipops", cwd=tmp_path)
    assert proc.returncode == 1 and proc.stdout.endswith("Found 4 problems.\n"), proc.stdout
    assert {p.name: p.read_text() for p in (tmp_path / "clipops").glob("*.py")} == before
    proc = run_cli("--no-cache", "--output-format", "concise", "--unfixable", "VJP1", "clipops", cwd=tmp_path)
    assert proc.stdout.endswith("Found 4 problems.\n") and "fix across modules" not in proc.stdout
