"""A `jax.vjp` pullback called with other than one argument (jax-ml/jax#13099), in a custom_vjp's
bwd (the pullback saved as fwd's residual) and outside one; and a tangent reduced over every axis
where the primal output keeps a batch axis (jax-ml/jax#6121), for a 1-D and a 2-D input."""

from __future__ import annotations

import jax
import jax.numpy as jnp

from harness import check, header

header("jax.vjp pullback arity")
X = jnp.array([0.5, -0.25, 1.0])


def moments(x):
    return jnp.sin(x), jnp.sum(x * x)


def single(x):
    return jnp.sin(x)


def wrapped(inner, call):
    @jax.custom_vjp
    def f(x):
        return inner(x)

    def f_fwd(x):
        out, pull = jax.vjp(inner, x)
        return out, pull

    def f_bwd(pull, g):
        return call(pull, g)

    f.defvjp(f_fwd, f_bwd)
    return f


def loss_of(f):
    return lambda v: jnp.sum(jnp.concatenate([jnp.ravel(leaf) for leaf in jax.tree_util.tree_leaves(f(v))]))


REF_PAIR = jnp.cos(X) + 2 * X
cases = {
    "pair output, pull(*g)": (moments, lambda pull, g: pull(*g), REF_PAIR),
    "pair output, pull(g[0], g[1])": (moments, lambda pull, g: pull(g[0], g[1]), REF_PAIR),
    "pair output, pull(g)": (moments, lambda pull, g: pull(g), REF_PAIR),
    "pair output, pull((g[0], g[1]))": (moments, lambda pull, g: pull((g[0], g[1])), REF_PAIR),
    "array output, pull(g)": (single, lambda pull, g: pull(g), jnp.cos(X)),
    "array output, pull(g, g)": (single, lambda pull, g: pull(g, g), jnp.cos(X)),
    "array output, pull()": (single, lambda pull, g: pull(), jnp.cos(X)),
    "array output, pull(*g)": (single, lambda pull, g: pull(*g), jnp.cos(X)),
}
for label, (inner, call, ref) in cases.items():
    f = wrapped(inner, call)
    check(f"{label}: grad", lambda: jax.grad(loss_of(f))(X), ref)
    check(f"{label}: jit(grad)", lambda: jax.jit(jax.grad(loss_of(f)))(X), ref)

# outside a custom_vjp
_, pull = jax.vjp(moments, X)
check("plain jax.vjp, pull(a, b)", lambda: pull(jnp.ones(3), 1.0))
check("plain jax.vjp, pull((a, b))", lambda: pull((jnp.ones(3), 1.0)))
_, pull2, aux = jax.vjp(lambda x: (jnp.sin(x), x), X, has_aux=True)
check("has_aux jax.vjp, pull(a, b)", lambda: pull2(jnp.ones(3), jnp.ones(3)))
check("has_aux jax.vjp, pull(a)", lambda: pull2(jnp.ones(3)))
_, pull3 = jax.vjp(lambda x, y: x * y, X, X)
check("two primals, pull(a)", lambda: pull3(jnp.ones(3)))
check("two primals, pull(a, b)", lambda: pull3(jnp.ones(3), jnp.ones(3)))

header("tangent reduced over every axis, primal keeps the leading axes (jax-ml/jax#6121)")


@jax.custom_jvp
def logvol(d):
    return jnp.sum(jnp.log(d), axis=-1)


@logvol.defjvp
def logvol_jvp(primals, tangents):
    (d,), (dd,) = primals, tangents
    return logvol(d), jnp.sum(dd / d)


D1 = jnp.array([1.5, 2.0])
D2 = jnp.array([[1.5, 2.0], [0.5, 3.0]])
check("1-D input: grad", lambda: jax.grad(logvol)(D1), 1 / D1)
check("1-D input: jvp", lambda: jax.jvp(logvol, (D1,), (jnp.ones(2),)))
check("2-D input: grad of sum", lambda: jax.grad(lambda d: jnp.sum(logvol(d)))(D2), 1 / D2)
check("2-D input: vmap over 1-D rows, grad", lambda: jax.vmap(jax.grad(logvol))(D2), 1 / D2)
