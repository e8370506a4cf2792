"""Numerics helpers the other modules import: two iterate with `lax.while_loop`, one with a
static `fori_loop` (a scan, which JAX transposes)."""
import jax
import jax.numpy as jnp


def fixed_point(step, start, *, tol=1e-6):
    def keep_going(state):
        i, prev, cur = state
        return (jnp.max(jnp.abs(cur - prev)) > tol) & (i < 200)

    def advance(state):
        i, _, cur = state
        return i + 1, cur, step(cur)

    return _run(keep_going, advance, (0, start, step(start)))[2]


def _run(cond, body, init):
    return jax.lax.while_loop(cond, body, init)


def settle_then_scale(update, start, scale):
    y = jax.lax.while_loop(lambda s: s[0] < 50, lambda s: (s[0] + 1, update(s[1])), (0, start))[1]
    return y * scale


def neumann(apply, rhs, terms=30):
    return jax.lax.fori_loop(0, terms, lambda _, acc: rhs + apply(acc), jnp.zeros_like(rhs))
