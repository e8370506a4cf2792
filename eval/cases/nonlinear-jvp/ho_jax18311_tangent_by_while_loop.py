"""nonlinear-jvp hazard: a custom_jvp rule computes its tangent with `lax.while_loop`.

Report: jax-ml/jax#18311 https://github.com/jax-ml/jax/issues/18311 (a quadrature routine with a
custom_jvp whose tangent reuses the adaptive `while_loop` integrator; `jacfwd` worked, reverse
mode raised NotImplementedError). The tangent is linear in `dx` mathematically, but JAX must
transpose the rule's tangent computation for `grad`, and a while_loop has no transpose.
"""
import jax
import jax.numpy as jnp
import numpy as np

EVAL = {
    "id": "nonlinear-jvp/ho_jax18311_tangent_by_while_loop", "family": "nonlinear-jvp", "expect": "hazard",
    "source": "jax-ml/jax#18311", "url": "https://github.com/jax-ml/jax/issues/18311",
    "written_at": "2026-12-02", "written_at_commit": "7d338003625df627af3f64e858b0803f5255fc3c",
    "argnums": (0,), "extra": ["jacfwd"], "heldout": True,
}


def series(term, x):
    """Sum term(x, k) for k = 0, 1, ... until the term is negligible."""
    def cond(state):
        k, _, last = state
        return (jnp.abs(last) > 1e-7) & (k < 60)

    def body(state):
        k, acc, _ = state
        t = term(x, k)
        return k + 1, acc + t, t

    return jax.lax.while_loop(cond, body, (0, jnp.zeros_like(x), jnp.ones_like(x)))[1]


def _exp_term(x, k):
    return x ** k / jnp.exp(jax.lax.lgamma(k + 1.0))


@jax.custom_jvp  # eval: span
def exp_series(x):  # eval: span
    return series(_exp_term, x)


@exp_series.defjvp
def exp_series_jvp(primals, tangents):
    (x,), (dx,) = primals, tangents
    return exp_series(x), series(lambda v, k: _exp_term(v, k) * dx, x)  # eval: span


def eval_fn(x):
    return exp_series(x)


def eval_inputs():
    return (np.float32(0.8),)


def eval_reference(x):
    return np.exp(np.float64(x))
