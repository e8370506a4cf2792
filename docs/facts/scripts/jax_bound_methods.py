"""jax.custom_jvp(self.fn) / jax.custom_vjp(self._f, nondiff_argnums=...) on bound methods: does self count?"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from harness import check, header

header("custom_jvp/custom_vjp on bound methods")
X = jnp.array([0.5, 1.0, 2.0])
SEEN: dict = {}


class JvpModel:
    def __init__(self, scale):
        self.scale = scale
        self.fn = jax.custom_jvp(self._fn)  # bound method: self is already bound
        self.fn.defjvp(self._fn_jvp)

    def _fn(self, x):
        return self.scale * jnp.sin(x)

    def _fn_jvp(self, primals, tangents):
        SEEN["jvp primals"] = len(primals)
        (x,), (t,) = primals, tangents
        return self._fn(x), self.scale * jnp.cos(x) * t


class VjpModel:
    def __init__(self, scale, nondiff):
        self.scale = scale
        self.f = jax.custom_vjp(self._f, nondiff_argnums=nondiff)
        self.f.defvjp(self._f_fwd, self._f_bwd)

    def _f(self, n, x):
        return self.scale * jnp.sin(x) * n

    def _f_fwd(self, n, x):
        SEEN["fwd args"] = (type(n).__name__, type(x).__name__)
        return self._f(n, x), jnp.cos(x)

    def _f_bwd(self, n, res, g):
        SEEN["bwd first"] = type(n).__name__
        return (self.scale * res * n * g,)


print("## 1. custom_jvp(self._fn)")
m = JvpModel(2.0)
check("grad", lambda: jax.grad(lambda x: m.fn(x).sum())(X), 2 * jnp.cos(X))
print(f"  jvp rule got {SEEN.pop('jvp primals')} primal(s): self is not among them")
check("jit(grad)", lambda: jax.jit(jax.grad(lambda x: m.fn(x).sum()))(X), 2 * jnp.cos(X))
check("object built inside jit with a traced scale, grad_x", lambda: jax.jit(
    lambda s: jax.grad(lambda x: JvpModel(s).fn(x).sum())(X))(2.0), 2 * jnp.cos(X))
check("grad w.r.t. the scale held by self", lambda: jax.grad(lambda s: JvpModel(s).fn(X).sum())(2.0))

print("## 2. custom_vjp(self._f, nondiff_argnums=(0,)): position 0 is n (the first parameter after self)")
v = VjpModel(2.0, (0,))
check("grad_x, n=3", lambda: jax.grad(lambda x: v.f(3, x).sum())(X), 6 * jnp.cos(X))
print(f"  fwd got (n, x) types {SEEN.pop('fwd args')}, bwd's first argument {SEEN.pop('bwd first')}")
check("jit, n passed as a jit argument", lambda: jax.jit(lambda n, x: v.f(n, x))(3, X))
check("nondiff_argnums=(1,) (x) on the bound method, eager", lambda: VjpModel(2.0, (1,)).f(3, X), 6 * jnp.sin(X))
check("nondiff_argnums=(2,) (out of range once self is bound)", lambda: VjpModel(2.0, (2,)).f(3, X))
print("## 3. the unbound function: self counts")
U = jax.custom_vjp(VjpModel._f, nondiff_argnums=(0, 1))
U.defvjp(lambda self, n, x: (self._f(n, x), jnp.cos(x)), lambda self, n, res, g: (self.scale * res * n * g,))
holder = VjpModel.__new__(VjpModel)
holder.scale = 2.0
check("custom_vjp(Class._f, nondiff_argnums=(0, 1)) called U(obj, 3, x)", lambda: jax.grad(
    lambda x: U(holder, 3, x).sum())(X), 6 * jnp.cos(X))
