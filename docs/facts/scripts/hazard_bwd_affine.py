"""VJP606: a custom_vjp bwd that adds a term not proportional to the output cotangent."""

from __future__ import annotations

import jax
import jax.numpy as jnp

from harness import check, header

header("bwd with a cotangent-independent term (affine, not linear, in g)")
DECAY = 0.1
X = jnp.array([0.5, -1.0, 2.0])
W = jnp.array([1.0, 0.3, -0.7])


def make(bwd_w):
    @jax.custom_vjp
    def f(w, x):
        return jnp.tanh(w * x)

    def f_fwd(w, x):
        y = f(w, x)
        return y, (w, x, y)

    def f_bwd(res, g):
        w, x, y = res
        slope = (1.0 - y ** 2) * g
        return bwd_w(slope, w, x, g), slope * w

    f.defvjp(f_fwd, f_bwd)
    return f


affine = make(lambda slope, w, x, g: slope * x + DECAY * w)
linear = make(lambda slope, w, x, g: slope * x)
const = make(lambda slope, w, x, g: DECAY * w)
true = lambda w: (1 - jnp.tanh(w * X) ** 2) * X  # noqa: E731

print("## the intended gradient: the tanh term plus DECAY * w")
check("affine: grad of sum(f)", lambda: jax.grad(lambda w: jnp.sum(affine(w, X)))(W), true(W) + DECAY * W)
check("affine: grad of 2*sum(f) vs 2*grad", lambda: jax.grad(lambda w: 2 * jnp.sum(affine(w, X)))(W),
      2 * (true(W) + DECAY * W))
check("affine: grad of sum(f)+sum(f) (two uses)", lambda: jax.grad(lambda w: jnp.sum(affine(w, X)) * 1.0 + 0 * jnp.sum(W))(W),
      true(W) + DECAY * W)
check("affine: grad of mean(f) (cotangent 1/3)", lambda: jax.grad(lambda w: jnp.mean(affine(w, X)))(W),
      true(W) / 3 + DECAY * W)
print("## the output monitored only: the cotangent is a symbolic zero, bwd does not run")
check("affine: grad through stop_gradient", lambda: jax.grad(
    lambda w: jnp.sum(jax.lax.stop_gradient(affine(w, X))) + jnp.sum(0.0 * w))(W), DECAY * W)
check("affine: jit(grad) output unused", lambda: jax.jit(jax.grad(
    lambda w: (affine(w, X), jnp.sum(0.0 * w))[1]))(W), DECAY * W)
check("const (no g at all): grad of 2*sum(f)", lambda: jax.grad(lambda w: 2 * jnp.sum(const(w, X)))(W),
      2 * DECAY * W)
print("## linear in g: consistent")
check("linear: grad of 2*sum(f)", lambda: jax.grad(lambda w: 2 * jnp.sum(linear(w, X)))(W), 2 * true(W))
check("linear: jax.vjp with cotangent 0", lambda: jax.vjp(lambda w: linear(w, X), W)[1](jnp.zeros(3)), (jnp.zeros(3),))
check("affine: jax.vjp with cotangent 0 (instantiated)", lambda: jax.vjp(lambda w: affine(w, X), W)[1](jnp.zeros(3)),
      (jnp.zeros(3),))
