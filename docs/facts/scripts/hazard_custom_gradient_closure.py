"""jax.custom_gradient defined inside a function and closing over that function's values
(jax-ml/jax#24545, #25017: "custom_gradient cannot close over tracers even when they are not
differentiated"): which transformations of the enclosing function fail, for a closure in the
returned vjp function only, in the body (primal value) too, over a local computed from the
parameter, over a Python float, and with the value passed as an argument instead (VJP201)."""

from __future__ import annotations

import jax
import jax.numpy as jnp

from harness import check, header

header("custom_gradient closing over the enclosing function's values")
X = jnp.array([0.2, -0.4, 1.0])
S = 3.0


def vjp_lambda(x, scale):
    """The eval case: the vjp lambda reads `scale`; the value does not (scale is not differentiated)."""
    @jax.custom_gradient
    def scale_grad(v):
        return v, lambda g: (g * scale,)
    return jnp.sum(jnp.sin(scale_grad(x)))


def vjp_def(x, scale):
    """Same, with a local `def` as the vjp function."""
    @jax.custom_gradient
    def scale_grad(v):
        def vjp(g):
            return (g * scale,)
        return v, vjp
    return jnp.sum(jnp.sin(scale_grad(x)))


def vjp_local(x, log_scale):
    """The vjp reads a local computed from the parameter (`scale = jnp.exp(log_scale)`)."""
    scale = jnp.exp(log_scale)

    @jax.custom_gradient
    def scale_grad(v):
        return v, lambda g: (g * scale,)
    return jnp.sum(jnp.sin(scale_grad(x)))


def body_and_vjp(x, scale):
    """The body (the value) and the vjp read `scale`: its value depends on it."""
    @jax.custom_gradient
    def f(v):
        return scale * jnp.sin(v), lambda g: (g * scale * jnp.cos(v),)
    return jnp.sum(f(x))


def body_only(x, scale):
    """Only the body reads `scale`; the vjp reads only the input."""
    @jax.custom_gradient
    def f(v):
        return scale * jnp.sin(v), lambda g: (g * jnp.cos(v),)
    return jnp.sum(f(x))


def python_float(x):
    """Look-alike: the closed-over value is a Python float of the enclosing function."""
    scale = 3.0

    @jax.custom_gradient
    def scale_grad(v):
        return v, lambda g: (g * scale,)
    return jnp.sum(jnp.sin(scale_grad(x)))


def as_argument(x, scale):
    """Look-alike (the fix): `scale` is an argument of the custom_gradient; its cotangent is zero."""
    @jax.custom_gradient
    def scale_grad(v, s):
        return v, lambda g: (g * s, jnp.zeros_like(s))
    return jnp.sum(jnp.sin(scale_grad(x, scale)))


def grad_where_defined(x, scale):
    """Look-alike: the custom_gradient is only differentiated inside the enclosing function."""
    @jax.custom_gradient
    def scale_grad(v):
        return v, lambda g: (g * scale,)
    return jax.grad(lambda v: jnp.sum(jnp.sin(scale_grad(v))))(x)


def vjp_reference(x, scale):
    return jnp.cos(x) * scale


def run(name, fn, args, value, dx, dscale=None):
    print(f"## {name}")
    check(f"{name}: eager", lambda: fn(*args), value)
    check(f"{name}: jit", lambda: jax.jit(fn)(*args), value)
    if len(args) == 2:
        check(f"{name}: vmap over scale", lambda: jax.vmap(fn, (None, 0))(args[0], jnp.array([args[1]] * 2)),
              jnp.stack([value, value]))
    check(f"{name}: grad wrt x", lambda: jax.grad(fn)(*args), dx)
    check(f"{name}: jit(grad wrt x)", lambda: jax.jit(jax.grad(fn))(*args), dx)
    check(f"{name}: grad(jit) wrt x", lambda: jax.grad(jax.jit(fn))(*args), dx)
    check(f"{name}: vmap(grad wrt x)", lambda: jax.vmap(jax.grad(fn), (0,) + (None,) * (len(args) - 1))(
        jnp.stack([args[0]] * 2), *args[1:]), jnp.stack([dx, dx]))
    if len(args) == 2:
        check(f"{name}: grad wrt scale", lambda: jax.grad(fn, 1)(*args), dscale)
        check(f"{name}: jit(grad wrt scale)", lambda: jax.jit(jax.grad(fn, 1))(*args), dscale)
        check(f"{name}: grad(jit) wrt scale", lambda: jax.grad(jax.jit(fn), 1)(*args), dscale)
        check(f"{name}: value_and_grad(jit) wrt x", lambda: jax.value_and_grad(jax.jit(fn))(*args)[1], dx)
        check(f"{name}: grad(jit) wrt x, scale static", lambda: jax.grad(jax.jit(fn, static_argnums=1))(*args), dx)
        check(f"{name}: grad(jit(checkpoint)) wrt x", lambda: jax.grad(jax.jit(jax.checkpoint(fn)))(*args), dx)


