"""Structure hazards that tuple literals do not show (issues 14 and 18): the fwd's primal output
against the primal's return (list vs tuple, tuple of N vs one array), callables in residuals, a
jvp tangent whose rank differs from the primal output, a bwd returning the output cotangent of a
full reduction, defjvps rules and integer primals, defjvps with fewer rules than arguments."""

from __future__ import annotations

from functools import partial

import jax
import jax.numpy as jnp
import numpy as np

from harness import check, header

header("structure through values")
X = jnp.array([0.5, 1.5])


def transforms(tag, f, x=X, ref=None):
    loss = lambda v: jnp.sum(jnp.stack(jax.tree_util.tree_leaves(f(v))))  # noqa: E731
    check(f"{tag}: grad", lambda: jax.grad(loss)(x), ref)
    check(f"{tag}: jit(grad)", lambda: jax.jit(jax.grad(loss))(x), ref)
    check(f"{tag}: grad(jit)", lambda: jax.grad(jax.jit(loss))(x), ref)
    check(f"{tag}: vmap(grad)", lambda: jax.vmap(jax.grad(loss))(jnp.stack([x, x])))

    def scanned(v):
        body = jax.checkpoint(lambda c, _: (c + loss(v), None))
        return jax.lax.scan(body, 0.0, None, length=2)[0]
    check(f"{tag}: grad(scan(checkpoint))", lambda: jax.grad(scanned)(x))


# 1. primal returns a list, fwd's primal output is a tuple (and the reverse)
def pair(primal_list: bool, fwd_list: bool):
    @jax.custom_vjp
    def f(x):
        return [2.0 * x, x * x] if primal_list else (2.0 * x, x * x)

    def f_fwd(x):
        out = [2.0 * x, x * x] if fwd_list else (2.0 * x, x * x)
        return out, x

    def f_bwd(x, cts):
        a, b = cts
        return (2.0 * a + 2.0 * x * b,)

    f.defvjp(f_fwd, f_bwd)
    return f


REF_PAIR = 2.0 + 2.0 * X
for p, w in ((True, False), (False, True), (True, True), (False, False)):
    transforms(f"primal {'list' if p else 'tuple'}, fwd out {'list' if w else 'tuple'}", pair(p, w), ref=REF_PAIR)


# 2. primal returns a tuple of 3, fwd's primal output is one array / a tuple of 2
def triple(fwd_out: str):
    @jax.custom_vjp
    def f(x):
        return jnp.sin(x), jnp.cos(x), x

    def f_fwd(x):
        a, b, c = f(x)
        return (a if fwd_out == "array" else (a, b) if fwd_out == "pair" else (a, b, c)), x

    def f_bwd(x, g):
        return (g[0] * jnp.cos(x) - g[1] * jnp.sin(x) + g[2],) if isinstance(g, tuple) and len(g) == 3 else \
            (jnp.zeros_like(x),)

    f.defvjp(f_fwd, f_bwd)
    return f


for out in ("array", "pair", "triple"):
    f3 = triple(out)
    check(f"primal 3-tuple, fwd out {out}: grad of f(x)[0].sum()",
          lambda: jax.grad(lambda v: jnp.sum(f3(v)[0]))(X), jnp.cos(X))
    check(f"primal 3-tuple, fwd out {out}: jit(grad) of f(x)[0].sum()",
          lambda: jax.jit(jax.grad(lambda v: jnp.sum(f3(v)[0])))(X), jnp.cos(X))
    check(f"primal 3-tuple, fwd out {out}: grad(jit) of f(x)[0].sum()",
          lambda: jax.grad(jax.jit(lambda v: jnp.sum(f3(v)[0])))(X), jnp.cos(X))
    check(f"primal 3-tuple, fwd out {out}: grad of f(x)[2].sum()", lambda: jax.grad(lambda v: jnp.sum(f3(v)[2]))(X))
    check(f"primal 3-tuple, fwd out {out}: eager call", lambda: f3(X))


