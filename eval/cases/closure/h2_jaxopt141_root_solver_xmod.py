"""closure hazard, caller in another module: a root solver's custom_vjp takes the residual function as a nondiff argument.

Report: google/jaxopt#141 https://github.com/google/jaxopt/issues/141 (gradients with respect to
parameters of the optimality function came out wrong through an implicitly differentiated root
finder; the fix was to pass those parameters explicitly). This file is the solver library; the
driver (`_h2_jaxopt141_root_driver.py`) binds the differentiated parameter into the residual with
`functools.partial` and passes only a constant target as `theta`.
"""
import functools

import jax
import jax.numpy as jnp

EVAL = {
    "id": "closure/h2_jaxopt141_root_solver_xmod", "family": "closure", "expect": "hazard",
    "source": "google/jaxopt#141", "url": "https://github.com/google/jaxopt/issues/141",
    "written_at": "2026-12-02", "written_at_commit": "57286d6bb1b3765b2fe45d8e346dffc0e0612443",
    "argnums": (0,), "driver": "_h2_jaxopt141_root_driver.py", "heldout": True,
}


@functools.partial(jax.custom_vjp, nondiff_argnums=(0,))  # eval: span
def find_root(residual, x0, theta):  # eval: span
    """Elementwise Newton iterations for residual(x, theta) == 0."""
    def step(_, x):
        r, dr = jax.jvp(lambda v: residual(v, theta), (x,), (jnp.ones_like(x),))
        return x - r / dr

    return jax.lax.fori_loop(0, 40, step, x0)


def _find_root_fwd(residual, x0, theta):
    x = find_root(residual, x0, theta)
    return x, (x, theta)


def _find_root_bwd(residual, res, g):
    x, theta = res
    _, dfdx = jax.jvp(lambda v: residual(v, theta), (x,), (jnp.ones_like(x),))
    _, pull = jax.vjp(lambda th: residual(x, th), theta)
    (theta_ct,) = pull(-g / dfdx)
    return jnp.zeros_like(x), theta_ct


find_root.defvjp(_find_root_fwd, _find_root_bwd)
