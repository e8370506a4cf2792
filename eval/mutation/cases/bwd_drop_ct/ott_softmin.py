"""ott-jax: soft-min with lambda rules in defvjp and a nondiff axis.

Adapted from ott-jax/ott:src/ott/math/utils.py:189.
"""
import functools
from functools import partial
import jax
import jax.numpy as jnp
import numpy as np
from jax import lax
EVAL = {'id': 'mutation/bwd_drop_ct/ott_softmin', 'family': 'mutation', 'expect': 'unknown', 'library': 'ott-jax', 'source': 'ott-jax/ott:src/ott/math/utils.py:189', 'argnums': (0,), 'extra': ['grad_jit'], 'operator': 'bwd_drop_ct', 'base': 'ott_softmin'}

@functools.partial(jax.custom_vjp, nondiff_argnums=(2,))
def softmin(x, gamma, axis=None):
    return -gamma * jax.scipy.special.logsumexp(x / -gamma, axis=axis)
softmin.defvjp(lambda x, gamma, axis: (softmin(x, gamma, axis), (x / -gamma, axis)), lambda axis, res, g: (jnp.where(jnp.isinf(res[0]), 0.0, jax.nn.softmax(res[0], axis=axis) * (g if axis is None else jnp.expand_dims(g, axis=axis))),))

def eval_fn(x, gamma):
    return softmin(x, gamma, 0)

def eval_inputs():
    return (np.array([0.5, 1.5, -0.7], np.float32), np.float32(0.5))

def eval_reference(x, gamma):
    x = np.asarray(x, np.float64)
    z = x / -float(gamma)
    return -float(gamma) * (np.max(z) + np.log(np.sum(np.exp(z - np.max(z)))))
