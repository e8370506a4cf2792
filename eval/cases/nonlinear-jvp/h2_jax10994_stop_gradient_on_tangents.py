"""nonlinear-jvp hazard: a custom_jvp rule applies lax.stop_gradient to its input tangents.

Report: jax-ml/jax#10994 https://github.com/jax-ml/jax/issues/10994 (a "stop_hessian" trick for a
Fisher-information computation: stop_gradient on the tangents inside custom_jvp rules; nested
jacfwd worked, any reverse mode raised "Transpose rule ... for 'stop_gradient' not implemented").
Here a half-square energy with that rule, differentiated once with grad.
"""
import jax
import jax.numpy as jnp
import numpy as np

EVAL = {
    "id": "nonlinear-jvp/h2_jax10994_stop_gradient_on_tangents", "family": "nonlinear-jvp",
    "expect": "hazard", "source": "jax-ml/jax#10994", "url": "https://github.com/jax-ml/jax/issues/10994",
    "written_at": "2026-12-02", "written_at_commit": "57286d6bb1b3765b2fe45d8e346dffc0e0612443",
    "argnums": (0,), "extra": ["jacfwd"], "heldout": True,
}


@jax.custom_jvp  # eval: span
def half_square(x):  # eval: span
    return 0.5 * x ** 2


@half_square.defjvp
def _half_square_jvp(primals, tangents):
    (x,) = primals
    (dx,) = jax.lax.stop_gradient(tangents)  # eval: span
    return half_square(x), x * dx


def eval_fn(x):
    return half_square(0.5 * x ** 2)


def eval_inputs():
    return (np.array([-1.5, 0.5, 2.0], np.float32),)


def eval_reference(x):
    return 0.5 * (0.5 * np.asarray(x, np.float64) ** 2) ** 2
