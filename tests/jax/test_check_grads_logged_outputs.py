"""check-grads on a rule that ignores the cotangents of outputs kept for logging (heldout6's
`axlearn_stable_xent`: the loss and its two parts, a bwd that keeps `g = g[0]` and returns a zero
for the Python-number `z_loss_scale`). Before, the base failed (max rel. error 0.956) though it is
right for what its callers differentiate. Now an output leaf whose cotangent the rule ignores
(its gradient for a function of that leaf alone is exactly zero where the primal's own is not) is
a "may", the other outputs compared; a zero for a Python number the project passes beside arrays
is noted, like a `None`. A rule wrong for the output it keeps still fails. Real JAX on CPU, through
the real CLI."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import JAX_ENV, device_has_float64, pythonpath, run_cli

PREC = "float64" if device_has_float64() else "float32"
TOL = "1e-05" if PREC == "float64" else "0.03"

OPS = '''\
import jax
import jax.numpy as jnp


def _parts(x, scale):
    main = jnp.sum(x ** 2, axis=-1)
    extra = jnp.sum(jnp.sin(x), axis=-1)
    return main + scale * extra, main, extra


@jax.custom_vjp
def logged(x, scale):
    return _parts(x, scale)


def logged_fwd(x, scale):
    return _parts(x, scale), (x, scale)


def logged_bwd(res, g):
    x, scale = res
    g = g[0]  # the other two outputs are for logging
    return (g[:, None] * (2 * x + scale * jnp.cos(x)), jnp.array(0.0))


logged.defvjp(logged_fwd, logged_bwd)


@jax.custom_vjp
def logged_wrong(x, scale):
    return _parts(x, scale)


def logged_wrong_fwd(x, scale):
    return _parts(x, scale), (x, scale)


def logged_wrong_bwd(res, g):
    x, scale = res
    g = g[0]
    return (g[:, None] * (2 * x + scale * jnp.sin(x)), jnp.array(0.0))  # WRONG: sin for cos


logged_wrong.defvjp(logged_wrong_fwd, logged_wrong_bwd)


def loss(x):
    return logged(x, 0.05)[0].sum() + logged_wrong(x, 0.05)[0].sum()


def EXAMPLE_ARGS():
    x = jnp.array([[0.3, -1.2, 0.8], [0.5, 0.1, -0.4]])
    return {"logged": (x, 0.05), "logged_wrong": (x, 0.05)}
'''


@pytest.mark.jax
def test_outputs_kept_for_logging_are_a_may_and_the_kept_output_is_compared(tmp_path: Path) -> None:
    (tmp_path / "ops.py").write_text(OPS)
    (tmp_path / "pyproject.toml").write_text("[tool.vjplint]\n")
    proc = run_cli("check-grads", "--no-recorded", "--output-format", "concise", "--show-checks", "ops.py",
                   cwd=tmp_path, env={**JAX_ENV, "PYTHONPATH": pythonpath(tmp_path)}, timeout=600)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    lines = proc.stdout.splitlines()
    at = f"at x={PREC}[2, 3], scale=0.05"
    # Silent (a "may" only): the logged outputs' cotangents ignored, the loss's gradient right.
    assert lines[0] == (
        "ops.py:11:2: VJP501 `logged`: bwd cotangents may be wrong for a function of `output[1]`, `output[2]`: the "
        "bwd rule ignores their cotangent (its gradient is zero where the primal's own is not), right as long as no "
        f"caller differentiates `output[1]`, `output[2]`; the other outputs were compared, {at} (also reverse order "
        "1)"), lines
    # Fires: wrong for the output it keeps.
    assert lines[1].startswith(
        "ops.py:29:2: VJP501 `logged_wrong`: bwd cotangent for `x` differs from finite differences: max rel. "
        f"error "), lines
    assert lines[2] == "Found 2 problems.", lines
    assert "ops.py:11: logged (custom_vjp): may be wrong\n" in proc.stdout
    assert "reverse order 1 not compared" in proc.stdout  # the zero for `scale`: noted
