"""Issue 15: a candidate fix for VJP105 (a callable in a nondiff slot capturing traced values) with
jax.closure_convert. `apply(fn, x)` is a custom_vjp with `fn` in nondiff_argnums whose bwd pulls the
cotangent back through `fn`; the caller passes `lambda v: w * jnp.sin(v)`, capturing `w`.

* "original": the lambda as is;
* "zero consts": `fn, consts = jax.closure_convert(lambda, x)`, consts passed in a differentiable
  slot, the rules call `fn(v, *consts)`, bwd returns zeros for consts (a mechanical rewrite);
* "vjp consts": the same, bwd pulls the cotangent back through `fn` for the consts too (what the
  JAX documentation's fixed-point example does: it needs the rule's own math).
"""

from __future__ import annotations

from functools import partial

import jax
import jax.numpy as jnp

from harness import check, header

header("jax.closure_convert for a callable in a nondiff slot (VJP105's candidate fix)")
X = jnp.array([0.2, 1.0, -0.7])
W = jnp.array([0.5, 1.5, 2.0])


@partial(jax.custom_vjp, nondiff_argnums=(0,))
def apply(fn, x):
    return fn(x)


def apply_fwd(fn, x):
    return fn(x), x


def apply_bwd(fn, x, g):
    return (jax.vjp(fn, x)[1](g)[0],)


apply.defvjp(apply_fwd, apply_bwd)


@partial(jax.custom_vjp, nondiff_argnums=(0,))
def apply_c(fn, consts, x):
    return fn(x, *consts)


def apply_c_fwd(fn, consts, x):
    return fn(x, *consts), (consts, x)


def zero_bwd(fn, res, g):
    consts, x = res
    gx = jax.vjp(lambda v: fn(v, *consts), x)[1](g)[0]
    return (jax.tree_util.tree_map(jnp.zeros_like, consts), gx)


def vjp_bwd(fn, res, g):
    consts, x = res
    _, pull = jax.vjp(fn, x, *consts)
    gx, *gc = pull(g)
    return (type(consts)(gc), gx)  # consts come as a list: the cotangent must be one too


apply_c.defvjp(apply_c_fwd, zero_bwd)


@partial(jax.custom_vjp, nondiff_argnums=(0,))
def apply_v(fn, consts, x):
    return fn(x, *consts)


apply_v.defvjp(apply_c_fwd, vjp_bwd)


def original(w, x):
    return apply(lambda v: w * jnp.sin(v), x).sum()


def converted(op):
    def loss(w, x):
        fn, consts = jax.closure_convert(lambda v: w * jnp.sin(v), x)
        return op(fn, consts, x).sum()
    return loss


GX, GW = W * jnp.cos(X), jnp.sin(X)
for name, f in (("original", original), ("zero consts", converted(apply_c)), ("vjp consts", converted(apply_v))):
    check(f"{name}: eager", lambda: f(W, X), jnp.sum(W * jnp.sin(X)))
    check(f"{name}: jit", lambda: jax.jit(f)(W, X), jnp.sum(W * jnp.sin(X)))
    check(f"{name}: grad wrt x", lambda: jax.grad(f, argnums=1)(W, X), GX)
    check(f"{name}: jit(grad) wrt x", lambda: jax.jit(jax.grad(f, argnums=1))(W, X), GX)
    check(f"{name}: vmap(grad) wrt x", lambda: jax.vmap(jax.grad(f, argnums=1))(jnp.stack([W, W]),
                                                                              jnp.stack([X, X]))[0], GX)
    check(f"{name}: grad wrt w", lambda: jax.grad(f)(W, X), GW)
    check(f"{name}: jit(grad) wrt w", lambda: jax.jit(jax.grad(f))(W, X), GW)
    check(f"{name}: grad(jit) wrt x", lambda: jax.grad(jax.jit(f), argnums=1)(W, X), GX)
