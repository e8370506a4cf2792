"""check-grads on surrogate gradients (heldout5's `jaxsnn_superspike`, `jaxsnn_heaviside_scan`,
`spyx_axon`: a Heaviside step whose bwd gives a smooth surrogate). Such a rule is a
straight-through estimator, noted and not compared; it was recognised only when moving the
argument by 0.37 changed the step's value, and at the recorded potentials (-0.44, -0.55, 0.08) it
does not, so the three bases failed and every mutant that makes JAX raise drew the base's own code.
Now steps of growing size either way are tried, and a step past a jump counts only where the
primal's own derivative is zero as well (a relu moved past its kink is not piecewise constant, so
a wrong relu rule still fails). Real JAX on CPU, through the real CLI."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import JAX_ENV, device_has_float64, pythonpath, run_cli

PREC = "float64" if device_has_float64() else "float32"
TOL = "1e-05" if PREC == "float64" else "0.03"

OPS = '''\
import jax
import jax.numpy as jnp


@jax.custom_vjp
def spike(x):
    return 0.5 + 0.5 * jnp.sign(x)


def spike_fwd(x):
    return spike(x), x


def spike_bwd(x, g):
    return (g / (10.0 * jnp.abs(x) + 1.0) ** 2,)  # a surrogate: deliberately not the step's derivative


spike.defvjp(spike_fwd, spike_bwd)


@jax.custom_vjp
def spike_broken(x):
    return 0.5 + 0.5 * jnp.sign(x)


def spike_broken_fwd(x):
    return spike_broken(x), x


def spike_broken_bwd(x, g):
    return g / (10.0 * jnp.abs(x) + 1.0) ** 2  # WRONG: JAX wants a tuple, whatever the rule's intent


spike_broken.defvjp(spike_broken_fwd, spike_broken_bwd)


@jax.custom_vjp
def relu(x):
    return jnp.maximum(x, 0.0)


def relu_fwd(x):
    return relu(x), x


def relu_bwd(x, g):
    return (g,)  # WRONG: the gradient passes where relu is flat (x < 0)


relu.defvjp(relu_fwd, relu_bwd)


def EXAMPLE_ARGS():
    x = jnp.array([-0.44, -0.55, 0.08])
    return {"spike": (x,), "spike_broken": (x,), "relu": (jnp.array([-0.5, -0.8, -0.6]),)}
'''


@pytest.mark.jax
def test_a_surrogate_gradient_is_noted_and_a_raise_or_a_wrong_flat_rule_still_fails(tmp_path: Path) -> None:
    (tmp_path / "ops.py").write_text(OPS)
    (tmp_path / "pyproject.toml").write_text("[tool.vjplint]\n")
    proc = run_cli("check-grads", "--no-recorded", "--output-format", "concise", "--show-checks", "ops.py",
                   cwd=tmp_path, env={**JAX_ENV, "PYTHONPATH": pythonpath(tmp_path)}, timeout=600)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    lines = proc.stdout.splitlines()
    # Silent (an info note): the surrogate, though no step of 0.37 crosses the step's jump.
    assert lines[0] == (
        "ops.py:5:2: VJP501 `spike`: not compared with the true gradient: the primal's derivative for `x` is zero "
        "while its value changes with `x` (a piecewise-constant primal), so the bwd rule is a straight-through "
        "estimator"), lines
    # Fires: JAX raises for the bare cotangent, whatever the rule means to give.
    assert lines[1].startswith("ops.py:21:2: VJP501 `spike_broken`: reverse mode raises with the bwd rule"), lines
    assert "Custom VJP bwd rule must produce an output with the same container (pytree) structure" in lines[1]
    # Fires: relu is flat at these points but not piecewise constant (its slope is 1 past 0).
    assert lines[2] == (
        f"ops.py:37:2: VJP501 `relu`: bwd cotangent for `x` differs from finite differences: max rel. error 1 at "
        f"x={PREC}[3] (order 1, {PREC}; tolerance {TOL}); the primal's own autodiff agrees with finite differences "
        "and differs from the rule by 1"), lines
    assert lines[3] == "Found 3 problems.", lines
    assert "ops.py:5: spike (custom_vjp): gradient transform (not compared)\n" in proc.stdout
