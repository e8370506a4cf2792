"""VJP609: `f.defjvps(rule_for_x, None)` where the primal's output depends on the None-slot argument
(jax-ml/jax#5913): custom_jvp takes the None rule as a zero tangent, with no error."""

from __future__ import annotations

import jax
import jax.numpy as jnp
from jax import lax

from harness import check, header

header("defjvps with None for a differentiable argument")


@jax.custom_jvp
def soft_weight(x, shape):
    return 1.0 - jnp.exp(-shape * x)


soft_weight.defjvps(lambda x_dot, ans, x, shape: shape * jnp.exp(-shape * x) * x_dot, None)


def ref_weight(x, shape):
    return 1.0 - jnp.exp(-shape * x)


X, S = jnp.array([0.5, 1.0, 2.0]), jnp.array([1.5, 0.7, 0.3])
loss = lambda x, s: jnp.sum(soft_weight(x, s))  # noqa: E731
ref = lambda x, s: jnp.sum(ref_weight(x, s))  # noqa: E731

print("## the None slot's argument reaches the output (exp(-shape * x)); callers differentiate it")
check("grad wrt x (argnums=0, has a rule)", lambda: jax.grad(loss)(X, S), jax.grad(ref)(X, S))
check("grad wrt shape (argnums=1, None)", lambda: jax.grad(loss, argnums=1)(X, S), jax.grad(ref, argnums=1)(X, S))
check("jit(grad) wrt shape", lambda: jax.jit(jax.grad(loss, argnums=1))(X, S), jax.grad(ref, argnums=1)(X, S))
check("grad wrt both (argnums=(0, 1)), shape's part", lambda: jax.grad(loss, argnums=(0, 1))(X, S)[1],
      jax.grad(ref, argnums=1)(X, S))
check("jacfwd wrt shape", lambda: jax.jacfwd(soft_weight, argnums=1)(X, S), jax.jacfwd(ref_weight, argnums=1)(X, S))
check("jacrev wrt shape", lambda: jax.jacrev(soft_weight, argnums=1)(X, S), jax.jacrev(ref_weight, argnums=1)(X, S))
check("jvp with a tangent on shape only", lambda: jax.jvp(soft_weight, (X, S), (jnp.zeros(3), jnp.ones(3)))[1],
      jax.jvp(ref_weight, (X, S), (jnp.zeros(3), jnp.ones(3)))[1])
check("vmap(grad) wrt shape", lambda: jax.vmap(jax.grad(lambda x, s: soft_weight(x, s), argnums=1))(X, S),
      jax.vmap(jax.grad(ref_weight, argnums=1))(X, S))
check("grad of a caller passing a traced value (s * 2.0)",
      lambda: jax.grad(lambda s: loss(X, s * 2.0))(S), jax.grad(lambda s: ref(X, s * 2.0))(S))

print("## look-alikes: None where the derivative really is zero, or nobody differentiates")


@jax.custom_jvp
def first_n(x, n):
    return jnp.sum(x[:n] ** 2)   # n only as an int (a slice bound)


first_n.defjvps(lambda x_dot, ans, x, n: jnp.sum(2.0 * x[:n] * x_dot[:n]), None)
check("int n (slice bound), None: grad wrt x", lambda: jax.grad(first_n)(X, 2), jax.grad(lambda x: jnp.sum(x[:2] ** 2))(X))


@jax.custom_jvp
def tiled(x, reps):
    return jnp.tile(x, reps) * 2.0   # reps only as a shape


tiled.defjvps(lambda x_dot, ans, x, reps: jnp.tile(x_dot, reps) * 2.0, None)
check("shape-only reps, None: jacfwd wrt x", lambda: jax.jacfwd(tiled)(X, 2),
      jax.jacfwd(lambda x: jnp.tile(x, 2) * 2.0)(X))


@jax.custom_jvp
def scaled(x, s):
    return x * lax.stop_gradient(s)   # s only through stop_gradient: its derivative is zero


