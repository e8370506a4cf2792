"""static-in-diff look-alike: a custom_jvp over a jitted function takes integer orders positionally.

Report: jax-ml/jax#22513 https://github.com/jax-ml/jax/issues/22513 (the k-th derivative of x**n,
with n and k as ordinary arguments of a custom_jvp wrapped around jax.jit; the rule calls the
function with k + 1; the thread was about speed, not correctness). Integer arguments in
differentiable slots get float0 tangents and are traced as int32 by the inner jit: the values and
derivatives are right.
"""
import jax
import jax.numpy as jnp
import numpy as np

EVAL = {
    "id": "static-in-diff/ok_h2_jax22513_order_ints_in_diff_slots", "family": "static-in-diff",
    "expect": "ok", "source": "jax-ml/jax#22513", "url": "https://github.com/jax-ml/jax/issues/22513",
    "written_at": "2026-12-02", "written_at_commit": "57286d6bb1b3765b2fe45d8e346dffc0e0612443",
    "argnums": (0,), "static": (1, 2), "extra": ["jvp", "jacfwd"], "heldout": True,
}


@jax.custom_jvp  # eval: span
@jax.jit
def power_derivative(x, n, k):  # eval: span
    coef = jax.lax.fori_loop(0, k, lambda i, c: c * (n - i), 1)
    return coef * x ** (n - k)


@power_derivative.defjvp
def _power_derivative_jvp(primals, tangents):
    x, n, k = primals
    dx, _, _ = tangents
    return power_derivative(x, n, k), power_derivative(x, n, k + 1) * dx


def eval_fn(x, n, k):
    return power_derivative(x, n, k)  # eval: span


def eval_inputs():
    return (np.array([0.5, 1.2, 2.0], np.float32), 5, 1)


def eval_reference(x, n, k):
    x = np.asarray(x, np.float64)
    coef = 1.0
    for i in range(k):
        coef *= n - i
    return coef * x ** (n - k)