run("vjp lambda reads scale", vjp_lambda, (X, S), jnp.sum(jnp.sin(X)), jnp.cos(X) * S, 0.0)
run("vjp def reads scale", vjp_def, (X, S), jnp.sum(jnp.sin(X)), jnp.cos(X) * S, 0.0)
run("vjp reads jnp.exp(log_scale)", vjp_local, (X, jnp.log(S)), jnp.sum(jnp.sin(X)), jnp.cos(X) * S, 0.0)
run("body and vjp read scale", body_and_vjp, (X, S), S * jnp.sum(jnp.sin(X)), S * jnp.cos(X),
    jnp.sum(jnp.sin(X)))
run("body only reads scale", body_only, (X, S), S * jnp.sum(jnp.sin(X)), jnp.cos(X), jnp.sum(jnp.sin(X)))
run("python float 3.0 closed over", python_float, (X,), jnp.sum(jnp.sin(X)), jnp.cos(X) * S)
run("scale passed as an argument", as_argument, (X, S), jnp.sum(jnp.sin(X)), jnp.cos(X) * S, 0.0)
print("## differentiated where defined: outer(x, scale) = grad(custom_gradient fn)(x)")
check("where defined: eager", lambda: grad_where_defined(X, S), jnp.cos(X) * S)
check("where defined: jit", lambda: jax.jit(grad_where_defined)(X, S), jnp.cos(X) * S)
check("where defined: grad(jit(sum)) wrt x", lambda: jax.grad(lambda x, s: jnp.sum(jax.jit(grad_where_defined)(x, s)))(X, S),
      -jnp.sin(X) * S)
check("where defined: grad(jit(sum)) wrt scale",
      lambda: jax.grad(lambda x, s: jnp.sum(jax.jit(grad_where_defined)(x, s)), 1)(X, S), jnp.sum(jnp.cos(X)))

print("## other staging transformations under grad (vjp lambda reads scale)")
check("grad(checkpoint) wrt x", lambda: jax.grad(jax.checkpoint(vjp_lambda))(X, S), jnp.cos(X) * S)
check("grad(scan over traced scales) wrt x", lambda: jax.grad(lambda x, s: jax.lax.scan(
    lambda c, si: (c + vjp_lambda(x, si), None), 0.0, jnp.array([s]))[0])(X, S), jnp.cos(X) * S)
check("grad(scan body closing over scale) wrt x", lambda: jax.grad(lambda x, s: jax.lax.scan(
    lambda c, _: (c + vjp_lambda(x, s), None), 0.0, None, length=1)[0])(X, S), jnp.cos(X) * S)
check("grad(vmap over scale) wrt x", lambda: jax.grad(lambda x, s: jax.vmap(vjp_lambda, (None, 0))(
    x, jnp.array([s])).sum())(X, S), jnp.cos(X) * S)
check("grad(jit) with scale a Python float closed in", lambda: jax.grad(jax.jit(lambda x: vjp_lambda(x, S)))(X),
      jnp.cos(X) * S)


def as_argument_none(x, scale):
    @jax.custom_gradient
    def scale_grad(v, s):
        return v, lambda g: (g * s, None)
    return jnp.sum(jnp.sin(scale_grad(x, scale)))


check("argument, vjp returns None for it: grad(jit) wrt x", lambda: jax.grad(jax.jit(as_argument_none))(X, S),
      jnp.cos(X) * S)
check("argument, vjp returns None for it: grad wrt scale", lambda: jax.grad(as_argument_none, 1)(X, S), 0.0)
