"""structure hazard: fwd written with the nondiff argument first, as the old docs implied.

Report: jax-ml/jax#4617 https://github.com/jax-ml/jax/issues/4617 ("documentation for
custom_vjp(nondiff_argnums) slightly misleading": the docs implied nondiff arguments come first in
fwd too; only bwd gets them first, fixed in docs by jax-ml/jax#6683). fwd is called with the
primal's order, so this fwd multiplies by the option string.
"""
import functools

import jax
import numpy as np

EVAL = {
    "id": "structure/jax4617_fwd_nondiff_first", "family": "structure", "expect": "hazard",
    "source": "jax-ml/jax#4617", "url": "https://github.com/jax-ml/jax/issues/4617",
    "written_at": "2026-12-01", "written_at_commit": "66aa237f5176449a9711e6278e47349128c8731b",
    "argnums": (0,),
}


@functools.partial(jax.custom_vjp, nondiff_argnums=(1,))
def power(x, order):
    return x ** order


def power_fwd(order, x):  # eval: span
    return x ** order, x


def power_bwd(order, x, g):
    return (order * x ** (order - 1) * g,)


power.defvjp(power_fwd, power_bwd)


def eval_fn(x):
    return power(x, 3)


def eval_inputs():
    return (np.array([0.5, 2.0], np.float32),)


def eval_reference(x):
    return np.asarray(x, np.float64) ** 3
