"""jax-md: sqrt with a tangent that is zero where x <= 0; primals indexed, not unpacked.

Adapted from jax-md/jax-md:jax_md/mm_forcefields/reaxff/reaxff_helper.py:18.
"""
import functools
from functools import partial

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

EVAL = {'id': 'mutation/jaxmd_safe_sqrt', 'family': 'mutation', 'expect': 'ok', 'library': 'jax-md', 'source': 'jax-md/jax-md:jax_md/mm_forcefields/reaxff/reaxff_helper.py:18', 'argnums': (0,), 'extra': ['jvp', 'jacfwd']}

@jax.custom_jvp
def safe_sqrt(x):
    return jnp.sqrt(x)


@safe_sqrt.defjvp
def safe_sqrt_jvp(primals, tangents):
    x = primals[0]
    x_dot = tangents[0]
    primal_out = safe_sqrt(x)
    tangent_out = 0.5 * x_dot / jnp.where(x > 0, primal_out, jnp.inf)
    return primal_out, tangent_out


def eval_fn(x):
    return safe_sqrt(x)


def eval_inputs():
    return (np.array([0.5, 1.5, 2.7], np.float32),)


def eval_reference(x):
    return np.sqrt(np.asarray(x, np.float64))
