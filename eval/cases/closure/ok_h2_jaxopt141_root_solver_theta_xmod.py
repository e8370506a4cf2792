"""closure look-alike, caller in another module: the differentiated parameter is passed as `theta`.

Report: google/jaxopt#141 https://github.com/google/jaxopt/issues/141 (the fix: every parameter
the gradient is taken for goes through the solver's explicit `theta` argument). Same solver
library as the hazard; the driver (`_ok_h2_jaxopt141_root_theta_driver.py`) passes a module-level residual function.
"""
import functools

import jax
import jax.numpy as jnp

EVAL = {
    "id": "closure/ok_h2_jaxopt141_root_solver_theta_xmod", "family": "closure", "expect": "ok",
    "source": "google/jaxopt#141", "url": "https://github.com/google/jaxopt/issues/141",
    "written_at": "2026-12-02", "written_at_commit": "57286d6bb1b3765b2fe45d8e346dffc0e0612443",
    "argnums": (0,), "driver": "_ok_h2_jaxopt141_root_theta_driver.py", "heldout": True,
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
