"""A custom_jvp rule returning a symbolic zero tangent, with and without `defjvp(...,
symbolic_zeros=True)` (VJP325, jax-ml/jax#28144); and a custom_vjp bwd returning one."""

from __future__ import annotations

import jax
import jax.numpy as jnp
from jax.custom_derivatives import zero_from_primal

from harness import check, header

header("symbolic zero tangents from custom_jvp rules")

X = jnp.arange(3.0)


def make(symbolic_in_rule: bool, registered_with_flag: bool):
    @jax.custom_jvp
    def f(x):
        return x + 1.0

    def rule(primals, tangents):
        (x,), _ = primals, tangents
        return f(x), zero_from_primal(x, symbolic_zeros=symbolic_in_rule)

    if registered_with_flag:
        f.defjvp(rule, symbolic_zeros=True)
    else:
        f.defjvp(rule)
    return f


for in_rule, flag in [(True, False), (False, False), (True, True)]:
    f = make(in_rule, flag)
    label = f"zero_from_primal(symbolic_zeros={in_rule}), defjvp symbolic_zeros={flag}"
    print(f"## {label}")
    check(f"{label[:40]}: jvp", lambda: jax.jvp(f, (X,), (X,))[1], jnp.zeros(3))
    check(f"{label[:40]}: grad", lambda: jax.grad(lambda v: jnp.sum(f(v)))(X), jnp.zeros(3))
    check(f"{label[:40]}: jacfwd", lambda: jax.jacfwd(f)(X), jnp.zeros((3, 3)))


@jax.custom_vjp
def g(x):
    return x + 1.0


g.defvjp(lambda x: (x + 1.0, x), lambda x, ct: (zero_from_primal(x, symbolic_zeros=True),))
print("## custom_vjp bwd returning zero_from_primal(x, symbolic_zeros=True)")
check("custom_vjp bwd symbolic zero: grad", lambda: jax.grad(lambda v: jnp.sum(g(v)))(X), jnp.zeros(3))
