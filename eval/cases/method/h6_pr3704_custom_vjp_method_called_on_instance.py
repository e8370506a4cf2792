"""method hazard: a custom_vjp with nondiff_argnums=(0,) decorates a method that is called on an instance.

Report: jax-ml/jax#3704 https://github.com/jax-ml/jax/pull/3704 (a PR, never merged, to make custom_jvp
and custom_vjp usable on methods: the decorated object is not a descriptor, so instance.method(x)
does not bind self and the call is short of one argument). Here a scaled-tanh layer defines its
custom rule on its own method.
"""
import functools

import jax
import jax.numpy as jnp
import numpy as np

EVAL = {
    "id": "method/h6_pr3704_custom_vjp_method_called_on_instance", "family": "method",
    "expect": "hazard", "source": "jax-ml/jax#3704", "url": "https://github.com/jax-ml/jax/pull/3704",
    "written_at": "2026-12-02", "written_at_commit": "62a0272af379a14644eeb31ed58eba40374c4cfb",
    "argnums": (0,), "heldout": True,
}


class ScaledTanh:
    def __init__(self, gain):
        self.gain = gain

    @functools.partial(jax.custom_vjp, nondiff_argnums=(0,))  # eval: span
    def apply(self, x):  # eval: span
        return jnp.tanh(self.gain * x)

    def _apply_fwd(self, x):
        y = jnp.tanh(self.gain * x)
        return y, y

    def _apply_bwd(self, y, g):
        return (g * self.gain * (1.0 - y ** 2),)

    apply.defvjp(_apply_fwd, _apply_bwd)


LAYER = ScaledTanh(1.5)


def eval_fn(x):
    return jnp.sum(LAYER.apply(x))  # eval: span


def eval_inputs():
    return (np.array([0.2, -0.7, 1.3], np.float32),)


def eval_reference(x):
    return np.asarray(np.sum(np.tanh(1.5 * np.asarray(x, np.float64))))
