"""lsqfitgp: a decorated custom_jvp of the elementwise minimum whose rule, registered with
`@_minimum.defjvp`, takes the tangent of x where x < y and the tangent of y otherwise (jax's own
rule gives 1/2 of each at a tie; the kernel needs 1, consistently between min and max).

Adapted from Gattocrucco/lsqfitgp:src/lsqfitgp/_kernels/_randomwalk.py:73 (the kernel that uses it,
WienerIntegral, is reduced to a caller that weights the minimum).
"""
import functools
from functools import partial
import jax
import jax.numpy as jnp
import numpy as np
from jax import lax
EVAL = {'id': 'mutation/jvp_params_swapped/lsqfitgp_minimum', 'family': 'mutation', 'expect': 'unknown', 'library': 'lsqfitgp', 'source': 'Gattocrucco/lsqfitgp:src/lsqfitgp/_kernels/_randomwalk.py:73', 'argnums': (0, 1), 'extra': ['jvp', 'jacfwd'], 'operator': 'jvp_params_swapped', 'base': 'lsqfitgp_minimum'}

@jax.custom_jvp
def _minimum(x, y):
    return jnp.minimum(x, y)

@_minimum.defjvp
def _minimum_jvp(tangents, primals):
    x, y = primals
    xdot, ydot = tangents
    return (_minimum(x, y), jnp.where(x < y, xdot, ydot))

def eval_fn(x, y):
    a = _minimum(x, y)
    return a * a * (3.0 - a) / 6.0

def eval_inputs():
    return (np.array([0.5, 1.5, 2.25, 0.2], np.float32), np.array([1.0, 0.75, 3.0, 0.9], np.float32))

def eval_reference(x, y):
    a = np.minimum(np.asarray(x, np.float64), np.asarray(y, np.float64))
    return a * a * (3.0 - a) / 6.0
