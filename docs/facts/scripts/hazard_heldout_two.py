"""Four hazards of the second held-out round, measured before the rules that catch them.

1. forward mode (jvp/jacfwd) of an object whose `__call__` runs a custom_vjp (VJP315);
2. a custom_jvp rule returning one of its primal inputs unchanged as the primal output (VJP603);
3. `lax.stop_gradient` applied to tangents in a custom_jvp rule (VJP601);
4. a custom_jvp rule passing its tangent back through the custom_jvp itself."""

from __future__ import annotations

import jax
import jax.numpy as jnp

from harness import check, header

header("second held-out round")
X = jnp.array([0.4, -0.3, 1.2])
ONES = jnp.ones(3)


# -- 1. forward mode through an object's __call__ -------------------------------------------
@jax.custom_vjp
def scaled_tanh(x):
    return jnp.tanh(2.0 * x)


scaled_tanh.defvjp(lambda x: (jnp.tanh(2.0 * x), x), lambda x, g: (2.0 * (1.0 - jnp.tanh(2.0 * x) ** 2) * g,))


class Layer:
    def __call__(self, x):
        return scaled_tanh(x)


class HoldsRule:
    def __init__(self):
        self.apply = jax.custom_vjp(self._impl)
        self.apply.defvjp(self._fwd, self._bwd)

    @staticmethod
    def _impl(x):
        return jnp.cos(x)

    @staticmethod
    def _fwd(x):
        return jnp.cos(x), x

    @staticmethod
    def _bwd(x, g):
        return (-jnp.sin(x) * g,)

    def __call__(self, x):
        return self.apply(x)


def through_def(v):
    return scaled_tanh(v)


layer, holds = Layer(), HoldsRule()
print("## 1. forward mode through __call__")
check("jacfwd(instance)", lambda: jax.jacfwd(layer)(X))
check("jacrev(instance)", lambda: jax.jacrev(layer)(X))
check("jacfwd(lambda v: instance(v))", lambda: jax.jacfwd(lambda v: layer(v))(X))
check("jacfwd(lambda v: def calling custom_vjp)", lambda: jax.jacfwd(lambda v: through_def(v))(X))
check("jvp(instance storing custom_vjp in __init__)", lambda: jax.jvp(holds, (X,), (ONES,)))
check("grad(sum of instance storing custom_vjp)", lambda: jax.grad(lambda v: holds(v).sum())(X), -jnp.sin(X))
check("jvp(lambda v: instance(constant) * v)", lambda: jax.jvp(lambda v: layer(X) * v, (X,), (ONES,)))


# -- 2. the rule's primal output is a raw input ---------------------------------------------
def binarizer(rule):
    @jax.custom_jvp
    def binarize(z):
        return jnp.where(z > 0.0, 1.0, -1.0)

    binarize.defjvp(lambda p, t: rule(binarize, p[0], t[0]))
    return binarize


RULES = {
    "returns the raw input": lambda f, z, dz: (z, dz),
    "returns f(z) (straight-through)": lambda f, z, dz: (f(z), dz),
    "returns the same formula as the primal": lambda f, z, dz: (jnp.where(z > 0.0, 1.0, -1.0), dz),
}
print("## 2. primal output of a custom_jvp rule")
for label, rule in RULES.items():
    f = binarizer(rule)
    sign = jnp.where(X > 0.0, 1.0, -1.0)
    check(f"{label}: f(x)", lambda: f(X), sign)
    check(f"{label}: jvp primal", lambda: jax.jvp(f, (X,), (ONES,))[0], sign)
    check(f"{label}: value_and_grad value", lambda: jax.value_and_grad(lambda v: f(v).sum())(X)[0], sign.sum())
    check(f"{label}: grad of (f - 1)**2", lambda: jax.grad(lambda v: ((f(v) - 1.0) ** 2).sum())(X),
          2.0 * (sign - 1.0))


@jax.custom_jvp
def ident(z):
    return z


ident.defjvp(lambda p, t: (p[0], t[0]))
check("identity primal returning the input: grad", lambda: jax.grad(lambda v: ident(v).sum())(X), ONES)


# -- 3. stop_gradient on tangents -------------------------------------------------------------
def half_square_with(tangent_of):
    @jax.custom_jvp
    def half_square(x):
        return 0.5 * x ** 2

    @half_square.defjvp
    def _jvp(primals, tangents):
        (x,), (dx,) = primals, tangent_of(tangents)
        return half_square(x), x * dx

    return half_square


