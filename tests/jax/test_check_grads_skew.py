"""check-grads on a rule written for skew-symmetric matrices (heldout9's neuralpfaffian: the log of
a Pfaffian, `d log|Pf A| = tr(A^-1 dA) / 2`, right only for a skew-symmetric `dA`). A random
tangent made the right rule fail (the primal reads the matrix's lower triangle only); when every
value the project passed is skew-symmetric, the derivative is checked along skew-symmetric
directions, and says so. A rule off by a factor still fails. Real JAX on CPU, the real CLI."""

from __future__ import annotations

import pytest

from tests.conftest import JAX_ENV, device_has_float64, pythonpath, run_cli

PREC = "float64" if device_has_float64() else "float32"

OPS = '''\
import jax
import jax.numpy as jnp


def _pf4(A):
    return A[1, 0] * A[3, 2] - A[2, 0] * A[3, 1] + A[3, 0] * A[2, 1]  # the lower triangle only


@jax.custom_jvp
def log_pfaffian(A):
    return jnp.log(jnp.abs(_pf4(A)))


@log_pfaffian.defjvp
def log_pfaffian_jvp(primals, tangents):
    (A,), (dA,) = primals, tangents
    return log_pfaffian(A), jnp.trace(jnp.linalg.solve(A, dA)) / 2  # right for a skew-symmetric dA


@jax.custom_jvp
def log_pfaffian_wrong(A):
    return jnp.log(jnp.abs(_pf4(A)))


@log_pfaffian_wrong.defjvp
def log_pfaffian_wrong_jvp(primals, tangents):
    (A,), (dA,) = primals, tangents
    return log_pfaffian_wrong(A), jnp.trace(jnp.linalg.solve(A, dA))  # WRONG: the factor 1/2


def EXAMPLE_ARGS():
    B = jnp.array([[0.3, 1.2, -0.5, 0.8], [0.1, -0.7, 0.9, 0.4], [1.1, 0.2, 0.6, -0.3], [0.5, -0.9, 0.2, 0.7]])
    A = B - B.T
    return {"log_pfaffian": (A,), "log_pfaffian_wrong": (A,)}
'''

AT = (f"at A={PREC}[4, 4] (`A` along skew-symmetric directions: every value the project passed is skew-symmetric, "
      "`A.T == -A`)")


@pytest.mark.jax
def test_a_rule_for_skew_symmetric_matrices_is_checked_along_skew_symmetric_directions(tmp_path) -> None:
    (tmp_path / "ops.py").write_text(OPS)
    (tmp_path / "pyproject.toml").write_text("[tool.vjplint]\n")
    proc = run_cli("check-grads", "--no-recorded", "--output-format", "concise", "--show-checks", "ops.py",
                   cwd=tmp_path, env={**JAX_ENV, "PYTHONPATH": pythonpath(tmp_path)}, timeout=900)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0] == (
        "ops.py:20:2: VJP502 `log_pfaffian_wrong`: jvp tangent (along a random tangent) differs from finite "
        f"differences: max rel. error 0.5 {AT} (order 1, {PREC}; tolerance {'1e-05' if PREC == 'float64' else '0.03'}); "
        "the primal's own autodiff agrees with finite differences and differs from the rule by 0.5 (also reverse "
        "order 1)"), lines
    assert "ops.py:9: log_pfaffian (custom_jvp): passed at given inputs\n" in proc.stdout
    assert ": 1 passed, 1 failed, 0 not checked." in proc.stdout
