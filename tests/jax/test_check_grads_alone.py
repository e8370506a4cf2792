"""check-grads differentiates a custom_jvp with respect to one argument at a time (heldout5's
`symbolic_zeros_added/e3nn_einsum`: `defjvp(..., symbolic_zeros=True)` on a multilinear rule that
multiplies every tangent). With every argument differentiated at once the rule sees arrays only and
passed; a caller that differentiates fewer arguments hands it `SymbolicZero` objects for the
others, and JAX raises. Real JAX on CPU, through the real CLI."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import JAX_ENV, device_has_float64, pythonpath, run_cli

PREC = "float64" if device_has_float64() else "float32"

OPS = '''\
from functools import partial

import jax
import jax.numpy as jnp
from jax.custom_derivatives import SymbolicZero


@jax.custom_jvp
def bilinear(x, y):
    return jnp.sum(x * y)


@partial(bilinear.defjvp, symbolic_zeros=True)
def bilinear_jvp(primals, tangents):
    (x, y), (x_dot, y_dot) = primals, tangents
    return bilinear(x, y), bilinear(x_dot, y) + bilinear(x, y_dot)  # WRONG: a zero tangent is a SymbolicZero


@jax.custom_jvp
def bilinear_zeros(x, y):
    return jnp.sum(x * y)


@partial(bilinear_zeros.defjvp, symbolic_zeros=True)
def bilinear_zeros_jvp(primals, tangents):
    (x, y), (x_dot, y_dot) = primals, tangents
    out = 0.0
    if not isinstance(x_dot, SymbolicZero):
        out = out + jnp.sum(x_dot * y)
    if not isinstance(y_dot, SymbolicZero):
        out = out + jnp.sum(x * y_dot)
    return bilinear_zeros(x, y), out


@jax.custom_jvp
def bilinear_plain(x, y):
    return jnp.sum(x * y)


@bilinear_plain.defjvp
def bilinear_plain_jvp(primals, tangents):
    (x, y), (x_dot, y_dot) = primals, tangents
    return bilinear_plain(x, y), bilinear_plain(x_dot, y) + bilinear_plain(x, y_dot)


def EXAMPLE_ARGS():
    x, y = jnp.array([0.3, -1.2, 0.8]), jnp.array([1.1, 0.4, -0.7])
    return {"bilinear": (x, y), "bilinear_zeros": (x, y), "bilinear_plain": (x, y)}
'''


@pytest.mark.jax
def test_a_rule_that_raises_on_a_symbolic_zero_fails_when_one_argument_is_differentiated(tmp_path: Path) -> None:
    (tmp_path / "ops.py").write_text(OPS)
    (tmp_path / "pyproject.toml").write_text("[tool.vjplint]\n")
    proc = run_cli("check-grads", "--no-recorded", "--output-format", "concise", "--show-checks", "ops.py",
                   cwd=tmp_path, env={**JAX_ENV, "PYTHONPATH": pythonpath(tmp_path)}, timeout=600)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    lines = proc.stdout.splitlines()
    # Fires: `bilinear(x_dot, y)` with x_dot a SymbolicZero.
    assert lines[0].startswith(
        "ops.py:8:2: VJP502 `bilinear`: reverse mode (JAX transposes the jvp rule) raises when only `x` is "
        "differentiated (the other arguments constant, as a caller that differentiates fewer passes them; the rule "
        "gets symbolic zeros for their tangents): TypeError: "), lines
    assert lines[0].endswith(f"at x={PREC}[3], y={PREC}[3]"), lines
    assert lines[1] == "Found 1 problem.", lines
    # Silent: a rule that tests for SymbolicZero, and one without symbolic zeros (JAX gives it zero arrays).
    assert "ops.py:19: bilinear_zeros (custom_jvp): passed at given inputs\n" in proc.stdout
    assert "ops.py:35: bilinear_plain (custom_jvp): passed at given inputs\n" in proc.stdout
    assert ": 2 passed, 1 failed, 0 not checked." in proc.stdout
