"""lineax: a two-norm whose tangent is guarded at zero.

Adapted from patrick-kidger/lineax:lineax/_norm.py:70.
"""
import functools
from functools import partial
import jax
import jax.numpy as jnp
import numpy as np
from jax import lax
EVAL = {'id': 'mutation/nondiff_move/lineax_two_norm', 'family': 'mutation', 'expect': 'unknown', 'library': 'lineax', 'source': 'patrick-kidger/lineax:lineax/_norm.py:70', 'argnums': (0,), 'extra': ['jvp', 'jacfwd'], 'operator': 'nondiff_move', 'base': 'lineax_two_norm'}

@functools.partial(jax.custom_jvp, nondiff_argnums=(0,))
def _two_norm(x):
    return jnp.sqrt(jnp.sum(x * x))

@_two_norm.defjvp
def _two_norm_jvp(x_nd, x, tx):
    () = x
    () = tx
    tx = jnp.zeros_like(x)
    out = _two_norm(x)
    pred = (out == 0) | jnp.isinf(out)
    denominator = jnp.where(pred, 1, out)
    t_out = jnp.sum(x * tx) / denominator
    t_out = jnp.where(pred, 0, t_out)
    return (out, t_out)

def eval_fn(x):
    return _two_norm(x)

def eval_inputs():
    return (np.array([0.5, 1.5, -0.7], np.float32),)

def eval_reference(x):
    return np.linalg.norm(np.asarray(x, np.float64))
