"""closure look-alike: jax.closure_convert hoists a closed-over parameter before it reaches a custom_vjp solver.

Report: jax-ml/jax#11208 https://github.com/jax-ml/jax/issues/11208 (a request for symbolic zeros in
custom derivatives, motivated by library code, such as an implicit-function-theorem solve, that
uses jax.closure_convert to turn the closed-over floats of a user's function into explicit inputs
so that the custom rule can return their cotangents). Here a fixed-point solve takes a map that
closes over a traced parameter, closure-converted first, the pattern the JAX docs recommend.
"""
import functools

import jax
import jax.numpy as jnp
import numpy as np

EVAL = {
    "id": "closure/ok_h6_jax11208_closure_convert_before_custom_vjp", "family": "closure",
    "expect": "ok", "source": "jax-ml/jax#11208", "url": "https://github.com/jax-ml/jax/issues/11208",
    "written_at": "2026-12-02", "written_at_commit": "62a0272af379a14644eeb31ed58eba40374c4cfb",
    "argnums": (0,), "heldout": True,
}


def _iterate(f, z, consts):
    for _ in range(80):
        z = f(z, *consts)
    return z


@functools.partial(jax.custom_vjp, nondiff_argnums=(0,))  # eval: span
def fixed_point(f, z0, *consts):  # eval: span
    return _iterate(f, z0, consts)


def _fp_fwd(f, z0, *consts):
    z = _iterate(f, z0, consts)
    return z, (z, consts)


def _fp_bwd(f, res, g):
    z, consts = res
    _, vjp_z = jax.vjp(lambda zz: f(zz, *consts), z)
    # (I - df/dz)^T w = g, solved by iteration since df/dz is a contraction
    w = g
    for _ in range(80):
        w = g + vjp_z(w)[0]
    _, vjp_c = jax.vjp(lambda *cs: f(z, *cs), *consts)
    return (jnp.zeros_like(z),) + tuple(vjp_c(w))


fixed_point.defvjp(_fp_fwd, _fp_bwd)


def solve(theta):
    def step(z):
        return 0.5 * jnp.cos(z) + theta

    z0 = jnp.zeros_like(theta)
    converted, consts = jax.closure_convert(step, z0)  # eval: span
    return fixed_point(converted, z0, *consts)  # eval: span


def eval_fn(theta):
    return jnp.sum(solve(theta))


def eval_inputs():
    return (np.array([0.1, 0.6, -0.3], np.float32),)


def eval_reference(theta):
    theta = np.asarray(theta, np.float64)
    z = np.zeros_like(theta)
    for _ in range(200):
        z = 0.5 * np.cos(z) + theta
    return np.asarray(np.sum(z))