# 3. callables in the residuals
def with_residual(kind: str):
    @partial(jax.custom_vjp, nondiff_argnums=(0,))
    def f(fn, x):
        return fn(x)

    def f_fwd(fn, x):
        res = {"nondiff": fn, "lambda": (lambda v: v), "partial": jax.tree_util.Partial(jnp.multiply, 2.0),
               "def": jnp.cos, "array": x}[kind]
        return fn(x), (x, res)

    def f_bwd(fn, res, g):
        x, _ = res
        return (jax.vjp(fn, x)[1](g)[0],)

    f.defvjp(f_fwd, f_bwd)
    return f


def double(v):
    return 2.0 * v


for kind in ("nondiff", "lambda", "def", "partial", "array"):
    fr = with_residual(kind)
    check(f"residual holds a {kind}: eager call", lambda: fr(double, X))
    check(f"residual holds a {kind}: grad", lambda: jax.grad(lambda v: jnp.sum(fr(double, v)))(X), 2.0 + 0 * X)
    check(f"residual holds a {kind}: jit(grad)", lambda: jax.jit(jax.grad(lambda v: jnp.sum(fr(double, v))))(X))
    check(f"residual holds a {kind}: jvp", lambda: jax.jvp(lambda v: fr(double, v), (X,), (X,)))


# 4. custom_jvp tangent whose rank differs from the primal output's
def jvp_rule(tangent: str):
    @jax.custom_jvp
    def f(q):
        return jnp.logaddexp(q[0], 0.0)

    @f.defjvp
    def f_jvp(primals, tangents):
        (q,), (q_dot,) = primals, tangents
        t = jax.nn.sigmoid(q) * q_dot if tangent == "full" else jax.nn.sigmoid(q[0]) * q_dot[0]
        return f(q), t

    return f


Q = jnp.array([0.3])
for tangent in ("full", "indexed"):
    fj = jvp_rule(tangent)
    check(f"jvp tangent {tangent} (q of shape (1,)): eager", lambda: fj(Q))
    check(f"jvp tangent {tangent} (q of shape (1,)): jvp", lambda: jax.jvp(fj, (Q,), (Q,)))
    check(f"jvp tangent {tangent} (q of shape (1,)): grad", lambda: jax.grad(fj)(Q), jax.nn.sigmoid(Q))
    check(f"jvp tangent {tangent} (q of shape (2,)): grad", lambda: jax.grad(fj)(X))


# 5. bwd returns the output cotangent of a full reduction as the input's cotangent
def total(bwd: str):
    @jax.custom_vjp
    def f(x):
        return jnp.sum(x)

    def f_fwd(x):
        return jnp.sum(x), x.shape

    def f_bwd(shape, g):
        return {"bare": (g,), "scaled": (2.0 * g / 2.0,), "broadcast": (jnp.broadcast_to(g, shape),),
                "full": (jnp.full(shape, g),)}[bwd]

    f.defvjp(f_fwd, f_bwd)
    return f


for bwd in ("bare", "scaled", "broadcast", "full"):
    ft = total(bwd)
    check(f"sum bwd returns {bwd} g: grad, x of shape (2,)", lambda: jax.grad(ft)(X), jnp.ones(2))
    check(f"sum bwd returns {bwd} g: grad, x a scalar", lambda: jax.grad(ft)(jnp.float32(2.0)), 1.0)
    check(f"sum bwd returns {bwd} g: jit(grad), x of shape (2,)", lambda: jax.jit(jax.grad(ft))(X), jnp.ones(2))


# 6. defjvps rules and an integer primal
def product(rule_a: str):
    @jax.custom_jvp
    def f(a, b):
        return a * b

    rules = {"product(t, b)": lambda t, _, a, b: f(t, b), "t * b": lambda t, _, a, b: t * b,
             "None": None, "t": lambda t, _, a, b: t, "zeros_like(ans)": lambda t, ans, a, b: jnp.zeros_like(ans)}
    f.defjvps(rules[rule_a], lambda t, _, a, b: f(a, t))
    return f


