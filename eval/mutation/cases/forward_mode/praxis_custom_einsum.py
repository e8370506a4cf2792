"""praxis: an einsum made a custom_vjp inside a function; a PRNG key in a differentiable slot gets None.

Adapted from google/praxis:praxis/layers/quantization/operations.py:389.
"""
import functools
from functools import partial
import jax
import jax.numpy as jnp
import numpy as np
from jax import lax
EVAL = {'id': 'mutation/forward_mode/praxis_custom_einsum', 'family': 'mutation', 'expect': 'unknown', 'library': 'praxis', 'source': 'google/praxis:praxis/layers/quantization/operations.py:389', 'argnums': (0, 1), 'extra': ['grad_jit'], 'operator': 'forward_mode', 'base': 'praxis_custom_einsum'}

def einsum_with_custom_grad(eqn, x, w, key):

    @jax.custom_vjp
    def _custom_einsum(x, w, key):
        return jnp.einsum(eqn, x, w)

    def _custom_einsum_fwd(x, w, key):
        return (jnp.einsum(eqn, x, w), (x, w, key))

    def _custom_einsum_bwd(res, g):
        x, w, key = res
        gx = jnp.einsum('bo,io->bi', g, w)
        gw = jnp.einsum('bi,bo->io', x, g)
        return (gx, gw, None)
    _custom_einsum.defvjp(_custom_einsum_fwd, _custom_einsum_bwd)
    return _custom_einsum(x, w, key)

def eval_fn(x, w):
    return einsum_with_custom_grad('bi,io->bo', x, w, jax.random.PRNGKey(0)) * jnp.array([1.0, -2.0])

def eval_inputs():
    return (np.array([[0.5, 1.5], [-0.7, 0.2]], np.float32), np.array([[1.0, 0.5], [-0.3, 2.0]], np.float32))

def eval_reference(x, w):
    return np.asarray(x, np.float64) @ np.asarray(w, np.float64) * np.array([1.0, -2.0])

def forward_usage(*args):
    return jax.jacfwd(eval_fn, argnums=(0, 1))(*args)

def eval_custom():
    return {'forward_usage': lambda: (forward_usage(*eval_inputs()), None)[1]}
