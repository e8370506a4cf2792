"""Issue 18: a custom_vjp bwd returning None (or a zero) for an input (VJP602)."""

from __future__ import annotations

import jax
import jax.numpy as jnp

from harness import check, header

header("None / zero cotangents for inputs")


def make(bwd_second):
    """f(m, v) = m @ v with bwd returning (g ⊗ v, bwd_second(m, g))."""
    @jax.custom_vjp
    def f(m, v):
        return m @ v

    def f_fwd(m, v):
        return m @ v, (m, v)

    def f_bwd(res, g):
        m, v = res
        return jnp.outer(g, v), bwd_second(m, g)

    f.defvjp(f_fwd, f_bwd)
    return f


M = jnp.array([[0.5, 1.0], [-1.0, 0.3]])
V = jnp.array([1.0, -2.0])
W1 = jnp.array([[0.2, 0.1], [-0.3, 0.4]])
for label, second in (("None", lambda m, g: None), ("zeros_like", lambda m, g: jnp.zeros_like(m[0])),
                      ("literal 0.0", lambda m, g: 0.0 * g), ("m.T @ g (correct)", lambda m, g: m.T @ g)):
    f = make(second)
    print(f"## bwd returns {label} for v")
    check(f"{label}: grad wrt v", lambda: jax.grad(lambda v: jnp.sum(f(M, v)))(V), M.T @ jnp.ones(2))
    chain = lambda w1: jnp.sum(f(M, jnp.tanh(f(w1, V))))  # noqa: E731
    ref = lambda w1: jnp.sum(M @ jnp.tanh(w1 @ V))  # noqa: E731
    check(f"{label}: grad of the upstream weight in a chain", lambda: jax.grad(chain)(W1), jax.grad(ref)(W1))
    check(f"{label}: jit(grad) in a chain", lambda: jax.jit(jax.grad(chain))(W1), jax.grad(ref)(W1))


@jax.custom_vjp
def gather2(table, idx):
    return 2.0 * table[idx]


gather2.defvjp(lambda t, i: (2.0 * t[i], (t.shape, i)),
               lambda res, g: (jnp.zeros(res[0], g.dtype).at[res[1]].add(2.0 * g), None))

print("## None for arguments the output does not depend on differentiably")
T, IDX = jnp.array([1.0, -2.0, 0.5]), jnp.array([2, 0])
check("int index, None: grad wrt table", lambda: jax.grad(lambda t: jnp.sum(gather2(t, IDX)))(T),
      jnp.array([2.0, 0.0, 2.0]))


@jax.custom_vjp
def masked(x, threshold):
    return jnp.where(x > threshold, x, 0.0)


masked.defvjp(lambda x, th: (jnp.where(x > th, x, 0.0), (x, th)),
              lambda res, g: (jnp.where(res[0] > res[1], g, 0.0), None))
X = jnp.array([0.5, 2.0])
check("threshold only compared, None: grad wrt threshold", lambda: jax.grad(lambda th: jnp.sum(masked(X, th)))(1.0),
      0.0)
check("threshold only compared, None: grad wrt x", lambda: jax.grad(lambda x: jnp.sum(masked(x, 1.0)))(X),
      jnp.array([0.0, 1.0]))
