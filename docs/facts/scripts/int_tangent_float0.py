"""An integer output's or argument's tangent built as an integer array (VJP329; patrick-kidger/diffrax#508,
jax-ml/jax#4433).

A custom_jvp returning, as the tangent of an int32 (or bool) output, `jnp.zeros_like(out)`, an
int-dtype `jnp.zeros`, or a float zero; then the float0 spellings; then a custom_jvp rule calling
`jax.jvp` with an int `zeros_like(n)` tangent for an int primal, the float0 spelling and the rule's
own tangent passed through; look-alikes: a float output with a float tangent, symbolic zeros."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from jax.custom_derivatives import SymbolicZero

from harness import check, header

header("integer tangents where JAX wants float0")


def counted(tangent_of_count, out_kind="int32"):
    @jax.custom_jvp
    def f(x):
        n = jnp.argmax(x) if out_kind == "argmax" else (x > 0) if out_kind == "bool" else jnp.int32(3)
        return jnp.sin(x), n

    @f.defjvp
    def f_jvp(primals, tangents):
        (x,), (t,) = primals, tangents
        y, n = f(x)
        return (y, n), (jnp.cos(x) * t, tangent_of_count(n))

    return f


x = jnp.array([0.5, 1.0, -2.0])
ref = jnp.cos(x)
CASES = [
    ("jnp.zeros_like(n)", jnp.zeros_like, "int32"),
    ("jnp.ones_like(n)", jnp.ones_like, "int32"),
    ("jnp.zeros(n.shape, jnp.int32)", lambda n: jnp.zeros(n.shape, jnp.int32), "int32"),
    ("jnp.zeros_like(n) (n = argmax)", jnp.zeros_like, "argmax"),
    ("jnp.zeros_like(n) (n bool)", jnp.zeros_like, "bool"),
    ("jnp.zeros_like(n, dtype=float32)", lambda n: jnp.zeros_like(n, dtype=jnp.float32), "int32"),
    ("np.zeros(n.shape, dtype=float0)", lambda n: np.zeros(np.shape(n), dtype=jax.dtypes.float0), "int32"),
    ("np.zeros(n.shape, dtype=float0) (n bool)", lambda n: np.zeros(np.shape(n), dtype=jax.dtypes.float0), "bool"),
    ("jnp.zeros(n.shape, dtype=float0)", lambda n: jnp.zeros(n.shape, dtype=jax.dtypes.float0), "int32"),
    ("None", lambda n: None, "int32"),
]
for label, make_t, kind in CASES:
    f = counted(make_t, kind)
    check(f"return {label}: grad", lambda: jax.grad(lambda v: f(v)[0].sum())(x), ref)
    check(f"return {label}: jvp", lambda: jax.jvp(lambda v: f(v)[0], (x,), (jnp.ones_like(x),))[1], ref)
    check(f"return {label}: jit(grad)", lambda: jax.jit(jax.grad(lambda v: f(v)[0].sum()))(x), ref)


def symbolic():
    @jax.custom_jvp
    def f(x):
        return jnp.sin(x), jnp.int32(3)

    def f_jvp(primals, tangents):
        (x,), (t,) = primals, tangents
        y, n = f(x)
        return (y, n), (jnp.cos(x) * t, SymbolicZero(jax.typeof(n).to_tangent_aval()))

    f.defjvp(f_jvp, symbolic_zeros=True)
    return f


check("return SymbolicZero (symbolic_zeros=True): grad", lambda: jax.grad(lambda v: symbolic()(v)[0].sum())(x), ref)


def float_out(make_t):
    @jax.custom_jvp
    def f(x):
        return jnp.sin(x)

    @f.defjvp
    def f_jvp(primals, tangents):
        (x,), (t,) = primals, tangents
        return f(x), jnp.cos(x) * t + make_t(x)

    return f


err = check("(full message) return jnp.zeros_like(n)",
            lambda: jax.grad(lambda v: counted(jnp.zeros_like)(v)[0].sum())(x))
print("    " + str(err).replace("\n", "\n    "))
check("look-alike: float output, + jnp.zeros_like(x): grad", lambda: jax.grad(
    lambda v: float_out(jnp.zeros_like)(v).sum())(x), ref)


def power(tangent_of_n):
    def _power(x, n):
        return x ** n

    @jax.custom_jvp
    def p(x, n):
        return _power(x, n)

    @p.defjvp
    def p_jvp(primals, tangents):
        x, n = primals
        x_dot, n_dot = tangents
        return jax.jvp(_power, (x, n), (x_dot, tangent_of_n(n, n_dot)))

    return p


n3 = np.int32(3)
for label, make_t in [("jnp.zeros_like(n)", lambda n, t: jnp.zeros_like(n)),
                      ("jnp.zeros((), jnp.int32)", lambda n, t: jnp.zeros((), jnp.int32)),
                      ("np.zeros(np.shape(n), float0)", lambda n, t: np.zeros(np.shape(n), jax.dtypes.float0)),
                      ("the rule's own tangent n_dot", lambda n, t: t)]:
    p = power(make_t)
    check(f"jax.jvp tangent {label} for int n: grad", lambda: jax.grad(lambda v: p(v, n3).sum())(x), 3 * x ** 2)
    check(f"jax.jvp tangent {label} for int n: jit(grad)",
          lambda: jax.jit(jax.grad(lambda v: p(v, n3).sum()))(x), 3 * x ** 2)
    check(f"jax.jvp tangent {label} for int n: n_dot dtype", lambda: jax.jvp(
        lambda v: p(v, n3), (x,), (jnp.ones_like(x),))[1], 3 * x ** 2)
pf = power(lambda n, t: jnp.zeros_like(n))
check("look-alike: jax.jvp tangent jnp.zeros_like(n) for float n: grad",
      lambda: jax.grad(lambda v: pf(v, 3.0).sum())(x), 3 * x ** 2)
check("plain jax.jvp, int primal, int tangent", lambda: jax.jvp(lambda v, k: v * k, (x, n3), (x, jnp.zeros_like(n3))))
check("plain jax.jvp, int primal, float0 tangent", lambda: jax.jvp(
    lambda v, k: v * k, (x, n3), (x, np.zeros((), jax.dtypes.float0)))[1], 3 * x)
check("jax.linearize then f_jvp(int tangent)",
      lambda: jax.linearize(lambda v, k: v * k, x, n3)[1](x, jnp.zeros_like(n3)))
