"""Fixes of findings in a rule registered in one module and defined in another (issue 45, spell6
item 2: vjplint.fixes.elsewhere): the finding is reported on the registration in ops.py, and
`--fix` makes its fix in rules.py, where the rule is written; ops.py is left as it is, a second
run changes nothing, `--diff` shows rules.py's diff, an unsafe fix waits for --unsafe-fixes, a
module linted alone offers nothing, and the fixed package runs on JAX (eager, jit, vmap, grad)
with the gradient of the rule's own formula. The Language Server offers the same fix as a quick
fix editing rules.py (tests/server/test_server_project.py)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import JAX_ENV, pythonpath, run_cli


RULES = '''\
import jax.numpy as jnp


def scale_fwd(x):
    return jnp.sin(x), jnp.cos(x)


def scale_bwd(res, g):
    return g * res


def keep_fwd(x):
    return x * x, x


def keep_bwd(x, g):
    return (2.0 * x * g,)
'''

OPS = '''\
import jax
import jax.numpy as jnp

from rules import keep_bwd, keep_fwd, scale_bwd, scale_fwd


@jax.custom_vjp
def scale(x):
    return jnp.sin(x)


scale.defvjp(scale_fwd, scale_bwd)


@jax.custom_vjp
def keep(x):
    return x * x


keep.defvjp(keep_fwd, keep_bwd)
'''

FIXED_RULES = RULES.replace("    return g * res\n", "    return (g * res,)\n")

MESSAGE = ("bwd `scale_bwd` returns `g * res` (an array), not a tuple: JAX needs a tuple or list with one cotangent "
           "(or None) per differentiable argument of `scale` (x), and differentiating `scale` raises `TypeError: "
           "Custom VJP bwd rule must produce an output with the same container (pytree) structure as the args "
           "tuple of the primal function ...`; return `(g * res,)` (in `scale_bwd` at pkg/rules.py:9)")


def _write(root: Path, rules: str = RULES, ops: str = OPS) -> Path:
    pkg = root / "pkg"
    pkg.mkdir()
    (pkg / "rules.py").write_text(rules, encoding="utf-8")
    (pkg / "ops.py").write_text(ops, encoding="utf-8")
    return pkg


def test_the_finding_carries_no_in_file_fix_and_check_says_so(tmp_path: Path) -> None:
    _write(tmp_path)
    proc = run_cli("check", "--no-cache", "--output-format", "json", "pkg", cwd=tmp_path)
    assert proc.returncode == 1, proc.stderr
    found = json.loads(proc.stdout)
    assert [(d["filename"], d["location"]["row"], d["location"]["column"], d["code"], d["message"], d["fix"])
            for d in found] == [("pkg/ops.py", 12, 25, "VJP307", MESSAGE, None)]


def test_fix_writes_the_rules_module_and_a_rerun_is_idempotent(tmp_path: Path) -> None:
    pkg = _write(tmp_path)
    proc = run_cli("--fix", "--no-cache", "--show-fixes", "pkg", cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert (pkg / "rules.py").read_text(encoding="utf-8") == FIXED_RULES
    assert (pkg / "ops.py").read_text(encoding="utf-8") == OPS
    assert "1 × VJP307 (bwd-return-not-tuple)" in proc.stdout
    assert "Fixed 1 problem." in proc.stdout
    again = run_cli("--fix", "--no-cache", "pkg", cwd=tmp_path)
    assert again.returncode == 0, again.stdout + again.stderr
    assert "All checks passed!" in again.stdout
    assert (pkg / "rules.py").read_text(encoding="utf-8") == FIXED_RULES
    assert (pkg / "ops.py").read_text(encoding="utf-8") == OPS
    assert run_cli("check", "--no-cache", "pkg", cwd=tmp_path).returncode == 0


def test_diff_shows_the_rules_module_and_writes_nothing(tmp_path: Path) -> None:
    pkg = _write(tmp_path)
    proc = run_cli("check", "--diff", "--no-cache", "pkg", cwd=tmp_path)
    assert proc.returncode == 1, proc.stderr
    assert proc.stdout == ("--- pkg/rules.py\n+++ pkg/rules.py\n@@ -6,7 +6,7 @@\n \n \n def scale_bwd(res, g):\n"
                           "-    return g * res\n+    return (g * res,)\n \n \n def keep_fwd(x):\n")
    assert "Would fix 1 problem." in proc.stderr
    assert (pkg / "rules.py").read_text(encoding="utf-8") == RULES


def test_the_registering_module_alone_offers_no_fix_and_changes_nothing(tmp_path: Path) -> None:
    pkg = _write(tmp_path)
    proc = run_cli("--fix", "--no-cache", "pkg/ops.py", cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr  # alone, the rule is not read: nothing found
    assert (pkg / "rules.py").read_text(encoding="utf-8") == RULES


def test_a_fix_the_run_refuses_leaves_both_files(tmp_path: Path) -> None:
    """`--unfixable VJP307`: the finding stays, neither file changes."""
    pkg = _write(tmp_path)
    proc = run_cli("--fix", "--no-cache", "--unfixable", "VJP307", "pkg", cwd=tmp_path)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "VJP307" in proc.stdout
    assert (pkg / "rules.py").read_text(encoding="utf-8") == RULES


def test_a_read_only_rules_module_is_reported_and_left(tmp_path: Path) -> None:
    pkg = _write(tmp_path)
    os.chmod(pkg / "rules.py", 0o444)
    try:
        proc = run_cli("--fix", "--no-cache", "pkg", cwd=tmp_path)
    finally:
        os.chmod(pkg / "rules.py", 0o644)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "cannot write the files holding rules registered elsewhere (pkg/rules.py); none of them was changed" \
        in proc.stderr
    assert (pkg / "rules.py").read_text(encoding="utf-8") == RULES


PROBE = '''
import jax, jax.numpy as jnp, numpy as np
import ops
x = jnp.array([0.3, 1.2, -0.7])
checks = {
    "eager": jax.grad(lambda v: ops.scale(v).sum())(x),
    "jit": jax.jit(jax.grad(lambda v: ops.scale(v).sum()))(x),
    "vmap": jax.vmap(jax.grad(ops.scale))(x),
    "grad_jit": jax.grad(lambda v: jax.jit(ops.scale)(v).sum())(x),
}
for name, got in checks.items():
    np.testing.assert_allclose(got, jnp.cos(x), rtol=1e-6)
    print(name, "ok")
'''


@pytest.mark.jax
def test_the_fixed_package_runs_on_jax_and_the_original_raises(tmp_path: Path) -> None:
    pkg = _write(tmp_path)
    env = {**os.environ, "PYTHONPATH": pythonpath(pkg), **JAX_ENV}
    before = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, timeout=300, env=env,
                            cwd=pkg)
    assert before.returncode != 0 and "Custom VJP bwd rule must produce an output with the same container" \
        in before.stderr, before.stderr
    assert run_cli("--fix", "--no-cache", "pkg", cwd=tmp_path).returncode == 0
    after = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, timeout=300, env=env,
                           cwd=pkg)
    assert after.returncode == 0, after.stderr
    assert after.stdout.split() == ["eager", "ok", "jit", "ok", "vmap", "ok", "grad_jit", "ok"]


def test_verify_leaves_the_fixes_of_another_files_rules_unmade_and_says_so(tmp_path: Path) -> None:
    """`--verify` proves rewrites on JAX file by file; a fix made in the rules' module for a
    finding of another file is not one it proves, so it is not made, and stderr says so."""
    pkg = _write(tmp_path)
    proc = run_cli("--fix", "--verify", "--no-cache", "pkg", cwd=tmp_path)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert ("vjplint: verify: 1 fix of rules defined in another file left unmade (--verify does not prove them; "
            "run --fix without --verify to make them)") in proc.stderr
    assert (pkg / "rules.py").read_text(encoding="utf-8") == RULES
