"""check-grads on a custom_jvp whose output holds integers beside its value (heldout9's jaxstro:
an integrator's result with its status and step counts, whose tangents are float0 zeros). The
checker compared those float0 tangents with numbers and ended "the checker failed: TypeError:
Cannot compare structured or void to non-void arrays" for the right rule and the wrong one alike.
Only the floating-point outputs are compared now. Real JAX on CPU, through the real CLI."""

from __future__ import annotations

import pytest

from tests.conftest import JAX_ENV, device_has_float64, pythonpath, run_cli

PREC = "float64" if device_has_float64() else "float32"

OPS = '''\
import jax
import jax.numpy as jnp
import numpy as np


def _float0(x):
    return np.zeros(jnp.shape(x), dtype=jax.dtypes.float0)


@jax.custom_jvp
def integrate(a, b):
    value = jnp.sin(b) - jnp.sin(a)  # the integral of cos from a to b
    return value, jnp.asarray(0, jnp.int32), jnp.asarray(7, jnp.int32)  # value, status, steps


@integrate.defjvp
def integrate_jvp(primals, tangents):
    (a, b), (da, db) = primals, tangents
    out = integrate(a, b)
    return out, (jnp.cos(b) * db - jnp.cos(a) * da, _float0(out[1]), _float0(out[2]))


@jax.custom_jvp
def integrate_wrong(a, b):
    value = jnp.sin(b) - jnp.sin(a)
    return value, jnp.asarray(0, jnp.int32), jnp.asarray(7, jnp.int32)


@integrate_wrong.defjvp
def integrate_wrong_jvp(primals, tangents):
    (a, b), (da, db) = primals, tangents
    out = integrate_wrong(a, b)
    return out, (jnp.cos(b) * db + jnp.cos(a) * da, _float0(out[1]), _float0(out[2]))  # WRONG: the sign for `a`


def EXAMPLE_ARGS():
    a, b = jnp.array([0.1, 0.4, -0.3]), jnp.array([1.2, 0.9, 2.0])
    return {"integrate": (a, b), "integrate_wrong": (a, b)}
'''


@pytest.mark.jax
def test_integer_outputs_beside_the_value_are_left_out_of_the_forward_checks(tmp_path) -> None:
    (tmp_path / "ops.py").write_text(OPS)
    (tmp_path / "pyproject.toml").write_text("[tool.vjplint]\n")
    proc = run_cli("check-grads", "--no-recorded", "--output-format", "concise", "--show-checks", "ops.py",
                   cwd=tmp_path, env={**JAX_ENV, "PYTHONPATH": pythonpath(tmp_path)}, timeout=900)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "checker failed" not in proc.stdout, proc.stdout
    lines = proc.stdout.splitlines()
    assert lines[0].startswith(
        "ops.py:23:2: VJP502 `integrate_wrong`: jvp tangent (along a random tangent) differs from finite "
        f"differences: max rel. error "), lines
    assert lines[0].endswith(
        f"at a={PREC}[3], b={PREC}[3] (order 1, {PREC}; tolerance {'1e-05' if PREC == 'float64' else '0.03'}); the "
        "primal's own autodiff agrees with finite differences and differs from the rule by "
        + lines[0].split("max rel. error ")[1].split(" ")[0] + " (also reverse order 1)"), lines
    assert "ops.py:10: integrate (custom_jvp): passed at given inputs\n" in proc.stdout
    assert "checks  forward order 1 ok, forward order 2 ok, reverse order 1 ok" in proc.stdout
    assert ": 1 passed, 1 failed, 0 not checked." in proc.stdout
