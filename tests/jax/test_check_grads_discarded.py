"""check-grads on a jvp rule that discards a tangent (`x_dot, _ = tangents`): the jvp form of a bwd
returning None, reported the same way, "may be wrong" (a warning: right only if no caller
differentiates that input) where the references say the primal depends on it; the other
arguments are still compared, and a rule wrong in them still fails (heldout3's
`mjx_cylinder_sdf`, issue #44). Real JAX on CPU, through the real CLI."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import JAX_ENV, device_has_float64, pythonpath, run_cli

PREC = "float64" if device_has_float64() else "float32"
TOL = {"float64": "1e-05", "float32": "0.03"}[PREC]  # check-grads' relative tolerance at each precision

OPS = '''\
import jax
import jax.numpy as jnp


@jax.custom_jvp
def weighted(x, w):
    return w * jnp.sum(x * x)


@weighted.defjvp
def weighted_jvp(primals, tangents):
    x, w = primals
    x_dot, _ = tangents  # discards the tangent of `w`, on which the primal depends
    return weighted(x, w), w * 2.0 * jnp.sum(x * x_dot)


@jax.custom_jvp
def weighted_wrong(x, w):
    return w * jnp.sum(x * x)


@weighted_wrong.defjvp
def weighted_wrong_jvp(primals, tangents):
    x, w = primals
    x_dot, _ = tangents
    return weighted_wrong(x, w), w * 3.0 * jnp.sum(x * x_dot)  # WRONG: a factor 3 for `x`


@jax.custom_jvp
def weighted_right(x, w):
    return w * jnp.sum(x * x)


@weighted_right.defjvp
def weighted_right_jvp(primals, tangents):
    x, w = primals
    x_dot, w_dot = tangents
    return weighted_right(x, w), w * 2.0 * jnp.sum(x * x_dot) + w_dot * jnp.sum(x * x)


def EXAMPLE_ARGS():
    x, w = jnp.array([0.3, -1.2, 0.8]), jnp.array([0.5, 2.0])
    return {"weighted": (x, w), "weighted_wrong": (x, w), "weighted_right": (x, w)}
'''


@pytest.mark.jax
def test_a_discarded_tangent_is_a_may_warning_and_the_kept_ones_are_still_compared(tmp_path: Path) -> None:
    (tmp_path / "ops.py").write_text(OPS)
    (tmp_path / "pyproject.toml").write_text("[tool.vjplint]\n")
    proc = run_cli("check-grads", "--output-format", "concise", "--show-checks", "ops.py", cwd=tmp_path,
                   env={**JAX_ENV, "PYTHONPATH": pythonpath(tmp_path)}, timeout=600)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    lines = proc.stdout.splitlines()
    # Firing, as a warning: the primal depends on `w` (both references say so), the rule gives 0.
    assert lines[0] == (
        "ops.py:5:2: VJP502 `weighted`: gradient for `w` (reverse mode, JAX's transpose of the jvp rule) may be "
        "wrong: the jvp rule discards its tangent (a zero contribution, like a bwd None: it declares `w` not "
        "differentiated), right only if no caller differentiates `w`; it differs from finite differences: max rel. "
        f"error 1 at x={PREC}[3], w={PREC}[2] (order 1, {PREC}; tolerance {TOL}); the primal's own autodiff agrees "
        "with finite differences and differs from the rule by 1; the other arguments were compared")
    assert "ops.py:5: weighted (custom_jvp): may be wrong\n" in proc.stdout
    assert "    checks  forward order 1 ok, forward order 2 ok, reverse order 1 MAY BE WRONG, primal output ok, jit " \
           "ok, vmap ok, jit(grad) ok, grad(jit) ok, vmap(grad) ok\n" in proc.stdout
    # The kept tangent wrong (a factor 3): still an error, not demoted by the discarded one.
    assert lines[1].startswith(
        "ops.py:17:2: VJP502 `weighted_wrong`: jvp tangent (along a random tangent) differs from finite differences: "
        f"max rel. error 0.333 at x={PREC}[3], w={PREC}[2]")
    # Silent: both tangents used.
    assert "ops.py:29: weighted_right (custom_jvp): passed at given inputs\n" in proc.stdout
    assert ": 1 passed, 1 failed, 1 may be wrong, 0 not checked." in proc.stdout
