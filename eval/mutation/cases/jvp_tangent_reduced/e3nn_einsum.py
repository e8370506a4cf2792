"""e3nn-jax: `einsum` with a hand-written forward rule, a
`@partial(jax.custom_jvp, nondiff_argnums=(0,))` over `(eq, *xs)`: the equation string is the one
nondiff argument and the operands come as varargs. The rule, registered with `@einsum.defjvp`
and typed `(eq, xs, x_dots)`, uses multilinearity: the tangent is the sum over operands of the
same contraction with that operand replaced by its tangent (a generator inside `sum`). The
usage is the library's tensor product of two l=1 feature sets: path weights, a constant
coupling tensor and the two inputs contracted in one call.

Adapted from e3nn/e3nn-jax:e3nn_jax/_src/utils/einsum.py:8 (`einsum`, `einsum_jvp`; its caller
`_block_left_right` in e3nn_jax/_src/legacy/core_tensor_product.py is reduced to one path whose
coupling tensor is the Levi-Civita symbol, the l=1 x l=1 -> l=1 Clebsch-Gordan up to a factor).
"""
import functools
from functools import partial
from typing import Tuple
import jax
import jax.numpy as jnp
import numpy as np
EVAL = {'id': 'mutation/jvp_tangent_reduced/e3nn_einsum', 'family': 'mutation', 'expect': 'unknown', 'library': 'e3nn-jax', 'source': 'e3nn/e3nn-jax:e3nn_jax/_src/utils/einsum.py:8', 'argnums': (0, 1, 2), 'extra': ['jvp', 'jacfwd'], 'operator': 'jvp_tangent_reduced', 'base': 'e3nn_einsum'}

@partial(jax.custom_jvp, nondiff_argnums=(0,))
def einsum(eq, *xs):
    return jnp.einsum(eq, *xs, optimize='optimal')

@einsum.defjvp
def einsum_jvp(eq: str, xs: Tuple[jax.Array], x_dots: Tuple[jax.Array]) -> jax.Array:
    primal_out = einsum(eq, *xs)
    tangent_out = sum((einsum(eq, *xs[:i] + (x_dot,) + xs[i + 1:]) for i, x_dot in enumerate(x_dots)))
    return (primal_out, jnp.sum(tangent_out))

def _levi_civita():
    eps = np.zeros((3, 3, 3), np.float32)
    for i, j, k in ((0, 1, 2), (1, 2, 0), (2, 0, 1)):
        eps[i, j, k], eps[j, i, k] = (1.0, -1.0)
    return eps / np.sqrt(2.0)
COUPLING = _levi_civita()

def tensor_product(weights, input1, input2):
    """One path 1o x 1o -> 1e: out[w, k] = sum weights[u, v, w] C[i, j, k] input1[u, i] input2[v, j]."""
    return einsum('uvw,ijk,ui,vj->wk', weights, jnp.asarray(COUPLING), input1, input2)

def eval_fn(weights, input1, input2):
    return jnp.sin(tensor_product(weights, input1, input2))

def eval_inputs():
    rng = np.random.default_rng(11)
    weights = rng.normal(size=(2, 2, 3)).astype(np.float32) * 0.6
    input1 = rng.normal(size=(2, 3)).astype(np.float32)
    input2 = rng.normal(size=(2, 3)).astype(np.float32)
    return (weights, input1, input2)

def eval_reference(weights, input1, input2):
    w, a, b = (np.asarray(v, np.float64) for v in (weights, input1, input2))
    return np.sin(np.einsum('uvw,ijk,ui,vj->wk', w, COUPLING.astype(np.float64), a, b))
