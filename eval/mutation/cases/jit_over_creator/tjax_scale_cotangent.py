"""tjax: `scale_cotangent(x, scalar_scale=None, tree_scale=None)`, the identity whose cotangent is
scaled by a scalar and/or a matching tree, defined with tjax's own `custom_jvp` shim class through
`@partial(custom_jvp, nondiff_argnums=(1, 2))`: the shim wraps `jax.custom_jvp(func,
nondiff_argnums=...)` and forwards `defjvp` and `__call__(*args, **kwargs)`. Both scales are
nondiff and default to `None`; callers pass them by keyword (`negate_cotangent` calls
`scale_cotangent(x, scalar_scale=-1)`, a Python int), and `tree_scale` may be a pytree of
arrays. The rule, registered by the statement `scale_cotangent.defjvp(_scale_cotangent_jvp)`,
takes the two scales first, unpacks `(x,) = primals` and `(x_dot,) = tangents` and returns `x`
and the scaled tangent (tjax's `scale_tree`); `x` may be any pytree. Deliberately not the
derivative: `eval_grad_reference` gives what it means.

Adapted from NeilGirdhar/tjax:tjax/_src/cotangent_tools.py:14 (commit 2951efe), with the shim of
tjax/_src/shims.py (`custom_jvp`) and `scale_tree` of tjax/_src/tree_tools.py:40. Changed: PEP 695
type parameters (Python 3.12) dropped for Python 3.11; the shim's `update_wrapper` told the
standard assignments only. The caller negates the cotangent of one leaf of a pair (a gradient
reversal) and scales the other pair by a per-leaf tree (fixed arrays) and a float.
"""
from __future__ import annotations
import functools
from functools import partial, update_wrapper
import operator
import jax
import jax.numpy as jnp
import numpy
from jax import tree
EVAL = {'id': 'mutation/jit_over_creator/tjax_scale_cotangent', 'family': 'mutation', 'expect': 'unknown', 'library': 'tjax', 'source': 'NeilGirdhar/tjax:tjax/_src/cotangent_tools.py:14', 'argnums': (0, 1), 'extra': ['jvp', 'jacfwd'], 'operator': 'jit_over_creator', 'base': 'tjax_scale_cotangent'}

class custom_jvp:
    """A shim class over jax.custom_jvp.

    Args:
        func: The function to decorate.
        nondiff_argnums: The indices of the non-differentiated arguments.
    """

    def __init__(self, func, *, nondiff_argnums=()):
        super().__init__()
        nondiff_argnums = tuple(sorted(nondiff_argnums))
        self.jvp = jax.custom_jvp(func, nondiff_argnums=nondiff_argnums)
        _ = update_wrapper(self, func)

    def defjvp(self, jvp):
        _ = self.jvp.defjvp(jvp)

    def __call__(self, /, *args, **kwargs):
        return self.jvp(*args, **kwargs)

def scale_tree(x, *, scalar_scale=None, tree_scale=None):
    if scalar_scale is not None:
        x = tree.map(lambda x_i: x_i * scalar_scale, x)
    if tree_scale is not None:
        x = tree.map(operator.mul, x, tree_scale)
    return x

@jax.jit
@partial(custom_jvp, nondiff_argnums=(1, 2))
def scale_cotangent(x, scalar_scale=None, tree_scale=None):
    """Scale x's cotangent."""
    return x

def _scale_cotangent_jvp(scalar_scale, tree_scale, primals, tangents):
    x, = primals
    x_dot, = tangents
    return (x, scale_tree(x_dot, scalar_scale=scalar_scale, tree_scale=tree_scale))
scale_cotangent.defjvp(_scale_cotangent_jvp)

def negate_cotangent(x):
    """Return x while negating the cotangent sent back to x."""
    return scale_cotangent(x, scalar_scale=-1)
TREE_SCALE = (numpy.array([0.5, 2.0, 1.5], numpy.float32), numpy.array([3.0, -1.0, 0.25], numpy.float32))

def eval_fn(a, b):
    u = negate_cotangent(a)
    p, q = scale_cotangent((a, b), scalar_scale=0.5, tree_scale=TREE_SCALE)
    return jnp.sin(u) * b + p * q

def eval_inputs():
    return (numpy.array([0.4, -1.1, 0.9], numpy.float32), numpy.array([1.3, 0.6, -0.8], numpy.float32))

def eval_reference(a, b):
    a, b = (numpy.asarray(a, numpy.float64), numpy.asarray(b, numpy.float64))
    return numpy.sin(a) * b + a * b

def eval_grad_reference(a, b):
    a, b = (numpy.asarray(a, numpy.float64), numpy.asarray(b, numpy.float64))
    s_a, s_b = (numpy.asarray(s, numpy.float64) * 0.5 for s in TREE_SCALE)
    return (-numpy.cos(a) * b + s_a * b, numpy.sin(a) + s_b * a)
