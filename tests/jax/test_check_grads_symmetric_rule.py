"""check-grads on a rule written for symmetric matrices where the primal reads the whole matrix (a
QP or linear solve, qpax's OptNet `dQ = (dx x' + x dx') / 2`; heldout10's `qpax_solve_qp_primal`,
a correct base that failed, max rel. error 0.612 along a random non-symmetric tangent): when every
value the project passed is symmetric and the rule's cotangent for it is symmetric, it is checked
along symmetric directions, and a rule wrong there still fails. Real JAX on CPU, the real CLI."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import JAX_ENV, device_has_float64, pythonpath, run_cli

PREC = "float64" if device_has_float64() else "float32"

OPS = '''\
import jax
import jax.numpy as jnp


@jax.custom_vjp
def solve_sym(Q, q):
    return jnp.linalg.solve(Q, q)


def solve_sym_fwd(Q, q):
    x = jnp.linalg.solve(Q, q)
    return x, (Q, x)


def solve_sym_bwd(res, g):
    Q, x = res
    dq = jnp.linalg.solve(Q.T, g)
    dQ = -0.5 * (jnp.outer(dq, x) + jnp.outer(x, dq))  # symmetric: right along symmetric directions
    return dQ, dq


solve_sym.defvjp(solve_sym_fwd, solve_sym_bwd)


@jax.custom_vjp
def solve_wrong(Q, q):
    return jnp.linalg.solve(Q, q)


def solve_wrong_fwd(Q, q):
    x = jnp.linalg.solve(Q, q)
    return x, (Q, x)


def solve_wrong_bwd(res, g):
    Q, x = res
    dq = jnp.linalg.solve(Q.T, g)
    dQ = -(jnp.outer(dq, x) + jnp.outer(x, dq))  # WRONG: a factor 2, along symmetric directions too
    return dQ, dq


solve_wrong.defvjp(solve_wrong_fwd, solve_wrong_bwd)


def EXAMPLE_ARGS():
    Q = jnp.array([[2.0, 0.3, -0.2], [0.3, 1.5, 0.4], [-0.2, 0.4, 3.0]])
    q = jnp.array([0.5, -1.0, 0.25])
    return {"solve_sym": (Q, q), "solve_wrong": (Q, q)}
'''


@pytest.mark.jax
def test_a_symmetric_cotangent_for_symmetric_values_is_checked_along_symmetric_directions(tmp_path: Path) -> None:
    (tmp_path / "ops.py").write_text(OPS)
    (tmp_path / "pyproject.toml").write_text("[tool.vjplint]\n")
    proc = run_cli("check-grads", "--no-recorded", "--output-format", "concise", "--show-checks", "ops.py",
                   cwd=tmp_path, env={**JAX_ENV, "PYTHONPATH": pythonpath(tmp_path)}, timeout=600)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    lines = proc.stdout.splitlines()
    along = ("(`Q` along symmetric directions: every value the project passed is symmetric and the rule's cotangent "
             "for it is symmetric, written for symmetric matrices)")
    # Fires: a factor 2 on dQ, wrong along symmetric directions too.
    assert lines[0] == (
        f"ops.py:25:2: VJP501 `solve_wrong`: bwd cotangent for `Q` differs from finite differences: max rel. error "
        f"0.5 at Q={PREC}[3, 3], q={PREC}[3] {along} (order 1, {PREC}; tolerance 1e-05); the primal's own autodiff "
        "agrees with finite differences and differs from the rule by 0.5"), lines
    assert lines[1] == "Found 1 problem.", lines
    # Silent: right for the symmetric matrices the project passes (before: an error, the rule's
    # symmetric dQ against a random non-symmetric tangent).
    assert "ops.py:5: solve_sym (custom_vjp): passed at given inputs\n" in proc.stdout, proc.stdout
    assert ": 1 passed, 1 failed, 0 not checked." in proc.stdout
