"""nonlinear-jvp look-alike: a custom_jvp tangent computed by `fori_loop` with a fixed trip count.

Report: jax-ml/jax#18311 https://github.com/jax-ml/jax/issues/18311 (a custom_jvp tangent built
with a while_loop could not be transposed for reverse mode). With static bounds, `fori_loop` is a
`scan`, which JAX can transpose, so the same series written with a fixed number of terms works in
both modes.
"""
import jax
import jax.numpy as jnp
import numpy as np

EVAL = {
    "id": "nonlinear-jvp/ok_ho_jax18311_tangent_by_fori_loop", "family": "nonlinear-jvp", "expect": "ok",
    "source": "jax-ml/jax#18311", "url": "https://github.com/jax-ml/jax/issues/18311",
    "written_at": "2026-12-02", "written_at_commit": "7d338003625df627af3f64e858b0803f5255fc3c",
    "argnums": (0,), "extra": ["jacfwd", "grad_jit"], "heldout": True,
}
TERMS = 24


def series(term, x):
    return jax.lax.fori_loop(0, TERMS, lambda k, acc: acc + term(x, k), jnp.zeros_like(x))


def _exp_term(x, k):
    return x ** k / jnp.exp(jax.lax.lgamma(k + 1.0))


@jax.custom_jvp
def exp_series(x):
    return series(_exp_term, x)


@exp_series.defjvp
def exp_series_jvp(primals, tangents):
    (x,), (dx,) = primals, tangents
    return exp_series(x), series(lambda v, k: _exp_term(v, k) * dx, x)


def eval_fn(x):
    return exp_series(x)


def eval_inputs():
    return (np.float32(0.8),)


def eval_reference(x):
    return np.exp(np.float64(x))