for rule_a in ("product(t, b)", "t * b", "t", "zeros_like(ans)", "None"):
    fp = product(rule_a)
    check(f"defjvps rule for int a is {rule_a}: eager f(1, 1.5)", lambda: fp(1, 1.5))
    check(f"defjvps rule for int a is {rule_a}: grad wrt b, a=1", lambda: jax.grad(fp, 1)(1, 1.5), 1.0)
    check(f"defjvps rule for int a is {rule_a}: vjp(f, 1, 1.0)", lambda: jax.vjp(fp, 1, 1.0)[1](1.0)[1], 1.0)
    check(f"defjvps rule for int a is {rule_a}: grad wrt b, a=1.0", lambda: jax.grad(fp, 1)(1.0, 1.5), 1.0)
    check(f"defjvps rule for int a is {rule_a}: jvp, a=1", lambda: jax.jvp(lambda b: fp(1, b), (1.5,), (1.0,)))


# 7. defjvps with fewer rules than arguments
@jax.custom_jvp
def short(a, b):
    return a * b


short.defjvps(lambda t, _, a, b: t * b)
check("defjvps 1 rule for 2 args: eager", lambda: short(2.0, 3.0))
check("defjvps 1 rule for 2 args: grad wrt a", lambda: jax.grad(short, 0)(2.0, 3.0), 3.0)
check("defjvps 1 rule for 2 args: grad wrt b", lambda: jax.grad(short, 1)(2.0, 3.0), 2.0)
check("defjvps 1 rule for 2 args: jit(grad) wrt b", lambda: jax.jit(jax.grad(short, 1))(2.0, 3.0), 2.0)


# 8. bwd returns one cotangent per leaf of a single pytree argument
def params_rule(nested: bool):
    @jax.custom_vjp
    def f(params):
        w, b = params
        return w * 2.0 + b

    def f_fwd(params):
        return f(params), None

    def f_bwd(_, g):
        grads = (2.0 * g, g)
        return (grads,) if nested else grads

    f.defvjp(f_fwd, f_bwd)
    return f


for nested in (False, True):
    fpar = params_rule(nested)
    check(f"one pytree arg, bwd returns {'((gw, gb),)' if nested else '(gw, gb)'}: grad",
          lambda: jax.grad(lambda p: jnp.sum(fpar(p)))((X, X)))
    check(f"one pytree arg, bwd returns {'((gw, gb),)' if nested else '(gw, gb)'}: jit(grad)",
          lambda: jax.jit(jax.grad(lambda p: jnp.sum(fpar(p))))((X, X)))


# 9. defjvps with more rules than arguments, or forgetting a defaulted parameter
@jax.custom_jvp
def long(a, b):
    return a * b


long.defjvps(lambda t, _, a, b: t * b, lambda t, _, a, b: a * t, lambda t, _, a, b: t)
check("defjvps 3 rules for 2 args: grad wrt a", lambda: jax.grad(long, 0)(2.0, 3.0), 3.0)


@jax.custom_jvp
def safe_log(x, eps=1e-6):
    return jnp.log(x + eps)


safe_log.defjvps(lambda t, _, x, eps: t / (x + eps))
check("defjvps 1 rule, defaulted 2nd param: grad", lambda: jax.grad(safe_log)(2.0), 0.5)


# 10. bwd returns g for `x[0]` (one rank short whatever x is)
@jax.custom_vjp
def head(x):
    return 3.0 * x[0]


head.defvjp(lambda x: (3.0 * x[0], None), lambda _, g: (3.0 * g,))
check("primal x[0], bwd returns (3 * g,): grad, x of shape (2,)", lambda: jax.grad(head)(X))
