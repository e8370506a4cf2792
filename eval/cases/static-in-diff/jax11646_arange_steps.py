"""static-in-diff hazard: jnp.arange over a step count passed in a differentiable custom_vjp slot.

Report: jax-ml/jax#11646 https://github.com/jax-ml/jax/issues/11646 (the reporter's follow-up:
`jnp.arange(N)` inside the custom_vjp, N a static jit argument of the caller, fails because the
custom_vjp traces N).
"""
from functools import partial

import jax
import jax.numpy as jnp
import numpy as np

EVAL = {
    "id": "static-in-diff/jax11646_arange_steps", "family": "static-in-diff", "expect": "hazard",
    "source": "jax-ml/jax#11646", "url": "https://github.com/jax-ml/jax/issues/11646",
    "written_at": "2026-12-01", "written_at_commit": "9d161192a8991249a2426bf94237695a2060758f",
    "argnums": (0,), "static": (1,),
}


@jax.custom_vjp
def power_of_steps(x, num_steps):  # eval: span
    total = jnp.sum(jnp.arange(num_steps))  # eval: span
    return x ** total


def power_of_steps_fwd(x, num_steps):
    total = jnp.sum(jnp.arange(num_steps))
    return x ** total, (x, total)


def power_of_steps_bwd(res, g):
    x, total = res
    return g * total * x ** (total - 1), None


power_of_steps.defvjp(power_of_steps_fwd, power_of_steps_bwd)


@partial(jax.jit, static_argnums=(1,))
def run(x, num_steps):
    return power_of_steps(x, num_steps)


def eval_fn(x, num_steps):
    return run(x, num_steps)


def eval_inputs():
    return (np.float32(1.3), 3)


def eval_reference(x, num_steps):
    return np.float64(x) ** 3
