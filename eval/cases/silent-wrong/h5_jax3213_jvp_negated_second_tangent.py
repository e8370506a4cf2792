"""silent-wrong hazard: a custom_jvp rule adds the second argument's tangent with the wrong sign.

Report: jax-ml/jax#3213 https://github.com/jax-ml/jax/issues/3213 (the jax.custom_jvp docs example for
f(x, y) = sin(x) * y used -sin(x) * y_dot for the y term; df/dy is +sin(x), so every derivative with
respect to y came out negated without any error). Here a damped amplitude carries the same sign slip.
"""
import jax
import jax.numpy as jnp
import numpy as np

EVAL = {
    "id": "silent-wrong/h5_jax3213_jvp_negated_second_tangent", "family": "silent-wrong",
    "expect": "hazard", "source": "jax-ml/jax#3213", "url": "https://github.com/jax-ml/jax/issues/3213",
    "written_at": "2026-12-02", "written_at_commit": "2f27280778b10986f4436c94bc630dd525ce7747",
    "argnums": (0, 1), "heldout": True, "extra": ["jvp", "jacfwd"],
}


@jax.custom_jvp
def damped(t, amp):
    return jnp.exp(-t) * amp


@damped.defjvp
def _damped_jvp(primals, tangents):
    t, amp = primals
    t_dot, amp_dot = tangents
    decay = jnp.exp(-t)
    return decay * amp, -decay * amp * t_dot - decay * amp_dot  # eval: span


def eval_fn(t, amp):
    return jnp.sum(damped(t, amp))


def eval_inputs():
    return (np.array([0.2, 0.9, 1.6], np.float32), np.array([1.0, -2.0, 0.5], np.float32))


def eval_reference(t, amp):
    return np.asarray(np.sum(np.exp(-np.asarray(t, np.float64)) * np.asarray(amp, np.float64)))
