"""Issue 18: Python-value uses (int(), range(), jnp.arange(), a Python `if`, a shape) of a
custom_vjp argument that is not in nondiff_argnums (VJP108)."""

from __future__ import annotations

from functools import partial

import jax
import jax.numpy as jnp

from harness import check, header

header("static values in differentiable custom_vjp positions")

USES = {
    "int(n)": lambda z, n: z ** int(n),
    "range(n)": lambda z, n: sum(z for _ in range(n)),
    "jnp.arange(n)": lambda z, n: z * jnp.sum(jnp.arange(n)),
    "if n > 1": lambda z, n: z * z if n > 1 else z,
    "jnp.zeros(n)": lambda z, n: z + jnp.sum(jnp.zeros(n)),
    "n * z (array use)": lambda z, n: n * z,
}


def make(use, nondiff: bool):
    @partial(jax.custom_vjp, nondiff_argnums=(1,) if nondiff else ())
    def f(z, n):
        return use(z, n)

    def f_fwd(z, n):
        return use(z, n), z

    if nondiff:
        def f_bwd(n, z, g):
            return (jax.grad(lambda v: use(v, n))(z) * g,)
    else:
        def f_bwd(z, g):
            return (2.0 * z * g, None)

    f.defvjp(f_fwd, f_bwd)
    return f


Z, N = jnp.float32(1.5), 2
for label, use in USES.items():
    for nondiff in (False, True):
        f = make(use, nondiff)
        tag = f"{label}, {'nondiff' if nondiff else 'differentiable slot'}"
        check(f"{tag}: eager", lambda: f(Z, N))
        check(f"{tag}: jit, n static in the caller",
              lambda: jax.jit(lambda z, n: f(z, n), static_argnums=1)(Z, N))
        check(f"{tag}: jit, n a closed-over constant", lambda: jax.jit(lambda z: f(z, N))(Z))
        check(f"{tag}: grad wrt z (eager)", lambda: jax.grad(lambda z: f(z, N))(Z))
        check(f"{tag}: vmap over z", lambda: jax.vmap(lambda z: f(z, N))(jnp.ones(2)))


def make_jvp(use, nondiff: bool):
    @partial(jax.custom_jvp, nondiff_argnums=(1,) if nondiff else ())
    def f(z, n):
        return use(z, n)

    if nondiff:
        @f.defjvp
        def f_jvp(n, primals, tangents):
            return use(primals[0], n), 2.0 * primals[0] * tangents[0]
    else:
        @f.defjvp
        def f_jvp(primals, tangents):
            return use(*primals), 2.0 * primals[0] * tangents[0]
    return f


print("## custom_jvp")
for label in ("int(n)", "if n > 1"):
    for nondiff in (False, True):
        f = make_jvp(USES[label], nondiff)
        tag = f"custom_jvp {label}, {'nondiff' if nondiff else 'differentiable slot'}"
        check(f"{tag}: eager", lambda: f(Z, N))
        check(f"{tag}: jit, n a closed-over constant", lambda: jax.jit(lambda z: f(z, N))(Z))
        check(f"{tag}: grad wrt z (eager)", lambda: jax.grad(lambda z: f(z, N))(Z))
        check(f"{tag}: jit(grad) wrt z, n constant", lambda: jax.jit(jax.grad(lambda z: f(z, N)))(Z))


@jax.custom_vjp
def apply(fn, x):
    return fn(x)


apply.defvjp(lambda fn, x: (fn(x), x), lambda x, g: (None, jnp.cos(x) * g))


def _double(v):
    return 2.0 * v


print("## a Python callable in a differentiable slot")
for label, fn in (("lambda", lambda v: jnp.sin(v)), ("def", _double), ("functools.partial", partial(jnp.multiply, 2.0)),
                  ("jax.tree_util.Partial", jax.tree_util.Partial(jnp.multiply, 2.0))):
    check(f"callable {label}: eager", lambda: apply(fn, Z))
    check(f"callable {label}: jit", lambda: jax.jit(lambda z: apply(fn, z))(Z))
    check(f"callable {label}: grad wrt x", lambda: jax.grad(lambda z: apply(fn, z))(Z))


@jax.custom_jvp
def apply_jvp(fn, x):
    return fn(x)


apply_jvp.defjvp(lambda primals, tangents: (apply_jvp(*primals), jnp.cos(primals[1]) * tangents[1]))
check("custom_jvp, callable def: eager", lambda: apply_jvp(_double, Z))
check("custom_jvp, callable def: grad wrt x", lambda: jax.grad(lambda z: apply_jvp(_double, z))(Z))
