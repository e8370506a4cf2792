"""GPJax: the orthogonal additive kernel (OAK) sums the products of its one-dimensional kernels
up to an interaction depth, weighted by one variance per order. The products are the elementary
symmetric polynomials of the kernel values, built by the Newton-Girard recursion; a custom_jvp
(made inside the method, `from jax import custom_jvp` imported there, closing over the recursion
and `self.max_interaction_depth`) gives the tangent from the leave-one-out polynomials: the
derivative of e_n in k_i is e_{n-1} of the other kernels.

Adapted from JaxGaussianProcesses/GPJax:gpjax/kernels/base.py:303 (commit 907008af, the OAK work
in progress; the kernel list and its one-dimensional evaluations are replaced by the vector of
their values `ks`, the variances are passed in, and the recursion's buffer takes the dtype of its
input instead of float64, which JAX gives as float32 without x64).
"""
import functools
import jax
import jax.numpy as jnp
import numpy as np
EVAL = {'id': 'mutation/jvp_tangent_reduced/gpjax_oak_interaction', 'family': 'mutation', 'expect': 'unknown', 'library': 'gpjax', 'source': 'JaxGaussianProcesses/GPJax:gpjax/kernels/base.py:303', 'argnums': (0, 1), 'extra': ['jvp', 'jacfwd'], 'operator': 'jvp_tangent_reduced', 'base': 'gpjax_oak_interaction'}

class OrthogonalAdditiveKernel:

    def __init__(self, max_interaction_depth=2):
        self.max_interaction_depth = max_interaction_depth

    def compute_additive_terms_girard_newton(self, ks, interaction_variances):
        """The sum over orders n <= max_interaction_depth of variance_n * e_n(ks)."""

        def do_recursion(ks_vec):
            powers = jnp.arange(self.max_interaction_depth + 1)[:, None, None]
            s = jnp.power(ks_vec, powers)
            e = jnp.ones(shape=(self.max_interaction_depth + 1, jnp.shape(ks_vec)[0]), dtype=ks_vec.dtype)
            for n in range(1, self.max_interaction_depth + 1):
                thing = jax.vmap(lambda k: (-1.0) ** (k - 1) * e[n - k, :] * jnp.sum(s[k, :, :], -1))(jnp.arange(1, n + 1))
                e = e.at[n].set(1.0 / n * jnp.sum(thing, 0))
            return e
        from jax import custom_jvp

        @custom_jvp
        def calc(ks, interaction_variances):
            return jnp.sum(do_recursion(ks[None, :])[:, 0] * interaction_variances)

        @calc.defjvp
        def calc_jvp(primals, tangents):
            ks, iv = primals
            ks_dot, iv_dot = tangents
            ks_vec = jnp.repeat(ks[None, :], jnp.shape(ks)[0], 0) - jnp.diag(ks)
            e = do_recursion(jnp.vstack([ks_vec, ks[None, :]]))
            return (jnp.sum(e[:, -1] * iv), jnp.sum(jnp.sum(jnp.sum(e[:-1, :-1] * iv[:, None][1:], 0) * ks_dot) + jnp.sum(e[:, -1] * iv_dot)))
        return calc(ks, interaction_variances)

def eval_fn(ks, interaction_variances):
    return OrthogonalAdditiveKernel(max_interaction_depth=2).compute_additive_terms_girard_newton(ks, interaction_variances)

def eval_inputs():
    return (np.array([0.8, 0.35, 1.3], np.float32), np.array([0.5, 1.2, 0.7], np.float32))

def eval_reference(ks, interaction_variances):
    k = np.asarray(ks, np.float64)
    v = np.asarray(interaction_variances, np.float64)
    e1 = np.sum(k, axis=-1)
    e2 = (e1 * e1 - np.sum(k * k, axis=-1)) / 2.0
    return v[..., 0] + v[..., 1] * e1 + v[..., 2] * e2
