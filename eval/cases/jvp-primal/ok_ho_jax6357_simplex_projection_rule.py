"""jvp-primal look-alike: a projection's custom_jvp returns the function's own value as its primal.

Report: jax-ml/jax#6357 https://github.com/jax-ml/jax/issues/6357 (a projection onto the simplex
with a custom_jvp whose tangent is written with the support mask; `jacfwd` and `jacrev` had to
agree). The rule calls the projection itself for the primal output and builds the tangent from the
support, so the primal is the value and the tangent is linear in `x_dot`.
"""
import jax
import jax.numpy as jnp
import numpy as np

EVAL = {
    "id": "jvp-primal/ok_ho_jax6357_simplex_projection_rule", "family": "jvp-primal", "expect": "ok",
    "source": "jax-ml/jax#6357", "url": "https://github.com/jax-ml/jax/issues/6357",
    "written_at": "2026-12-02", "written_at_commit": "7d338003625df627af3f64e858b0803f5255fc3c",
    "argnums": (0,), "extra": ["jvp", "jacfwd"], "heldout": True,
}


@jax.custom_jvp
def to_simplex(x):
    u = jnp.sort(x)[::-1]
    cssv = jnp.cumsum(u) - 1.0
    ind = jnp.arange(x.shape[0]) + 1
    rho = jnp.count_nonzero(u - cssv / ind > 0)
    theta = cssv[rho - 1] / rho.astype(x.dtype)
    return jnp.maximum(x - theta, 0.0)


@to_simplex.defjvp
def to_simplex_jvp(primals, tangents):
    (x,), (x_dot,) = primals, tangents
    p = to_simplex(x)
    support = (p > 0).astype(x.dtype)
    card = jnp.sum(support)
    return p, support * x_dot - (jnp.dot(support, x_dot) / card) * support


def eval_fn(x):
    return to_simplex(x) * jnp.array([1.0, 2.0, 3.0, 4.0], x.dtype)


def eval_inputs():
    return (np.array([0.6, 0.1, 0.45, -0.3], np.float32),)


def eval_reference(x):
    x = np.asarray(x, np.float64)
    u = np.sort(x)[::-1]
    cssv = np.cumsum(u) - 1.0
    rho = np.count_nonzero(u - cssv / np.arange(1, x.size + 1) > 0)
    theta = cssv[rho - 1] / rho
    return np.maximum(x - theta, 0.0) * np.array([1.0, 2.0, 3.0, 4.0])
