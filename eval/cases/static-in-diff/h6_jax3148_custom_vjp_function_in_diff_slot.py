"""static-in-diff hazard: a custom_vjp fixed-point solver takes the iterated function as an ordinary (differentiable) argument.

Report: jax-ml/jax#3148 https://github.com/jax-ml/jax/issues/3148 (a custom_vjp find_fixed_point took
the iterated function as its first argument without nondiff_argnums; even the primal computation
broke, although fwd only called the primal function). A Python callable is not a JAX type, so any
call of the custom_vjp function fails. Here a damped fixed-point iteration gets its map that way.
"""
import jax
import jax.numpy as jnp
import numpy as np

EVAL = {
    "id": "static-in-diff/h6_jax3148_custom_vjp_function_in_diff_slot", "family": "static-in-diff",
    "expect": "hazard", "source": "jax-ml/jax#3148", "url": "https://github.com/jax-ml/jax/issues/3148",
    "written_at": "2026-12-02", "written_at_commit": "62a0272af379a14644eeb31ed58eba40374c4cfb",
    "argnums": (0,), "heldout": True,
}


def _contraction(theta, z):
    return 0.5 * jnp.cos(z) + theta


@jax.custom_vjp  # eval: span
def fixed_point(step, theta):  # eval: span
    z = theta
    for _ in range(60):
        z = step(theta, z)
    return z


def _fixed_point_fwd(step, theta):
    z = fixed_point(step, theta)
    return z, (theta, z)


def _fixed_point_bwd(res, g):
    theta, z = res
    # z = 0.5 cos z + theta  =>  dz/dtheta = 1 / (1 + 0.5 sin z)
    return (None, g / (1.0 + 0.5 * jnp.sin(z)))


fixed_point.defvjp(_fixed_point_fwd, _fixed_point_bwd)


def eval_fn(theta):
    return jnp.sum(fixed_point(_contraction, theta))  # eval: span


def eval_inputs():
    return (np.array([0.1, 0.6, -0.3], np.float32),)


def eval_reference(theta):
    theta = np.asarray(theta, np.float64)
    z = theta.copy()
    for _ in range(200):
        z = 0.5 * np.cos(z) + theta
    return np.asarray(np.sum(z))
