"""A custom_jvp rule that passes a tangent to a host callback (VJP601, jax-ml/jax#30401).

The rule applies `jax.pure_callback` (a host matrix product, linear) to the tangent, directly
or through a helper; then the form that computes the Jacobian from the primal on the host and
multiplies the tangent by it with jnp."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from harness import check, header

header("custom_jvp rule calling a host callback on the tangent")
A = np.array([[2.0, -1.0], [-1.0, 2.0]], np.float32)


def host_apply(v):
    return (A @ np.asarray(v)).astype(np.float32)


def apply(v):
    return jax.pure_callback(host_apply, jax.ShapeDtypeStruct(v.shape, v.dtype), v, vmap_method="sequential")


@jax.custom_jvp
def op(v):
    return apply(v)


@op.defjvp
def op_jvp(primals, tangents):
    return op(primals[0]), apply(tangents[0])


def host_jacobian(v):
    return A


@jax.custom_jvp
def op_ok(v):
    return apply(v)


@op_ok.defjvp
def op_ok_jvp(primals, tangents):
    jac = jax.pure_callback(host_jacobian, jax.ShapeDtypeStruct((2, 2), jnp.float32), primals[0],
                            vmap_method="sequential")
    return op_ok(primals[0]), jac @ tangents[0]


X = jnp.array([1.0, 2.0])
for name, f in [("tangent through the callback", op), ("Jacobian from the primal, times the tangent", op_ok)]:
    check(f"{name}: jvp", lambda: jax.jvp(f, (X,), (X,))[1])
    check(f"{name}: jacfwd", lambda: jax.jacfwd(f)(X))
    check(f"{name}: grad", lambda: jax.grad(lambda v: f(v).sum())(X))
    check(f"{name}: jit(grad)", lambda: jax.jit(jax.grad(lambda v: f(v).sum()))(X))
    check(f"{name}: jacrev", lambda: jax.jacrev(f)(X))
