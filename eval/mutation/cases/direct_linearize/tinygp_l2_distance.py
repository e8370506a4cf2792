"""tinygp: a zero-safe L2 distance. The custom_jvp is built inside the kernel's `distance` method,
closes over `self` (its `squared_distance`), and is registered with a decorator on a rule named `_`;
the rule returns a zero tangent where the distance is zero instead of the NaN of sqrt's own rule.

Adapted from dfm/tinygp:src/tinygp/kernels/distance.py:56 (commit f4ec47f, "Providing a zero-safe
custom JVP for L2-distance"; the Distance base class and its type annotations are dropped). The
caller is a Matern-3/2 kernel evaluated row by row (`jax.vmap` of the method), with one pair of
equal rows, the case the rule exists for.
"""
import functools
import jax
import jax.numpy as jnp
import numpy as np
jax.config.update('jax_use_direct_linearize', True)  # eval: span
EVAL = {'id': 'mutation/direct_linearize/tinygp_l2_distance', 'family': 'mutation', 'expect': 'unknown', 'library': 'tinygp', 'source': 'dfm/tinygp:src/tinygp/kernels/distance.py:56', 'argnums': (0, 1), 'extra': ['jvp', 'jacfwd'], 'claim': 'no-op', 'operator': 'direct_linearize', 'base': 'tinygp_l2_distance'}

class L2Distance:

    def squared_distance(self, X1, X2):
        return jnp.sum(jnp.square(X1 - X2))

    def distance(self, X1, X2):

        @jax.custom_jvp
        def impl(X1, X2):
            return jnp.sqrt(self.squared_distance(X1, X2))

        @impl.defjvp
        def _(primals, tangents):
            X1, X2 = primals
            X1_dot, X2_dot = tangents
            primal_out = jnp.sqrt(self.squared_distance(X1, X2))
            select = jax.lax.eq(primal_out, jnp.zeros_like(primal_out))
            denom = jnp.where(select, jnp.ones_like(primal_out), primal_out)
            tangent_out = jnp.where(select, jnp.zeros_like(denom), jnp.sum((X1 - X2) * (X1_dot - X2_dot)) / denom)
            return (primal_out, tangent_out)
        return impl(X1, X2)

def eval_fn(X1, X2):
    r = jax.vmap(L2Distance().distance)(X1, X2) / 0.7
    arg = jnp.sqrt(3.0) * r
    return (1.0 + arg) * jnp.exp(-arg)

def eval_inputs():
    X1 = np.array([[0.1, -0.4, 1.2], [0.5, 0.5, 0.5], [-1.0, 0.3, 0.8], [0.9, -0.2, 0.05]], np.float32)
    X2 = np.array([[0.6, 0.2, 0.9], [0.5, 0.5, 0.5], [-0.3, -0.1, 1.5], [1.4, 0.4, -0.6]], np.float32)
    return (X1, X2)

def eval_reference(X1, X2):
    d = np.asarray(X1, np.float64) - np.asarray(X2, np.float64)
    arg = np.sqrt(3.0) * np.sqrt(np.sum(d * d, axis=-1)) / 0.7
    return (1.0 + arg) * np.exp(-arg)
