"""silent-wrong hazard: a custom_vjp bwd returns the second cotangent with a stray minus sign.

Report: jax-ml/jax#13048 https://github.com/jax-ml/jax/issues/13048 (the custom derivatives tutorial's
custom_vjp example for sin(x) * y returned -sin(x) * g as the cotangent of y; nothing fails, the
gradient with respect to y is just negated, and the tutorial only differentiated x so nobody saw it).
Here a gain-modulated cosine has the same flipped sign on its gain's cotangent.
"""
import jax
import jax.numpy as jnp
import numpy as np

EVAL = {
    "id": "silent-wrong/h5_jax13048_bwd_negated_second_cotangent", "family": "silent-wrong",
    "expect": "hazard", "source": "jax-ml/jax#13048", "url": "https://github.com/jax-ml/jax/issues/13048",
    "written_at": "2026-12-02", "written_at_commit": "2f27280778b10986f4436c94bc630dd525ce7747",
    "argnums": (0, 1), "heldout": True,
}


@jax.custom_vjp
def modulated(phase, gain):
    return jnp.cos(phase) * gain


def _modulated_fwd(phase, gain):
    return modulated(phase, gain), (jnp.sin(phase), jnp.cos(phase), gain)


def _modulated_bwd(res, g):
    sin_p, cos_p, gain = res
    return (-sin_p * gain * g, -cos_p * g)  # eval: span


modulated.defvjp(_modulated_fwd, _modulated_bwd)


def eval_fn(phase, gain):
    return jnp.sum(modulated(phase, gain))


def eval_inputs():
    return (np.array([0.3, 1.1, -0.7], np.float32), np.array([2.0, 0.5, 1.5], np.float32))


def eval_reference(phase, gain):
    return np.asarray(np.sum(np.cos(np.asarray(phase, np.float64)) * np.asarray(gain, np.float64)))
