"""structure hazard: a custom_vjp around an optimizer update takes (grads, state, params=None) but bwd returns one cotangent.

Report: google-deepmind/optax#247 https://github.com/google-deepmind/optax/issues/247 (a user
wrapped an optax update function in jax.custom_vjp to pass the incoming gradient straight through;
the bwd returned a 1-tuple although the primal has three positional parameters, one a state
pytree, and differentiating it failed). Here a momentum-style update is wrapped the same way.
"""
import jax
import jax.numpy as jnp
import numpy as np

EVAL = {
    "id": "structure/h4_optax247_bwd_one_cotangent_for_three_args", "family": "structure",
    "expect": "hazard", "source": "google-deepmind/optax#247",
    "url": "https://github.com/google-deepmind/optax/issues/247",
    "written_at": "2026-12-02", "written_at_commit": "8b8e5ef99343de7779754cb23d51776bc6898883",
    "argnums": (0,), "heldout": True,
}

LR = 0.1
BETA = 0.9


@jax.custom_vjp  # eval: span
def momentum_update(grads, state, params=None):  # eval: span
    velocity = BETA * state[0] + grads
    return -LR * velocity


def _update_fwd(grads, state, params=None):
    return momentum_update(grads, state, params), ()


def _update_bwd(res, g):  # eval: span
    return (-LR * g,)  # eval: span


momentum_update.defvjp(_update_fwd, _update_bwd)


def eval_fn(grads, velocity):
    return jnp.sum(momentum_update(grads, (velocity,)) ** 2)


def eval_inputs():
    return (np.array([0.5, -1.0, 2.0], np.float32), np.array([0.1, 0.2, -0.3], np.float32))


def eval_reference(grads, velocity):
    v = BETA * np.asarray(velocity, np.float64) + np.asarray(grads, np.float64)
    return np.asarray(np.sum((-LR * v) ** 2))
