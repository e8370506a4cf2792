"""lineax: an identity whose tangent is zero where the value is zero.

Adapted from patrick-kidger/lineax:lineax/_norm.py:142.
"""
import functools
from functools import partial
import jax
import jax.numpy as jnp
import numpy as np
from jax import lax
EVAL = {'id': 'mutation/nondiff_move/lineax_zero_grad_at_zero', 'family': 'mutation', 'expect': 'unknown', 'library': 'lineax', 'source': 'patrick-kidger/lineax:lineax/_norm.py:142', 'argnums': (0,), 'extra': ['jvp', 'jacfwd'], 'operator': 'nondiff_move', 'base': 'lineax_zero_grad_at_zero'}

@functools.partial(jax.custom_jvp, nondiff_argnums=(0,))
def _zero_grad_at_zero(x):
    return x

@_zero_grad_at_zero.defjvp
def _zero_grad_at_zero_jvp(out, primals, tangents):
    () = primals
    () = tangents
    t_out = jnp.zeros_like(out)
    return (out, jnp.where(out == 0, 0, t_out))

def eval_fn(x):
    return jnp.sin(_zero_grad_at_zero(x))

def eval_inputs():
    return (np.array([0.5, 1.5, -0.7], np.float32),)

def eval_reference(x):
    return np.sin(np.asarray(x, np.float64))
