"""structure look-alike: a custom_jvp with an integer order in nondiff_argnums whose rule calls itself with order k + 1.

Source: jax-ml/jax jax/_src/numpy/ufuncs.py, `_sinc_maclaurin` and `_sinc_maclaurin_jvp`
https://github.com/jax-ml/jax/blob/cec06d116c05f0d52adfceee3d3b730fdbcb0ce5/jax/_src/numpy/ufuncs.py#L3861-L3876
(read at commit cec06d1): `partial(custom_jvp, nondiff_argnums=(0,))` over `(k, x)` returning the k-th
derivative of sinc at zero (a constant shaped like x); the rule, with signature
`(k, primals, tangents)`, returns the function at k and the function at k + 1 times the tangent, so
every derivative order of the removable singularity stays right. Here an unnormalised sinc
with the same where-guard at 0, differentiated twice.
"""
import functools

import jax
import jax.numpy as jnp
import numpy as np

EVAL = {
    "id": "structure/ok_h7_jaxsinc_recursive_custom_jvp_int_order", "family": "structure",
    "expect": "ok", "source": "jax-ml/jax:jax/_src/numpy/ufuncs.py",
    "url": "https://github.com/jax-ml/jax/blob/cec06d116c05f0d52adfceee3d3b730fdbcb0ce5/jax/_src/numpy/ufuncs.py#L3861-L3876",
    "written_at": "2026-12-05", "written_at_commit": "914cb50819952883a4a3f7630a31351c99785b0d",
    "argnums": (0,), "extra": ["hessian", "jacfwd", "jvp"], "heldout": True,
}


@functools.partial(jax.custom_jvp, nondiff_argnums=(0,))  # eval: span
def sinc_series_at_zero(k, x):  # eval: span
    # k-th derivative of sin(x)/x at x = 0, broadcast like x
    value = 0.0 if k % 2 else (-1.0) ** (k // 2) / (k + 1)
    return jnp.zeros_like(x) + value


@sinc_series_at_zero.defjvp  # eval: span
def _sinc_series_jvp(k, primals, tangents):  # eval: span
    (x,), (x_dot,) = primals, tangents
    return sinc_series_at_zero(k, x), sinc_series_at_zero(k + 1, x) * x_dot  # eval: span


def safe_sinc(x):
    at_zero = x == 0
    x_safe = jnp.where(at_zero, 1.0, x)
    return jnp.where(at_zero, sinc_series_at_zero(0, x), jnp.sin(x_safe) / x_safe)


def eval_fn(x):
    return safe_sinc(x)


def eval_inputs():
    return (np.array([0.0, 0.7, -1.3], np.float32),)


def eval_reference(x):
    x = np.asarray(x, np.float64)
    safe = np.where(x == 0, 1.0, x)
    return np.where(x == 0, 1.0, np.sin(safe) / safe)
