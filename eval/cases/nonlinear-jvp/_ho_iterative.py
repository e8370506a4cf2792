"""A project's numerics helper, imported by ho_jax18311_tangent_solver_xmod (not a case)."""
import jax
import jax.numpy as jnp


def fixed_point(step, x0, tol=1e-6, max_iter=100):
    """Iterate step until successive iterates agree to tol."""
    def cond(state):
        i, prev, cur = state
        return (jnp.max(jnp.abs(cur - prev)) > tol) & (i < max_iter)

    def body(state):
        i, _, cur = state
        return i + 1, cur, step(cur)

    return jax.lax.while_loop(cond, body, (0, x0, step(x0)))[2]