SG = {
    "stop_gradient(tangents)": lambda t: jax.lax.stop_gradient(t),
    "(stop_gradient(t),)": lambda t: (jax.lax.stop_gradient(t[0]),),
    "tangents (no stop_gradient)": lambda t: t,
}
print("## 3. stop_gradient on tangents")
for label, tangent_of in SG.items():
    f = half_square_with(tangent_of)
    check(f"{label}: jvp", lambda: jax.jvp(f, (X,), (ONES,))[1], X)
    check(f"{label}: jacfwd", lambda: jax.jacfwd(f)(X), jnp.diag(X))
    check(f"{label}: grad", lambda: jax.grad(lambda v: f(v).sum())(X), X)
    check(f"{label}: jit(grad)", lambda: jax.jit(jax.grad(lambda v: f(v).sum()))(X), X)
    check(f"{label}: linearize applied", lambda: jax.linearize(f, X)[1](ONES), X)


@jax.custom_jvp
def sg_primal(x):
    return 0.5 * x ** 2


@sg_primal.defjvp
def _sg_primal_jvp(primals, tangents):
    (x,), (dx,) = primals, tangents
    return sg_primal(x), jax.lax.stop_gradient(x) * dx


check("stop_gradient on the primal only: grad", lambda: jax.grad(lambda v: sg_primal(v).sum())(X), X)


@jax.custom_jvp
def scaled_norm(x, scale):
    return scale * jnp.sqrt(jnp.sum(x ** 2))


@scaled_norm.defjvp
def _scaled_norm_jvp(primals, tangents):
    (x, scale), (dx, dscale) = primals, tangents
    norm = jnp.sqrt(jnp.sum(x ** 2))
    return scale * norm, scale * jnp.dot(x, dx) / norm + jax.lax.stop_gradient(dscale) * norm


check("stop_gradient on one input's tangent: grad wrt the other", lambda: jax.grad(lambda v: scaled_norm(v, 2.0))(X),
      2.0 * X / jnp.linalg.norm(X))
check("stop_gradient on one input's tangent: grad wrt that input", lambda: jax.grad(lambda s: scaled_norm(X, s))(2.0),
      jnp.linalg.norm(X))


# -- 4. a selection whose condition reads a tangent ----------------------------------------------
W = jnp.array([3.0, 0.0, -2.0])


def weighted_with(tangent_of):
    @jax.custom_jvp
    def weight_no_nan(x, w):
        return jax.lax.select(jnp.equal(w, 0.0), jnp.zeros_like(x), x * w)

    @weight_no_nan.defjvp
    def _jvp(primals, tangents):
        (x, w), (dx, dw) = primals, tangents
        return weight_no_nan(x, w), tangent_of(weight_no_nan, x, w, dx, dw)

    return weight_no_nan


SELECT = {
    "f(dx, w) + f(x, dw) (condition reads dw)": lambda f, x, w, dx, dw: f(dx, w) + f(x, dw),
    "where(dw == 0, 0, x * w)": lambda f, x, w, dx, dw: jnp.where(dw == 0.0, 0.0, x * w),
    "where(w == 0, 0, dx * w + x * dw)": lambda f, x, w, dx, dw: jnp.where(w == 0.0, 0.0, dx * w + x * dw),
    "select(w == 0, zeros_like(x), x * dw)": lambda f, x, w, dx, dw: jax.lax.select(
        w == 0.0, jnp.zeros_like(x), x * dw),
}
print("## 4. a selection on a tangent")
TRUE_DW = jnp.where(W == 0.0, 0.0, X * 2.0)
for label, tangent_of in SELECT.items():
    f = weighted_with(tangent_of)
    check(f"{label}: jvp in w (dw = 2)", lambda: jax.jvp(lambda w: f(X, w), (W,), (2.0 * ONES,))[1], TRUE_DW)
    check(f"{label}: grad in x", lambda: jax.grad(lambda x: jnp.sum(f(x, W) ** 2))(X))
    check(f"{label}: grad in w", lambda: jax.grad(lambda w: jnp.sum(f(X, w) ** 2))(W))


@jax.custom_jvp
def times(x, w):
    return x * w


@times.defjvp
def _times_jvp(primals, tangents):
    (x, w), (dx, dw) = primals, tangents
    return times(x, w), times(dx, w) + times(x, dw)


@jax.custom_jvp
def double(t):
    return 2.0 * t


double.defjvp(lambda p, t: (2.0 * p[0], 2.0 * t[0]))


@jax.custom_jvp
def square(x):
    return x ** 2


square.defjvp(lambda p, t: (p[0] ** 2, p[0] * double(t[0])))
print("## 5. a custom_jvp with a linear body called on tangents")
check("times(dx, w) + times(x, dw): grad in w", lambda: jax.grad(lambda w: jnp.sum(times(X, w) ** 2))(W),
      2.0 * X * X * W)
check("x * double(t): grad", lambda: jax.grad(lambda x: jnp.sum(square(x)))(X), 2.0 * X)
