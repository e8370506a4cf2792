"""trax: the denominator of causal FAVOR attention, a prefix sum over time written with
`lax.scan`; a custom_vjp in call form (`f = jax.custom_vjp(f)` then `f.defvjp(fwd, bwd)`) made
inside the layer's forward, whose fwd saves the queries, keys and the final prefix sum and whose
bwd runs the scan in reverse and returns None for the initial prefix sum.

Adapted from google/trax:trax/layers/research/sparsity.py:1061 (`fastmath.custom_vjp`, which on
the JAX backend wraps the function in `jax.custom_vjp` and registers the rules, is spelled with
jax here and registered once; `fastmath.scan` is `lax.scan`; the numerator is left out).
"""
import functools
from functools import partial
import jax
import jax.numpy as jnp
import numpy as np
from jax import lax
EVAL = {'id': 'mutation/bwd_drop_ct/trax_favor_denominator', 'family': 'mutation', 'expect': 'unknown', 'library': 'trax', 'source': 'google/trax:trax/layers/research/sparsity.py:1061', 'argnums': (0, 1), 'extra': ['grad_jit'], 'operator': 'bwd_drop_ct', 'base': 'trax_favor_denominator'}

class CausalFavorDenominator:

    def __init__(self, numerical_stabilizer=0.001):
        self._numerical_stabilizer = numerical_stabilizer

    def forward(self, inputs):

        def favor_denominator_fwd(init_prefix_sum_value, query_prime, key_prime):

            def body(p, qk):
                q, k = qk
                p += k
                x = jnp.einsum('...m,...m->...', q, p)
                return (p, x)
            p, r = lax.scan(body, init_prefix_sum_value, (query_prime, key_prime))
            return (r, (query_prime, key_prime, p))

        def favor_denominator_bwd(qkp, r_ct):
            qs, ks, p = qkp

            def body(carry, qkx):
                p, p_ct = carry
                q, k, x_ct = qkx
                q_ct = jnp.einsum('...,...m->...m', x_ct, p)
                p_ct += jnp.einsum('...,...m->...m', x_ct, q)
                k_ct = p_ct
                p -= k
                return ((p, p_ct), (q_ct, k_ct))
            _, (qs_ct, ks_ct) = lax.scan(body, (p, jnp.zeros_like(p)), (qs, ks, r_ct), reverse=True)
            return (None, qs_ct)

        def favor_denominator(init_prefix_sum_value, query_prime, key_prime):
            r, _ = favor_denominator_fwd(init_prefix_sum_value, query_prime, key_prime)
            return r
        favor_denominator = jax.custom_vjp(favor_denominator)
        favor_denominator.defvjp(favor_denominator_fwd, favor_denominator_bwd)

        def relu(x):
            return jnp.where(x <= 0, jnp.zeros_like(x), x)
        query, key = inputs
        query_prime = relu(query) + self._numerical_stabilizer
        key_prime = relu(key) + self._numerical_stabilizer
        t_slice_shape = (key.shape[0], key.shape[-1])
        init_prefix_sum_value_denominator = jnp.zeros(t_slice_shape)
        r = favor_denominator(init_prefix_sum_value_denominator, jnp.moveaxis(query_prime, 1, 0), jnp.moveaxis(key_prime, 1, 0))
        r = jnp.moveaxis(r, 0, 1)
        return jnp.reciprocal(r)

def eval_fn(query, key):
    return CausalFavorDenominator().forward((query, key))

def eval_inputs():
    return (np.array([[[0.5, 1.5], [-0.7, 0.9], [1.2, 0.3]]], np.float32), np.array([[[0.8, 0.4], [1.1, -0.6], [0.2, 1.3]]], np.float32))

def eval_reference(query, key):
    q = np.maximum(np.asarray(query, np.float64), 0.0) + 0.001
    k = np.maximum(np.asarray(key, np.float64), 0.0) + 0.001
    p = np.cumsum(k, axis=1)
    return 1.0 / np.sum(q * p, axis=-1)
