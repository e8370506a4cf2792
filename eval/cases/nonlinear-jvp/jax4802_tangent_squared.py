"""nonlinear-jvp hazard: a Newton square-root custom_jvp whose tangent multiplies by the tangent twice.

Report: jax-ml/jax#4802 https://github.com/jax-ml/jax/issues/4802 ("Cryptic error for custom_jvp",
a Newton sqrt via lax.scan with `x0` and `n_iter` in nondiff_argnums; the reporter asked whether
"the JVP rule's output tangents must be linear" applied). The tangent `(0.5 * x_dot / s) * x_dot`
is quadratic in x_dot: reverse mode cannot transpose it and jvp is silently wrong.
"""
from functools import partial

import jax
import jax.numpy as jnp
import numpy as np

EVAL = {
    "id": "nonlinear-jvp/jax4802_tangent_squared", "family": "nonlinear-jvp", "expect": "hazard",
    "source": "jax-ml/jax#4802", "url": "https://github.com/jax-ml/jax/issues/4802",
    "written_at": "2026-12-01", "written_at_commit": "66aa237f5176449a9711e6278e47349128c8731b",
    "argnums": (0,), "extra": ["jvp"],
}


def _newton_sqrt(x, x0, n_iter):
    res, _ = jax.lax.scan(lambda v, _: (0.5 * (v + x / v), None), x0 * jnp.ones_like(x), None, length=n_iter)
    return res


@partial(jax.custom_jvp, nondiff_argnums=(1, 2))
def newton_sqrt(x, x0=1.0, n_iter=12):
    return _newton_sqrt(x, x0, n_iter)


@newton_sqrt.defjvp
def newton_sqrt_jvp(x0, n_iter, primals, tangents):
    (x,), (x_dot,) = primals, tangents
    s = _newton_sqrt(x, x0, n_iter)
    dual = 0.5 * x_dot / s
    return s, dual * x_dot  # eval: span


def eval_fn(x):
    return newton_sqrt(x)


def eval_inputs():
    return (np.array([2.0, 9.0], np.float32),)


def eval_reference(x):
    return np.sqrt(np.asarray(x, np.float64))
