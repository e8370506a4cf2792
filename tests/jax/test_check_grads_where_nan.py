"""check-grads at order 2 on the where-NaN pattern (heldout6's `exojax_rotkernel`: every branch a
`jnp.where(x * x <= 1, ..., 0)` with `sqrt(1 - x * x)` in the other branch, the recorded `x`
reaching past 1). Grad of grad is NaN there through the branch not taken, for the rule and for the
primal's own autodiff alike; finite differences are 0. Before, a right rule failed (VJP502, "max
rel. error inf", an error), so every mutant's VJP502 error drew the base's own code. Now a NaN at
order 2 that the primal's own autodiff has too is a "may" warning; a rule that brings in a NaN the
primal's autodiff does not have still fails, and a rule wrong at order 1 still fails there. Real JAX
on CPU, through the real CLI."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import JAX_ENV, device_has_float64, pythonpath, run_cli

PREC = "float64" if device_has_float64() else "float32"

OPS = '''\
import jax
import jax.numpy as jnp


@jax.custom_jvp
def kernel(x):
    x2 = x * x
    return jnp.where(x2 <= 1.0, (1.0 - x2) * jnp.sqrt(1.0 - x2), 0.0)


@kernel.defjvp
def kernel_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    x2 = x * x
    d = jnp.where(x2 <= 1.0, -3.0 * x * jnp.sqrt(1.0 - x2), 0.0)
    return kernel(x), d * t


@jax.custom_jvp
def safe_kernel(x):
    x2 = x * x
    inside = x2 <= 1.0
    s = jnp.sqrt(jnp.where(inside, 1.0 - x2, 1.0))  # the double-where: finite at every order
    return jnp.where(inside, (1.0 - x2) * s, 0.0)


@safe_kernel.defjvp
def safe_kernel_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    x2 = x * x
    d = jnp.where(x2 <= 1.0, -3.0 * x * jnp.sqrt(1.0 - x2), 0.0)  # WRONG at order 2: NaN past 1
    return safe_kernel(x), d * t


@jax.custom_jvp
def wrong_kernel(x):
    x2 = x * x
    return jnp.where(x2 <= 1.0, (1.0 - x2) * jnp.sqrt(1.0 - x2), 0.0)


@wrong_kernel.defjvp
def wrong_kernel_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    x2 = x * x
    d = jnp.where(x2 <= 1.0, -2.0 * x * jnp.sqrt(1.0 - x2), 0.0)  # WRONG: -2 for -3
    return wrong_kernel(x), d * t


def EXAMPLE_ARGS():
    x = jnp.array([-1.3, -0.5, 0.2, 0.7, 1.6])
    return {"kernel": (x,), "safe_kernel": (x,), "wrong_kernel": (x,)}
'''


@pytest.mark.jax
def test_a_nan_at_order_2_the_primal_has_too_is_a_may_and_one_the_rule_brings_fails(tmp_path: Path) -> None:
    (tmp_path / "ops.py").write_text(OPS)
    (tmp_path / "pyproject.toml").write_text("[tool.vjplint]\n")
    proc = run_cli("check-grads", "--no-recorded", "--output-format", "concise", "--show-checks", "ops.py",
                   cwd=tmp_path, env={**JAX_ENV, "PYTHONPATH": pythonpath(tmp_path)}, timeout=600)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    lines = proc.stdout.splitlines()
    at = f"at x={PREC}[5] (order 2, {PREC}; tolerance "
    # Silent (a "may" only): the NaN at order 2 is the primal's own where-NaN, order 1 agrees.
    assert lines[0].startswith(
        "ops.py:5:2: VJP502 `kernel`: second-order derivative for `x` (grad of grad, through the jvp rule) may be "
        f"wrong: it is NaN or inf {at}"), lines
    assert lines[0].endswith(
        "where finite differences are finite, and the primal's own autodiff is NaN or inf there too (a `jnp.where` "
        "whose other branch is not finite, e.g. `sqrt` of a negative number, differentiates to NaN): the jvp rule "
        "keeps what differentiating the primal gives, and a caller taking second derivatives there gets NaN"), lines
    # Fires: the rule brings a NaN the primal's own autodiff (the double-where) does not have.
    assert lines[1].startswith(
        "ops.py:19:2: VJP502 `safe_kernel`: second-order derivative for `x` (grad of grad, through the jvp rule) "
        "differs from finite differences: max rel. error inf "), lines
    # Fires: wrong at order 1.
    assert lines[2].startswith("ops.py:35:2: VJP502 `wrong_kernel`: "), lines
    assert "differs from finite differences: max rel. error" in lines[2] and "order 1" in lines[2], lines
    assert lines[3] == "Found 3 problems.", lines
    assert "ops.py:5: kernel (custom_jvp): may be wrong\n" in proc.stdout, proc.stdout
