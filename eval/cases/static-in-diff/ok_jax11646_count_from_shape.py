"""static-in-diff look-alike: the loop count comes from an array's shape, the differentiable arguments are data.

Report: jax-ml/jax#11646 https://github.com/jax-ml/jax/issues/11646 (the fix the thread points
to: take Python integers from static information, never from a traced argument). The custom_vjp
loops over `range(n)` where `n = x.shape[0]` (a Python int under `jit`) and uses its second
argument `p` only as array data.
"""
import jax
import jax.numpy as jnp
import numpy as np

EVAL = {
    "id": "static-in-diff/ok_jax11646_count_from_shape", "family": "static-in-diff", "expect": "ok",
    "source": "jax-ml/jax#11646", "url": "https://github.com/jax-ml/jax/issues/11646",
    "written_at": "2026-12-02", "written_at_commit": "9e042dab056b2e5f1652c5b10417b37c94b25964",
    "argnums": (0, 1),
}


@jax.custom_vjp
def power_sum(x, p):
    n = x.shape[0]
    total = 0.0
    for i in range(n):
        total = total + x[i] ** p
    return total


def power_sum_fwd(x, p):
    return power_sum(x, p), (x, p)


def power_sum_bwd(res, g):
    x, p = res
    return g * p * x ** (p - 1.0), g * jnp.sum(x ** p * jnp.log(x))


power_sum.defvjp(power_sum_fwd, power_sum_bwd)


def eval_fn(x, p):
    return power_sum(x, p)


def eval_inputs():
    return (np.array([1.0, 2.0, 3.0], np.float32), np.float32(2.0))


def eval_reference(x, p):
    return np.sum(np.asarray(x, np.float64) ** np.float64(p))
