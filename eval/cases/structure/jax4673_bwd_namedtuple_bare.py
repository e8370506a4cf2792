"""structure hazard: one NamedTuple argument, bwd returns the NamedTuple itself (built in a variable).

Report: jax-ml/jax#4673 https://github.com/jax-ml/jax/issues/4673 (a library's custom_vjp over a
pytree of model parameters raised "Custom VJP rule must produce an output with the same container
(pytree) structure as the args tuple of the primal function ... a tuple of length equal to the
number of arguments"). The args tuple here is `(state,)`; a bare `State(...)` is not it.
"""
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

EVAL = {
    "id": "structure/jax4673_bwd_namedtuple_bare", "family": "structure", "expect": "hazard",
    "source": "jax-ml/jax#4673", "url": "https://github.com/jax-ml/jax/issues/4673",
    "written_at": "2026-12-02", "written_at_commit": "9e042dab056b2e5f1652c5b10417b37c94b25964",
    "argnums": (0,),
}


class State(NamedTuple):
    pos: jnp.ndarray
    vel: jnp.ndarray


@jax.custom_vjp
def energy(state):
    return 0.5 * jnp.sum(state.vel ** 2) + jnp.sum(jnp.cos(state.pos))


def energy_fwd(state):
    return energy(state), state


def energy_bwd(state, g):
    grads = State(pos=-g * jnp.sin(state.pos), vel=g * state.vel)
    return grads  # eval: span


energy.defvjp(energy_fwd, energy_bwd)


def eval_fn(pos):
    return energy(State(pos, 2.0 * pos))


def eval_inputs():
    return (np.array([0.3, -0.7], np.float32),)


def eval_reference(pos):
    p = np.asarray(pos, np.float64)
    return 0.5 * np.sum((2.0 * p) ** 2) + np.sum(np.cos(p))
