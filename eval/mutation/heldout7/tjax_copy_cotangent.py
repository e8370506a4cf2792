"""tjax: `copy_cotangent(x, y)`, which outputs `x` and sends `x`'s cotangent to `y` as well, defined
with tjax's own `custom_vjp` shim class used as a bare decorator (`@custom_vjp`): the shim wraps
`jax.custom_vjp(func, nondiff_argnums=static_argnums)` in an object whose `defvjp` forwards to
the JAX object and whose `__call__` passes `*args, **kwargs` on (`functools.update_wrapper`
copies the function's metadata onto it). Both arguments are pytrees of the same structure
(checked with `tree.structure` in the primal and the forward rule); the forward rule keeps no
residuals (`x, None`), and the backward rule, `del residuals`, returns `(x_bar, x_bar)`: the one
cotangent for both arguments. The rule is deliberately not the derivative (the primal ignores
`y`): `eval_grad_reference` gives what it means.

Adapted from NeilGirdhar/tjax:tjax/_src/cotangent_tools.py:98 (commit 2951efe), with the shim
class of tjax/_src/shims.py:25. Changed: PEP 695 type parameters (`def f[X](...)`, Python 3.12)
dropped for Python 3.11; the shim's ParamSpec generics dropped and its `update_wrapper` told the
standard assignments only (tjax adds its own markers). The caller copies the cotangent of a
pair `(a, b)` to a second pair `(c, d)` that feeds a separate branch (as a target network's
parameters are given the online network's gradient).
"""
from __future__ import annotations

import functools
from functools import update_wrapper

import jax
import jax.numpy as jnp
import numpy
from jax import tree

EVAL = {'id': 'mutation/tjax_copy_cotangent', 'family': 'mutation', 'expect': 'ok', 'library': 'tjax', 'source': 'NeilGirdhar/tjax:tjax/_src/cotangent_tools.py:98', 'argnums': (0, 1, 2, 3), 'extra': ['grad_jit']}


class custom_vjp:
    """A shim class over jax.custom_vjp.

    Args:
        func: The function to decorate.
        static_argnums: The indices of the static arguments.
    """

    def __init__(self, func, *, static_argnums=()):
        super().__init__()
        static_argnums = tuple(sorted(static_argnums))
        self.vjp = jax.custom_vjp(func, nondiff_argnums=static_argnums)
        _ = update_wrapper(self, func)

    def defvjp(self, fwd, bwd):
        self.vjp.defvjp(fwd, bwd)

    def __call__(self, /, *args, **kwargs):
        return self.vjp(*args, **kwargs)


@custom_vjp
def copy_cotangent(x, y):
    """Output x, and copy its cotangent to y."""
    assert tree.structure(x) == tree.structure(y)
    return x


def _copy_cotangent_fwd(x, y):
    assert tree.structure(x) == tree.structure(y)
    return x, None


def _copy_cotangent_bwd(residuals, x_bar):
    del residuals
    return x_bar, x_bar


copy_cotangent.defvjp(_copy_cotangent_fwd, _copy_cotangent_bwd)


def eval_fn(a, b, c, d):
    u, v = copy_cotangent((a, b), (c, d))
    return u ** 2 + jnp.sin(v)


def eval_inputs():
    return (numpy.array([0.5, -1.2, 0.8], numpy.float32), numpy.array([1.1, 0.3, -0.7], numpy.float32),
            numpy.array([0.2, 0.9, -0.4], numpy.float32), numpy.array([-0.6, 0.1, 1.4], numpy.float32))


def eval_reference(a, b, c, d):
    a, b = numpy.asarray(a, numpy.float64), numpy.asarray(b, numpy.float64)
    return a ** 2 + numpy.sin(b)


def eval_grad_reference(a, b, c, d):
    a, b = numpy.asarray(a, numpy.float64), numpy.asarray(b, numpy.float64)
    ga, gb = 2 * a, numpy.cos(b)
    return (ga, gb, ga, gb)
