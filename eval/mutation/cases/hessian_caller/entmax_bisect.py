"""entmax-jax: alpha-entmax by bisection, `_entmax(x, alpha, axis, n_iter)`, as
`@partial(jax.custom_jvp, nondiff_argnums=(1, 2, 3))` stacked on `@partial(jax.jit,
static_argnums=(2, 3))` (alpha is a nondiff argument that jit traces; axis and n_iter are static),
a `lax.fori_loop` bisection for the threshold; the rule is registered with `@_entmax.defjvp`
stacked on its own `@partial(jax.jit, static_argnums=(1, 2))`, takes the three nondiff values
first, reads `x = primals[0]`, `dx = tangents[0]`, calls the function again and returns the pair
`p, dy` (the entmax Jacobian applied to dx: s * dx - (sum(s * dx) / sum(s)) * s, s = p^(2 - alpha)
on the support).

Adapted from deep-spin/entmax-jax:entmax_jax/activations.py:12 (commit 97bfbf8). The helper
`tile_to_broadcast` (entmax_jax/utils.py) is written inline (a scalar alpha broadcast to x's shape
with the entmax axis of size 1). The caller takes 1.5-entmax of the rows of a matrix (alpha a
Python float, not differentiated: the library's "FIXME: make alpha differentiable") and weights
the probabilities.
"""
import functools
from functools import partial
import jax
import jax.numpy as jnp
import numpy
from jax import lax
EVAL = {'id': 'mutation/hessian_caller/entmax_bisect', 'family': 'mutation', 'expect': 'unknown', 'library': 'entmax-jax', 'source': 'deep-spin/entmax-jax:entmax_jax/activations.py:12', 'argnums': (0,), 'extra': ['jvp', 'jacfwd'], 'operator': 'hessian_caller', 'base': 'entmax_bisect'}

def tile_to_broadcast(alpha, shape, axis):
    shape = list(shape)
    shape[axis] = 1
    return jnp.broadcast_to(alpha, shape)

@partial(jax.custom_jvp, nondiff_argnums=(1, 2, 3))
@partial(jax.jit, static_argnums=(2, 3))
def _entmax(x, alpha, axis, n_iter):
    alpha = jnp.asarray(alpha)
    alpha = tile_to_broadcast(alpha, x.shape, axis) if alpha.ndim == 0 else jnp.expand_dims(alpha, axis)
    d = float(x.shape[axis])
    x = (alpha - 1) * x
    thres_l = jnp.max(x, axis, keepdims=True) - 1
    delta = 1 - d ** (1 - alpha)
    two_float = jnp.array(2, dtype=jnp.float32)

    def loop_body(i, thres_l):
        threshold = thres_l + delta / two_float ** i
        p = jnp.maximum(x - threshold, 0) ** (1 / (alpha - 1))
        z = jnp.sum(p, axis=axis, keepdims=True)
        thres_l = jnp.where(z >= 1, threshold, thres_l)
        return thres_l
    threshold = lax.fori_loop(1, n_iter + 1, loop_body, thres_l)
    p = jnp.maximum(x - threshold, 0) ** (1 / (alpha - 1))
    return p / jnp.sum(p, axis=axis, keepdims=True)

@_entmax.defjvp
@partial(jax.jit, static_argnums=(1, 2))
def _entmax_jvp(alpha, axis, n_iter, primals, tangents):
    x = primals[0]
    dx = tangents[0]
    p = _entmax(x, alpha, axis, n_iter)
    s = jnp.where(p > 0, p ** (2 - alpha), 0)
    dy = dx * s
    g = jnp.sum(dy, axis=axis) / jnp.sum(s, axis=axis)
    dy = dy - jnp.expand_dims(g, axis) * s
    return (p, dy)

def entmax(x, alpha, axis=-1, n_iter=50):
    return _entmax(x, alpha, axis, n_iter)
WEIGHTS = numpy.array([1.0, -0.6, 2.0, 0.4], numpy.float32)

def eval_fn(x):
    return entmax(x, 1.5, axis=-1, n_iter=50) * WEIGHTS

def eval_inputs():
    return (numpy.array([[0.9, 0.1, -0.4, 0.6], [-0.2, 1.4, 0.3, 1.0]], numpy.float32),)

def eval_reference(x):
    x = numpy.asarray(x, numpy.float64)
    alpha = 1.5
    z = (alpha - 1) * x
    lo = z.max(-1, keepdims=True) - 1.0
    hi = z.max(-1, keepdims=True) - (1.0 / z.shape[-1]) ** (alpha - 1)
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        tot = (numpy.maximum(z - mid, 0) ** (1 / (alpha - 1))).sum(-1, keepdims=True)
        lo = numpy.where(tot >= 1, mid, lo)
        hi = numpy.where(tot >= 1, hi, mid)
    p = numpy.maximum(z - lo, 0) ** (1 / (alpha - 1))
    return p / p.sum(-1, keepdims=True) * WEIGHTS

def hessian_usage(*args):
    return jax.hessian(lambda *a: jnp.sum(eval_fn(*a)), argnums=0)(*args)

def eval_custom():
    return {'hessian_usage': lambda: (hessian_usage(*eval_inputs()), None)[1]}
