"""praxis: a straight-through estimator for sparsity; the weight is nondiff, the primal calls fwd.

Adapted from google/praxis:praxis/layers/quantization/sparsity/sparsifier.py:52.
"""
import functools
from functools import partial
import jax
import jax.numpy as jnp
import numpy as np
from jax import lax
EVAL = {'id': 'mutation/bwd_params_swapped/praxis_sr_ste', 'family': 'mutation', 'expect': 'unknown', 'library': 'praxis', 'source': 'google/praxis:praxis/layers/quantization/sparsity/sparsifier.py:52', 'argnums': (0,), 'extra': ['grad_jit'], 'operator': 'bwd_params_swapped', 'base': 'praxis_sr_ste'}

@functools.partial(jax.custom_vjp, nondiff_argnums=(2,))
def sr_ste(inputs, mask, sparse_ste_weight):
    return sr_ste_fwd(inputs, mask, sparse_ste_weight)[0]

def sr_ste_fwd(inputs, mask, sparse_ste_weight):
    updated_inputs = jnp.multiply(mask, inputs)
    return ((updated_inputs, mask, jnp.array(sparse_ste_weight)), (inputs, mask, jnp.array(sparse_ste_weight)))

def sr_ste_bwd(sparsity_params, g, res):
    del sparsity_params
    inputs, mask, ste_weight = res
    g1, _, _ = g
    g1 = g1 + ste_weight * jnp.multiply(~mask, inputs)
    return (g1, None)
sr_ste.defvjp(sr_ste_fwd, sr_ste_bwd)
MASK = np.array([True, False, True])

def eval_fn(x):
    return sr_ste(x, jnp.asarray(MASK), 0.5)[0]

def eval_inputs():
    return (np.array([0.5, 1.5, -0.7], np.float32),)

def eval_reference(x):
    return np.asarray(x, np.float64) * MASK

def eval_grad_reference(x):
    return (1.0 + 0.5 * ~MASK * np.asarray(x, np.float64),)
