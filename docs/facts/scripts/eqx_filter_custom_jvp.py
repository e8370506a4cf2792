"""equinox.filter_custom_jvp (def_jvp) and equinox.filter_closure_convert."""

from __future__ import annotations

import equinox as eqx
import jax
import jax.numpy as jnp

from harness import check, header

header("equinox.filter_custom_jvp / filter_closure_convert")
X = jnp.array([0.5, 1.0, 2.0])
SEEN: dict = {}


def make(rule):
    @eqx.filter_custom_jvp
    def f(x, a, n, *, fn=jnp.sin):
        return fn(x) * a * n

    f.def_jvp(rule)
    return f


def good_rule(primals, tangents, *, fn=jnp.sin):
    SEEN["tangents"] = jax.tree.map(lambda t: type(t).__name__, tangents, is_leaf=lambda t: t is None)
    x, a, n = primals
    tx, ta, tn = tangents
    out = fn(x) * a * n
    t_out = jnp.zeros_like(out) if tx is None else jnp.cos(x) * a * n * tx  # d/dx assumes fn = sin
    if ta is not None:
        t_out = t_out + fn(x) * n * ta
    return out, t_out


f = make(good_rule)
A = jnp.float32(2.0)
print("## 1. correct use (f(x, a, n, *, fn) = fn(x) * a * n; n an int, fn a callable)")
check("grad_x", lambda: jax.grad(lambda x: f(x, A, 3).sum())(X), jnp.cos(X) * 6)
print(f"  rule's tangents (x, a, n) = {SEEN.pop('tangents')}")
check("grad_a (a float array, differentiated)", lambda: jax.grad(lambda a: f(X, a, 3).sum())(A), jnp.sin(X).sum() * 3)
print(f"  rule's tangents (x, a, n) = {SEEN.pop('tangents')}")
check("jvp in x", lambda: jax.jvp(lambda x: f(x, A, 3), (X,), (jnp.ones(3),))[1], jnp.cos(X) * 6)
check("jit(grad_x), a traced", lambda: jax.jit(jax.grad(lambda x, a: f(x, a, 3).sum()))(X, A), jnp.cos(X) * 6)
check("vmap over a", lambda: jax.vmap(lambda a: f(X, a, 3).sum())(jnp.array([1.0, 2.0])),
      jnp.sin(X).sum() * 3 * jnp.array([1.0, 2.0]))
check("int array n (jnp.int32), grad_x", lambda: jax.grad(lambda x: f(x, A, jnp.int32(3)).sum())(X), jnp.cos(X) * 6)
print(f"  rule's tangents (x, a, n) = {SEEN.pop('tangents')}")
check("keyword fn=jnp.tanh reaches the rule (jvp primal out)", lambda: jax.jvp(
    lambda x: f(x, A, 3, fn=jnp.tanh), (X,), (jnp.ones(3),))[0], jnp.tanh(X) * 6)

print("## 2. misuse")
check("keyword argument that is a differentiated array", lambda: jax.grad(
    lambda s: make(lambda p, t, *, fn: good_rule(p, t, fn=fn))(X, A, 3, fn=lambda v: s * jnp.sin(v)).sum())(2.0))


@eqx.filter_custom_jvp
def g_kw(x, *, scale):
    return x * scale


g_kw.def_jvp(lambda p, t, *, scale: (p[0] * scale, t[0] * scale))
check("keyword array scale=, grad w.r.t. scale", lambda: jax.grad(lambda s: g_kw(X, scale=s).sum())(2.0))
check("keyword array scale=, grad w.r.t. x", lambda: jax.grad(lambda x: g_kw(x, scale=A).sum())(X), 2 * jnp.ones(3))
check("rule JAX-nondiff style rule(n, primals, tangents)", lambda: jax.grad(
    lambda x: make(lambda n, p, t: good_rule(p, t))(x, A, 3).sum())(X))
check("rule returns the tangent only", lambda: jax.grad(
    lambda x: make(lambda p, t, *, fn=jnp.sin: good_rule(p, t)[1])(x, A, 3).sum())(X))
check("rule returns (out, (t_out, 1.0)): tangent tree != out tree", lambda: jax.grad(
    lambda x: make(lambda p, t, *, fn=jnp.sin: (good_rule(p, t)[0], (good_rule(p, t)[1], 1.0)))(x, A, 3).sum())(X))
check("rule tangent treats a None tangent as an array", lambda: jax.grad(
    lambda x: make(lambda p, t, *, fn=jnp.sin: (p[0] * p[1] * p[2], t[0] * t[1]))(x, A, 3).sum())(X))


@eqx.filter_custom_jvp
def no_rule(x):
    return x


check("call before def_jvp", lambda: no_rule(X))
check("grad before def_jvp", lambda: jax.grad(lambda x: no_rule(x).sum())(X))
check("defjvps", lambda: no_rule.defjvps(lambda t, ans, x: t))
check("def_jvp returns", lambda: repr(make(good_rule).def_jvp(good_rule)))

print("## 3. filter_closure_convert (hoisting closed-over tracers)")


def outer(c, x):
    fn = eqx.filter_closure_convert(lambda v: c * jnp.sin(v), x)
    leaves = jax.tree_util.tree_leaves(fn)
    SEEN["leaves"] = [type(leaf).__name__ for leaf in leaves]
    return fn(x).sum()


check("grad_c of a converted closure (no custom rule)", lambda: jax.grad(outer)(2.0, X), jnp.sin(X).sum())
print(f"  converted fn's pytree leaves: {SEEN.pop('leaves')}")
check("jit(grad_c)", lambda: jax.jit(jax.grad(outer))(2.0, X), jnp.sin(X).sum())


@jax.custom_vjp
def apply_nd(fn, x):
    return fn(x)


apply_nd.defvjp(lambda fn, x: (fn(x), (fn, x)), lambda res, g: (None, jax.vjp(res[0], res[1])[1](g)[0]))
NON_DIFF = jax.custom_vjp(lambda fn, x: fn(x), nondiff_argnums=(0,))
NON_DIFF.defvjp(lambda fn, x: (fn(x), x), lambda fn, x, g: (jax.vjp(fn, x)[1](g)[0],))


def converted_into_nondiff(c, x):
    fn = eqx.filter_closure_convert(lambda v: c * jnp.sin(v), x)
    return NON_DIFF(fn, x).sum()


check("converted fn in jax.custom_vjp nondiff slot, grad_x, c concrete",
      lambda: jax.grad(converted_into_nondiff, argnums=1)(2.0, X), 2 * jnp.cos(X))
check("same, jit(grad_x) (c a jit tracer)", lambda: jax.jit(jax.grad(converted_into_nondiff, argnums=1))(2.0, X))
check("converted fn with no closure: trivial (no consts)", lambda: jax.tree_util.tree_leaves(
    eqx.filter_closure_convert(lambda v: jnp.sin(v), X)))
check("example args mismatch: call with a different shape", lambda: eqx.filter_closure_convert(
    lambda v: A * jnp.sin(v), X)(jnp.ones(4)))
