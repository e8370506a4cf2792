"""Project-local wrappers are seen by every surface, not only `vjplint check`: `check-grads`
checks, `verify` verifies and the flake8 plugin lints a definition spelled through a wrapper of
another module exactly as one spelled with `jax.custom_vjp` (real CLIs, real JAX on CPU)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tests.conftest import JAX_ENV, ROOT, run_cli

FILES = {
    "wraplib/__init__.py": "",
    "wraplib/shims.py": '''\
        import jax


        def differentiable(fun, nondiff_argnums=()):
            """A project shim: hands nondiff_argnums on to JAX."""
            return jax.custom_vjp(fun, nondiff_argnums=nondiff_argnums)
        ''',
    # No name of JAX's creators here: only the index says that `differentiable` makes one.
    "wraplib/ops.py": '''\
        import jax.numpy as jnp

        from wraplib.shims import differentiable


        def _square_norm(x):
            return jnp.sum(x ** 2)


        square_norm = differentiable(_square_norm)


        def square_norm_fwd(x):
            return square_norm(x), x


        def square_norm_bwd(x, g):
            return (g * x,)  # WRONG: the cotangent of sum(x**2) is 2 * x * g


        square_norm.defvjp(square_norm_fwd, square_norm_bwd)


        def _scale(w, x):
            return w * x


        scale = differentiable(_scale, nondiff_argnums=(0,))


        def scale_fwd(w, x):
            return w * x, None


        def scale_bwd(w, _, g):
            return (w * g,)


        scale.defvjp(scale_fwd, scale_bwd)
        y = scale(jnp.ones(3), jnp.ones(3))
        ''',
}
CPU = JAX_ENV  # the CPU unless JAX_PLATFORMS names a lent accelerator


def write_tree(root: Path) -> Path:
    for name, text in FILES.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))
    return root


def test_check_grads_checks_definitions_made_through_a_wrapper(tmp_path: Path) -> None:
    write_tree(tmp_path)
    report = tmp_path / "report.json"
    proc = run_cli("check-grads", "--output-format", "json", "--report", str(report), ".", cwd=tmp_path,
                   env=CPU, timeout=600)
    assert proc.returncode == 1, proc.stderr
    found = [(d["filename"], d["code"], d["location"]["row"], d["location"]["column"]) for d in json.loads(proc.stdout)]
    # square_norm's rule is wrong; scale's rule is right, but its `w`, an array in nondiff_argnums,
    # raises once a caller traces it (the hazard test_verify_verifies_... confirms): a "may" warning
    assert found == [("wraplib/ops.py", "VJP501", 10, 1), ("wraplib/ops.py", "VJP504", 28, 1)]
    square, scale = json.loads(proc.stdout)
    assert "`square_norm`: bwd cotangent for `x` differs from finite differences: max rel. error 0.5" in square["message"]
    assert scale["message"].startswith("`scale`: may raise when a caller traces `w` (an array in nondiff_argnums)")
    assert "0 passed, 1 failed, 1 may be wrong, 0 not checked" in proc.stderr


def test_verify_verifies_the_fix_of_a_definition_made_through_a_wrapper(tmp_path: Path) -> None:
    write_tree(tmp_path)
    proc = run_cli("verify", "--unsafe-fixes", "--output-format", "json", ".", cwd=tmp_path, env=CPU, timeout=600)
    assert proc.returncode == 0, proc.stderr
    [report] = json.loads(proc.stdout)
    assert (report["filename"], report["function"], report["status"], report["moved"]) == \
        ("wraplib/ops.py", "scale", "verified", ["w"])
    assert report["hazard"]["status"] == "confirmed"


@pytest.mark.cli
def test_flake8_lints_definitions_made_through_a_wrapper(tmp_path: Path) -> None:
    write_tree(tmp_path)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.run([sys.executable, "-m", "flake8", "--select", "VJP", "."], cwd=tmp_path,
                          capture_output=True, text=True, env=env, timeout=120)
    assert proc.stderr == ""
    vjplint = run_cli("check", "--output-format", "concise", "--no-cache", ".", cwd=tmp_path)
    expected = [line.replace(" [*]", "") for line in vjplint.stdout.splitlines() if ": VJP" in line]
    assert [line.removeprefix("./") for line in proc.stdout.splitlines()] == expected
    assert len(expected) == 1 and expected[0].startswith("wraplib/ops.py:24:12: VJP101 `w` (position 0) is in "
                                                         "nondiff_argnums but receives an array at line 40")
    assert expected[0].endswith("(custom_vjp `scale` through the wrapper `wraplib.shims.differentiable`, which "
                                "calls `jax.custom_vjp` at wraplib/shims.py:6)")