scaled.defjvps(lambda x_dot, ans, x, s: x_dot * s, None)
check("stop_gradient(s), None: grad wrt s (0 is right)", lambda: jax.grad(lambda s: jnp.sum(scaled(X, s)))(S),
      jax.grad(lambda s: jnp.sum(X * lax.stop_gradient(s)))(S))
check("stop_gradient(s), None: grad wrt x", lambda: jax.grad(lambda x: jnp.sum(scaled(x, S)))(X), S)


@jax.custom_jvp
def thresholded(x, t):
    return jnp.where(x > t, x, 0.0)   # t only compared


thresholded.defjvps(lambda x_dot, ans, x, t: jnp.where(x > t, x_dot, 0.0), None)
check("compared-only t, None: grad wrt t (0 is right)", lambda: jax.grad(lambda t: jnp.sum(thresholded(X, t)))(0.7),
      0.0)

# The same soft_weight, called only with x differentiated and shape a fixed array: right.
check("soft_weight, only x differentiated: grad wrt x", lambda: jax.grad(lambda x: loss(x, S))(X),
      jax.grad(lambda x: ref(x, S))(X))

print("## what to do instead")
soft_weight_full = jax.custom_jvp(lambda x, shape: 1.0 - jnp.exp(-shape * x))
soft_weight_full.defjvps(lambda x_dot, ans, x, shape: shape * jnp.exp(-shape * x) * x_dot,
                         lambda s_dot, ans, x, shape: x * jnp.exp(-shape * x) * s_dot)
check("the rule written: grad wrt shape", lambda: jax.grad(lambda x, s: jnp.sum(soft_weight_full(x, s)), argnums=1)(X, S),
      jax.grad(ref, argnums=1)(X, S))


def _no_shape_derivative(s_dot, ans, x, shape):
    raise NotImplementedError("soft_weight is not differentiable in shape")


raising = jax.custom_jvp(lambda x, shape: 1.0 - jnp.exp(-shape * x))
raising.defjvps(lambda x_dot, ans, x, shape: shape * jnp.exp(-shape * x) * x_dot, _no_shape_derivative)
check("defjvps rule that raises: grad wrt x (raises too: the tangent is an instantiated zero)",
      lambda: jax.grad(lambda x: jnp.sum(raising(x, S)))(X), jax.grad(lambda x: ref(x, S))(X))

from jax.custom_derivatives import SymbolicZero  # noqa: E402

guarded = jax.custom_jvp(lambda x, shape: 1.0 - jnp.exp(-shape * x))


def guarded_jvp(primals, tangents):
    x, shape = primals
    x_dot, s_dot = tangents
    if not isinstance(s_dot, SymbolicZero):
        raise NotImplementedError("soft_weight is not differentiable in shape")
    out = guarded(x, shape)
    t = jnp.zeros_like(out) if isinstance(x_dot, SymbolicZero) else shape * jnp.exp(-shape * x) * x_dot
    return out, t


guarded.defjvp(guarded_jvp, symbolic_zeros=True)
check("defjvp(symbolic_zeros=True) raising on a real s_dot: grad wrt x",
      lambda: jax.grad(lambda x: jnp.sum(guarded(x, S)))(X), jax.grad(lambda x: ref(x, S))(X))
check("defjvp(symbolic_zeros=True) raising on a real s_dot: grad wrt shape",
      lambda: jax.grad(lambda s: jnp.sum(guarded(X, s)))(S), jax.grad(ref, argnums=1)(X, S))

nondiff = jax.custom_jvp(lambda shape, x: 1.0 - jnp.exp(-shape * x), nondiff_argnums=(0,))
nondiff.defjvp(lambda shape, primals, tangents: (nondiff(shape, *primals),
                                                 shape * jnp.exp(-shape * primals[0]) * tangents[0]))
check("nondiff_argnums, Python float shape: grad wrt x", lambda: jax.grad(lambda x: jnp.sum(nondiff(0.7, x)))(X),
      jax.grad(lambda x: ref(x, 0.7))(X))
check("nondiff_argnums, traced array shape: grad wrt shape (also silently 0)",
      lambda: jax.grad(lambda s: jnp.sum(nondiff(s, X)))(S), jax.grad(ref, argnums=1)(X, S))
