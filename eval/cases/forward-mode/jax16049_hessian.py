"""forward-mode hazard: jax.hessian of a custom_vjp function.

Report: jax-ml/jax#16049 https://github.com/jax-ml/jax/issues/16049 ("Cannot compute Hessian of
custom_vjp"): hessian is jacfwd(jacrev(f)), and forward mode cannot go through a custom_vjp.
"""
import jax
import jax.numpy as jnp
import numpy as np

EVAL = {
    "id": "forward-mode/jax16049_hessian", "family": "forward-mode", "expect": "hazard",
    "source": "jax-ml/jax#16049", "url": "https://github.com/jax-ml/jax/issues/16049",
    "written_at": "2026-12-01", "written_at_commit": "66aa237f5176449a9711e6278e47349128c8731b",
    "argnums": (0,), "extra": ["hessian"],
}


@jax.custom_vjp
def tanh_times(x, y):
    return jnp.tanh(x) * y


def tanh_times_fwd(x, y):
    t = jnp.tanh(x)
    return tanh_times(x, y), (t, y)


def tanh_times_bwd(res, g):
    t, y = res
    return (1.0 - t * t) * y * g, t * g


tanh_times.defvjp(tanh_times_fwd, tanh_times_bwd)


def eval_fn(x, y):
    return tanh_times(x, y)


def curvature(x, y):
    return jax.hessian(tanh_times)(x, y)  # eval: span


def eval_inputs():
    return (np.float32(1.0), np.float32(2.0))


def eval_reference(x, y):
    return np.tanh(np.float64(x)) * np.float64(y)
