"""ott-jax: the convex conjugate of a regularized cost, differentiated by Danskin's theorem (a
custom_vjp defined inside a method; bwd returns a 1-tuple written without parentheses).

Adapted from ott-jax/ott:src/ott/geometry/costs.py:430 (the regularizer's prox is soft
thresholding here, h(q) = |q|^2 / 2 + lam |q|_1).
"""
import functools
from functools import partial
import jax
import jax.numpy as jnp
import numpy as np
from jax import lax
EVAL = {'id': 'mutation/fwd_no_residual/ott_danskin_conjugate', 'family': 'mutation', 'expect': 'unknown', 'library': 'ott-jax', 'source': 'ott-jax/ott:src/ott/geometry/costs.py:430', 'argnums': (0,), 'extra': ['grad_jit'], 'operator': 'fwd_no_residual', 'base': 'ott_danskin_conjugate'}

class ElasticCost:

    def __init__(self, lam):
        self.lam = lam

    def prox(self, z):
        return jnp.sign(z) * jnp.maximum(jnp.abs(z) - self.lam, 0.0)

    def h(self, q):
        return 0.5 * jnp.sum(q ** 2) + self.lam * jnp.sum(jnp.abs(q))

    def h_legendre(self, z):

        @jax.custom_vjp
        def fn(z):
            out, _ = fwd(z)
            return out

        def fwd(z):
            q = self.prox(z)
            return jnp.dot(q, z) - self.h(q)

        def bwd(q, g):
            return (jnp.dot(g, q),)
        fn.defvjp(fwd, bwd)
        return fn(z)

def eval_fn(z):
    return ElasticCost(0.1).h_legendre(z)

def eval_inputs():
    return (np.array([0.5, 1.5, -0.7], np.float32),)

def eval_reference(z):
    z = np.asarray(z, np.float64)
    q = np.sign(z) * np.maximum(np.abs(z) - 0.1, 0.0)
    return q @ z - (0.5 * np.sum(q ** 2) + 0.1 * np.sum(np.abs(q)))
