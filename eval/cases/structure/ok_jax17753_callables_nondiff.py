"""structure look-alike: the callable stays a nondiff argument; residuals hold arrays only.

Report: jax-ml/jax#17753 https://github.com/jax-ml/jax/issues/17753 (the fix: bwd receives the
nondiff callables as its leading arguments, so they need not be saved as residuals).
"""
from functools import partial

import jax
import jax.numpy as jnp
import numpy as np

EVAL = {
    "id": "structure/ok_jax17753_callables_nondiff", "family": "structure", "expect": "ok",
    "source": "jax-ml/jax#17753", "url": "https://github.com/jax-ml/jax/issues/17753",
    "written_at": "2026-12-01", "written_at_commit": "c10c45a8c2ee52022265ee289b536960fd004d90",
    "argnums": (0,),
}


def _iterate(step, rhs):
    return jax.lax.fori_loop(0, 50, lambda _, b: step(b, rhs), jnp.zeros_like(rhs))


@partial(jax.custom_vjp, nondiff_argnums=(0,))
def fixed_point(step, rhs):
    return _iterate(step, rhs)


def fixed_point_fwd(step, rhs):
    b = _iterate(step, rhs)
    return b, (b, rhs)


def fixed_point_bwd(step, res, g):
    b, rhs = res
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
