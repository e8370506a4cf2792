"""check-grads on a bwd that returns its cotangent in a narrower dtype than the project passes the
argument in (mixed precision: bfloat16 for a float32 input; heldout4's `bwd_ct_bf16` on maxtext and
scico passed, run at float32 tolerances): JAX keeps the rule's dtype, so every gradient silently
loses precision. Compared with the project's own dtype, not the float64 the checks widen to: a bwd
that returns float32 for a float32 input stays silent. Real JAX on CPU, through the real CLI."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import JAX_ENV, device_has_float64, pythonpath, run_cli

PREC = "float64" if device_has_float64() else "float32"

OPS = '''\
import jax
import jax.numpy as jnp


@jax.custom_vjp
def scaled_sin(x):
    return 2.0 * jnp.sin(x)


def scaled_sin_fwd(x):
    return 2.0 * jnp.sin(x), x


def scaled_sin_bwd(x, g):
    return (jnp.asarray(2.0 * jnp.cos(x) * g, jnp.bfloat16),)  # mixed precision: the cotangent in bfloat16


scaled_sin.defvjp(scaled_sin_fwd, scaled_sin_bwd)


@jax.custom_vjp
def scaled_cos(x):
    return 2.0 * jnp.cos(x)


def scaled_cos_fwd(x):
    return 2.0 * jnp.cos(x), x


def scaled_cos_bwd(x, g):
    return (jnp.asarray(-2.0 * jnp.sin(x) * g, jnp.float32),)  # float32 as the project passes


scaled_cos.defvjp(scaled_cos_fwd, scaled_cos_bwd)


def EXAMPLE_ARGS():
    x = jnp.array([0.3, -1.2, 0.8], jnp.float32)
    return {"scaled_sin": (x,), "scaled_cos": (x,)}
'''


@pytest.mark.jax
def test_a_cotangent_narrower_than_the_projects_dtype_fails(tmp_path: Path) -> None:
    (tmp_path / "ops.py").write_text(OPS)
    (tmp_path / "pyproject.toml").write_text("[tool.vjplint]\n")
    proc = run_cli("check-grads", "--no-recorded", "--output-format", "concise", "--show-checks", "ops.py",
                   cwd=tmp_path, env={**JAX_ENV, "PYTHONPATH": pythonpath(tmp_path)}, timeout=600)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0] == (
        "ops.py:5:2: VJP501 `scaled_sin`: bwd cotangent for `x` comes back as bfloat16 where the project passes `x` "
        "as float32: JAX keeps the rule's dtype, so the gradient silently loses precision (the primal's own autodiff "
        f"does not narrow it), at x={PREC}[3]"), lines
    assert lines[1] == "Found 1 problem.", lines
    assert "ops.py:21: scaled_cos (custom_vjp): passed at given inputs\n" in proc.stdout
    assert ": 1 passed, 1 failed, 0 not checked." in proc.stdout
