"""closure look-alike: a custom_vjp defined inside a jitted function closes over its static integer arguments (a term count and an axis); the array is an explicit argument.

Source: jax-ml/jax#3587 https://github.com/jax-ml/jax/pull/3587 ("odeint: don't hoist
non-differentiable consts": dynamics closing over integer-valued constants broke once closures were
converted; integers and Python values are not differentiated and may be closed over). Here the
closed-over values are `static_argnums` of the jit, so they are Python ints, never tracers.
"""
from functools import partial

import jax
import jax.numpy as jnp
import numpy as np

EVAL = {
    "id": "closure/ok_jax3587_inner_vjp_closes_static_ints", "family": "closure", "expect": "ok",
    "source": "jax-ml/jax#3587", "url": "https://github.com/jax-ml/jax/pull/3587",
    "written_at": "2026-12-02", "written_at_commit": "9e042dab056b2e5f1652c5b10417b37c94b25964",
    "argnums": (0,), "static": (1, 2), "extra": ["grad_jit"],
}


@partial(jax.jit, static_argnums=(1, 2))
def truncated_log1p(x, n_terms, axis):
    @jax.custom_vjp
    def series(v):  # eval: span
        total = jnp.zeros_like(v)
        for k in range(1, n_terms + 1):
            total = total + (-1.0) ** (k + 1) * v ** k / k
        return jnp.sum(total, axis=axis)

    def series_fwd(v):
        return series(v), v

    def series_bwd(v, g):
        deriv = jnp.zeros_like(v)
        for k in range(1, n_terms + 1):
            deriv = deriv + (-1.0) ** (k + 1) * v ** (k - 1)
        return (deriv * jnp.expand_dims(g, axis),)

    series.defvjp(series_fwd, series_bwd)
    return series(x)


def eval_fn(x, n_terms, axis):
    return truncated_log1p(x, n_terms, axis)


def eval_inputs():
    return (np.array([[0.1, 0.2, -0.3], [0.05, -0.1, 0.25]], np.float32), 4, 1)


def eval_reference(x, n_terms, axis):
    v = np.asarray(x, np.float64)
    total = sum((-1.0) ** (k + 1) * v ** k / k for k in range(1, n_terms + 1))
    return np.sum(total, axis=axis)
