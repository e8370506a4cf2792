"""closure look-alike: grad of a vmapped odeint whose dynamics close over the batched decay rate.

Report: jax-ml/jax#8783 https://github.com/jax-ml/jax/issues/8783 (grad + vmap + odeint raised an
AssertionError; the discussion explains that the dynamics close over a traced value, which odeint's
custom_vjp must closure-convert). On JAX 0.10.2 odeint closure-converts the dynamics and the
composition runs. Here a population decay is solved per rate and summed.
"""
import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental.ode import odeint

EVAL = {
    "id": "closure/ok_h4_jax8783_grad_vmap_odeint_closed_rate", "family": "closure",
    "expect": "ok", "source": "jax-ml/jax#8783", "url": "https://github.com/jax-ml/jax/issues/8783",
    "written_at": "2026-12-02", "written_at_commit": "8b8e5ef99343de7779754cb23d51776bc6898883",
    "argnums": (0,), "heldout": True,
}

TS = np.linspace(0.0, 1.0, 5).astype(np.float32)


def final_population(rate):
    def dynamics(y, t):  # eval: span
        return -rate * y  # eval: span

    return odeint(dynamics, jnp.float32(1.0), jnp.asarray(TS))[-1]


def eval_fn(rates):
    return jnp.sum(jax.vmap(final_population)(rates))


def eval_inputs():
    return (np.array([0.5, 1.0, 2.0], np.float32),)


def eval_reference(rates):
    return np.asarray(np.sum(np.exp(-np.asarray(rates, np.float64) * 1.0)))
