"""check-grads under the transforms JAX users apply beyond jit(grad) and vmap(grad) (issue #44,
heldout3/4's misses): `grad(jit)`, where fwd runs under jit's trace and bwd under the transpose's,
so a residual kept outside the (output, residuals) pair (a module-level dict) escapes as a tracer
while jit(grad) passes; and `vmap` where the primal's own code cannot be batched (a
`pure_callback` without `vmap_method`): not the rule's fault, so a "may" warning, but every caller
that vmaps the custom derivative gets the error. Real JAX on CPU, through the real CLI."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import JAX_ENV, device_has_float64, pythonpath, run_cli

PREC = "float64" if device_has_float64() else "float32"

OPS = '''\
import jax
import jax.numpy as jnp
import numpy as np

_SAVED = {}


@jax.custom_vjp
def scaled_sin(x):
    return jnp.sin(x) * 2.0


def scaled_sin_fwd(x):
    _SAVED["res"] = jnp.cos(x)  # kept outside the (output, residuals) pair
    return jnp.sin(x) * 2.0, None


def scaled_sin_bwd(_res, g):
    return (2.0 * _SAVED["res"] * g,)


scaled_sin.defvjp(scaled_sin_fwd, scaled_sin_bwd)


@jax.custom_vjp
def scaled_cos(x):
    return jnp.cos(x) * 2.0


def scaled_cos_fwd(x):
    return jnp.cos(x) * 2.0, jnp.sin(x)


def scaled_cos_bwd(s, g):
    return (-2.0 * s * g,)


scaled_cos.defvjp(scaled_cos_fwd, scaled_cos_bwd)


def _logged(y):
    return jax.pure_callback(np.asarray, jax.ShapeDtypeStruct(y.shape, y.dtype), y)


def _logged_batched(y):
    return jax.pure_callback(np.asarray, jax.ShapeDtypeStruct(y.shape, y.dtype), y, vmap_method="sequential")


@jax.custom_jvp
def softplus(x):
    return _logged(jnp.logaddexp(x, 0.0))


@softplus.defjvp
def softplus_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    return softplus(x), jax.nn.sigmoid(x) * t


@jax.custom_jvp
def softplus_batched(x):
    return _logged_batched(jnp.logaddexp(x, 0.0))


@softplus_batched.defjvp
def softplus_batched_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    return softplus_batched(x), jax.nn.sigmoid(x) * t


def EXAMPLE_ARGS():
    x = jnp.array([0.3, -1.2, 0.8])
    return {"scaled_sin": (x,), "scaled_cos": (x,), "softplus": (x,), "softplus_batched": (x,)}
'''


@pytest.mark.jax
def test_grad_of_jit_and_an_unbatchable_primal_are_checked(tmp_path: Path) -> None:
    (tmp_path / "ops.py").write_text(OPS)
    (tmp_path / "pyproject.toml").write_text("[tool.vjplint]\n")
    proc = run_cli("check-grads", "--no-recorded", "--output-format", "concise", "--show-checks", "ops.py",
                   cwd=tmp_path, env={**JAX_ENV, "PYTHONPATH": pythonpath(tmp_path)}, timeout=600)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    lines = proc.stdout.splitlines()
    # Fires: the residual kept in `_SAVED` is a tracer of jit's trace when bwd runs under grad(jit).
    assert lines[0] == (
        "ops.py:8:2: VJP504 `scaled_sin`: raises under grad(jit) but not eagerly (the bwd rule `scaled_sin_bwd`, "
        "line 18): TypeError: No constant handler for type: <class "
        f"'jax._src.interpreters.partial_eval.DynamicJaxprTracer'> at x={PREC}[3]"), lines
    assert "ops.py:8: scaled_sin (custom_vjp): failed\n" in proc.stdout
    assert "    checks  reverse order 1 ok, reverse order 2 ok, forward skipped (a custom_vjp has no forward-mode " \
           "rule), primal output ok, jit ok, vmap ok, jit(grad) ok, grad(jit) FAILED, vmap(grad) ok\n" in proc.stdout
    # Fires, as a warning: the primal's pure_callback has no vmap_method.
    assert lines[1] == (
        "ops.py:49:2: VJP504 `softplus`: raises under vmap (line 42): NotImplementedError: vmap is only supported "
        "for the pure_callback primitive when vmap_method is one of 'sequential', 'sequential_unrolled', "
        "'expand_dims', 'broadcast_all', or 'legacy_vectorized'. Got vmap_method=None. at "
        f"x={PREC}[3] (a batch of 3); the primal without its rule raises there too (NotImplementedError), so its "
        "own code, not the rule, cannot be batched: a caller that vmaps it gets this error"), lines
    assert "ops.py:49: softplus (custom_jvp): may be wrong\n" in proc.stdout
    # Silent: residuals in the pair; a pure_callback with vmap_method.
    assert "ops.py:25: scaled_cos (custom_vjp): passed at given inputs\n" in proc.stdout
    assert "ops.py:60: softplus_batched (custom_jvp): passed at given inputs\n" in proc.stdout
    assert "    checks  forward order 1 ok, forward order 2 ok, reverse order 1 ok, reverse order 2 ok, primal " \
           "output ok, jit ok, vmap ok, jit(grad) ok, grad(jit) ok, vmap(grad) ok\n" in proc.stdout
    assert lines[2] == "Found 2 problems.", lines
    assert ": 2 passed, 1 failed, 1 may be wrong, 0 not checked." in proc.stdout
