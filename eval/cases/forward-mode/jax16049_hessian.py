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
def sin_times(x, y):
    return jnp.sin(x) * y


def sin_times_fwd(x, y):
    return sin_times(x, y), (jnp.cos(x), jnp.sin(x), y)


def sin_times_bwd(res, g):
    cos_x, sin_x, y = res
    return cos_x * g * y, sin_x * g


sin_times.defvjp(sin_times_fwd, sin_times_bwd)


def eval_fn(x, y):
    return sin_times(x, y)


def curvature(x, y):
    return jax.hessian(sin_times)(x, y)  # eval: span


def eval_inputs():
    return (np.float32(1.0), np.float32(2.0))


def eval_reference(x, y):
    return np.sin(np.float64(x)) * np.float64(y)
