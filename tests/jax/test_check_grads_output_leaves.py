"""check-grads on a custom_jvp whose tangent for one output is not linear (an error estimate under
`abs`, as quadax's romberg gives its `QuadratureInfo.err`, heldout4): reverse mode of a random
function of the whole output raises (JAX has no transpose for `abs`), but only for functions of
that leaf. It is left out of the loss and reported as a "may" (right as long as no caller
differentiates it), and the other outputs are compared: a rule wrong there still fails. Before,
the correct base was an error. Real JAX on CPU, through the real CLI."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import JAX_ENV, device_has_float64, pythonpath, run_cli

PREC = "float64" if device_has_float64() else "float32"

OPS = '''\
import jax
import jax.numpy as jnp


def _trapezoid(x):
    fine = jnp.sum(jnp.sin(x)) * 0.5
    coarse = jnp.sum(jnp.sin(x[::2]))
    return fine, jnp.abs(fine - coarse)  # the value and an error estimate


@jax.custom_jvp
def integral(x):
    return _trapezoid(x)


@integral.defjvp
def integral_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    value, err = _trapezoid(x)
    fine_dot = 0.5 * jnp.sum(jnp.cos(x) * t)
    err_dot = jnp.abs(fine_dot - jnp.sum(jnp.cos(x[::2]) * t[::2]))  # not linear: no transpose
    return (value, err), (fine_dot, err_dot)


@jax.custom_jvp
def integral_wrong(x):
    return _trapezoid(x)


@integral_wrong.defjvp
def integral_wrong_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    value, err = _trapezoid(x)
    fine_dot = jnp.sum(jnp.cos(x) * t)  # WRONG: the factor 0.5 is lost
    err_dot = jnp.abs(fine_dot - jnp.sum(jnp.cos(x[::2]) * t[::2]))
    return (value, err), (fine_dot, err_dot)


def EXAMPLE_ARGS():
    x = jnp.array([0.3, -1.2, 0.8, 0.1])
    return {"integral": (x,), "integral_wrong": (x,)}
'''


@pytest.mark.jax
def test_an_output_whose_tangent_cannot_be_transposed_is_a_may_and_the_others_are_compared(tmp_path: Path) -> None:
    (tmp_path / "ops.py").write_text(OPS)
    (tmp_path / "pyproject.toml").write_text("[tool.vjplint]\n")
    proc = run_cli("check-grads", "--no-recorded", "--output-format", "concise", "--show-checks", "ops.py",
                   cwd=tmp_path, env={**JAX_ENV, "PYTHONPATH": pythonpath(tmp_path)}, timeout=600)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    lines = proc.stdout.splitlines()
    # Silent as an error: only `err` cannot be differentiated in reverse mode; the value's gradient is right.
    assert lines[0] == (
        "ops.py:11:2: VJP502 `integral`: reverse mode (JAX transposes the jvp rule) raises (the jvp rule "
        "`integral_jvp`, line 16): NotImplementedError: Transpose rule (for reverse-mode differentiation) for 'abs' "
        f"not implemented at x={PREC}[4]; only for a function of `output[1]`: may be wrong there, right as long as "
        "no caller differentiates `output[1]`; the other outputs were compared")
    assert "ops.py:11: integral (custom_jvp): may be wrong\n" in proc.stdout
    assert "    checks  reverse order 1 MAY BE WRONG, forward order 1 ok, forward order 2 ok, reverse order 1 ok, " \
           "reverse order 2 ok, primal output ok, jit ok, vmap ok, jit(grad) ok, grad(jit) ok, vmap(grad) ok\n" in proc.stdout
    # Fires: the value's tangent loses a factor 0.5.
    assert lines[1].startswith(
        "ops.py:25:2: VJP502 `integral_wrong`: jvp tangent (along a random tangent) differs from finite differences: "
        f"max rel. error 0.5 at x={PREC}[4]"), lines
    assert ": 0 passed, 1 failed, 1 may be wrong, 0 not checked." in proc.stdout
