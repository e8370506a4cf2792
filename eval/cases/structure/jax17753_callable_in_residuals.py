"""structure hazard: fwd puts a Python callable (a nondiff argument) into the residuals.

Report: jax-ml/jax#17753 https://github.com/jax-ml/jax/issues/17753 ("Class 'function' is not a
valid JAX type with Custom VJP"): a fixed-point custom_vjp with functions in nondiff_argnums whose
fwd returned one of those functions among the residuals (and through a loop carry). Residuals must
be JAX values; bwd receives the nondiff callables anyway.
"""
from functools import partial

import jax
import jax.numpy as jnp
import numpy as np

EVAL = {
    "id": "structure/jax17753_callable_in_residuals", "family": "structure", "expect": "hazard",
    "source": "jax-ml/jax#17753", "url": "https://github.com/jax-ml/jax/issues/17753",
    "written_at": "2026-12-01", "written_at_commit": "4ca3eb3a9f0b546f5fb228ede943c80bf9bdb7b0",
    "argnums": (0,),
}


def _iterate(step, rhs):
    return jax.lax.fori_loop(0, 50, lambda _, b: step(b, rhs), jnp.zeros_like(rhs))


@partial(jax.custom_vjp, nondiff_argnums=(0,))
def fixed_point(step, rhs):
    return _iterate(step, rhs)


def fixed_point_fwd(step, rhs):
    b = _iterate(step, rhs)
    return b, (b, rhs, step)  # eval: span


def fixed_point_bwd(step, res, g):
    b, rhs, _ = res
    _, vjp_b = jax.vjp(lambda v: step(v, rhs), b)
    w = jax.lax.fori_loop(0, 50, lambda _, u: g + vjp_b(u)[0], g)
    _, vjp_rhs = jax.vjp(lambda r: step(b, r), rhs)
    return vjp_rhs(w)


fixed_point.defvjp(fixed_point_fwd, fixed_point_bwd)


def contraction(b, rhs):
    return 0.5 * b + rhs


def eval_fn(rhs):
    return fixed_point(contraction, rhs)


def eval_inputs():
    return (np.array([1.0, -2.0], np.float32),)


def eval_reference(rhs):
    return 2.0 * np.asarray(rhs, np.float64)
