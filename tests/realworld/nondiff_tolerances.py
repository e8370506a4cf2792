# Pattern (ODE solvers): tolerances and step limits in nondiff_argnums used as jnp data.
from functools import partial

import jax
import jax.numpy as jnp


@partial(jax.custom_vjp, nondiff_argnums=(0, 1, 2))
def solve(rtol, atol, hmax, y):
    step = jnp.clip(jnp.abs(y) * rtol + atol, 0.0, hmax)
    return y + step


def solve_fwd(rtol, atol, hmax, y):
    return solve(rtol, atol, hmax, y), None


def solve_bwd(rtol, atol, hmax, _, g):
    return (g,)


solve.defvjp(solve_fwd, solve_bwd)
