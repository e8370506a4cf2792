"""custom_vjp of a staticmethod, a classmethod or a plain function reached through the class or
an instance: which parameters does JAX count (and so fwd/bwd see)?"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from harness import check, header

header("custom_vjp of staticmethods, classmethods and functions through the class")
X = jnp.array([0.5, 1.0, 2.0])


class Op:
    def __init__(self):
        self.stat = jax.custom_vjp(self._stat)  # staticmethod through self: nothing bound
        self.stat.defvjp(self._fwd, self._bwd)
        self.cls_ = jax.custom_vjp(self._cm)  # classmethod through self: cls bound
        self.cls_.defvjp(self._fwd, self._bwd)

    @staticmethod
    def _stat(x):
        return jnp.cos(x)

    @classmethod
    def _cm(cls, x):
        return jnp.cos(x)

    def _fwd(self, x):  # bound through self: x only
        return jnp.cos(x), -jnp.sin(x)

    @staticmethod
    def _bwd(res, g):
        return (g * res,)

    @classmethod
    def build(cls):
        f = jax.custom_vjp(cls._plain)  # a plain function through cls: nothing bound
        f.defvjp(lambda obj, x: (obj * jnp.cos(x), -obj * jnp.sin(x)), lambda res, g: (None, g * res))
        return f

    def _plain(self, x):  # called as P(scale, x): `self` is an ordinary argument
        return self * jnp.cos(x)


def _g(f):
    f.defvjp(lambda x: (jnp.cos(x), -jnp.sin(x)), lambda res, g: (g * res,))
    return f


op = Op()
ref = -jnp.sin(X)
check("custom_vjp(self._stat), staticmethod (x), fwd self._fwd(self, x)",
      lambda: jax.grad(lambda x: op.stat(x).sum())(X), ref)
check("custom_vjp(self._cm), classmethod (cls, x)", lambda: jax.grad(lambda x: op.cls_(x).sum())(X), ref)
check("custom_vjp(Op._stat) at module level, staticmethod (x)", lambda: jax.grad(
    lambda x: _g(jax.custom_vjp(Op._stat))(x).sum())(X), ref)
check("custom_vjp(Op._cm) at module level, classmethod (cls, x)", lambda: jax.grad(
    lambda x: _g(jax.custom_vjp(Op._cm))(x).sum())(X), ref)


P = Op.build()
check("custom_vjp(cls._plain) in a classmethod: (self, x) both counted",
      lambda: jax.grad(lambda x: P(1.0, x).sum())(X), ref)
bad = jax.custom_vjp(op._stat)
bad.defvjp(lambda: (0.0, 0.0), lambda res, g: ())
check("fwd with 0 parameters for a staticmethod (x): fails", lambda: jax.grad(lambda x: bad(x).sum())(X))
