"""Issue 18: a custom_jvp rule whose tangent output is not linear in the input tangents (VJP601).
f(x) = x**2 (true derivative 2x); each rule returns (x**2, T(x, t)) for the tangent form T."""

from __future__ import annotations

import jax
import jax.numpy as jnp

from harness import check, header

header("nonlinear custom_jvp tangents")

FORMS = {
    # linear look-alikes
    "2*x*t (linear)": lambda x, t: 2.0 * x * t,
    "where(x != 0, 2*x*t, 0) (linear)": lambda x, t: jnp.where(x != 0, 2.0 * x * t, 0.0),
    "sum-free 2*x*t/1 + 0*t (linear)": lambda x, t: 2.0 * x * t / 1.0 + 0.0 * t,
    "t * 2x then astype (linear)": lambda x, t: (t * 2.0 * x).astype(jnp.float32),
    # nonlinear in t
    "2*x*t*t (product of tangents)": lambda x, t: 2.0 * x * t * t,
    "2*x*t**2 (tangent squared)": lambda x, t: 2.0 * x * t ** 2,
    "abs(2*x*t)": lambda x, t: jnp.abs(2.0 * x * t),
    "nan_to_num(2*x*t)": lambda x, t: jnp.nan_to_num(2.0 * x * t),
    "sin(2*x*t)": lambda x, t: jnp.sin(2.0 * x * t),
    "2*x/t (tangent in a denominator)": lambda x, t: 2.0 * x / t,
    "2*x*t + x (tangent-independent term)": lambda x, t: 2.0 * x * t + x,
    "2*x*t + 1.0 (constant term)": lambda x, t: 2.0 * x * t + 1.0,
    "maximum(2*x*t, 0)": lambda x, t: jnp.maximum(2.0 * x * t, 0.0),
}


def make(form):
    @jax.custom_jvp
    def f(x):
        return x ** 2

    @f.defjvp
    def f_jvp(primals, tangents):
        (x,), (t,) = primals, tangents
        return x ** 2, form(x, t)

    return f


X = jnp.array([1.5, -0.5])
for label, form in FORMS.items():
    f = make(form)
    loss = lambda v: jnp.sum(f(v))  # noqa: E731
    print(f"## {label}")
    check(f"{label}: jvp, tangent ones", lambda: jax.jvp(f, (X,), (jnp.ones(2),))[1], 2.0 * X)
    check(f"{label}: jvp, tangent 3", lambda: jax.jvp(f, (X,), (3.0 * jnp.ones(2),))[1], 6.0 * X)
    check(f"{label}: grad", lambda: jax.grad(loss)(X), 2.0 * X)
    check(f"{label}: jit(grad)", lambda: jax.jit(jax.grad(loss))(X), 2.0 * X)
    check(f"{label}: jacfwd", lambda: jax.jacfwd(f)(X), jnp.diag(2.0 * X))


@jax.custom_vjp
def lin_vjp(t):
    return 2.0 * t


lin_vjp.defvjp(lambda t: (2.0 * t, None), lambda _, g: (2.0 * g,))


@jax.custom_jvp
def g(x):
    return x ** 2


@g.defjvp
def g_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    return x ** 2, x * lin_vjp(t)


print("## a custom_vjp applied to the tangent (linear in t, but a custom_vjp)")
check("custom_vjp of t: jvp", lambda: jax.jvp(g, (X,), (jnp.ones(2),))[1], 2.0 * X)
check("custom_vjp of t: grad", lambda: jax.grad(lambda v: jnp.sum(g(v)))(X), 2.0 * X)
check("custom_vjp of t: jit(grad)", lambda: jax.jit(jax.grad(lambda v: jnp.sum(g(v))))(X), 2.0 * X)
