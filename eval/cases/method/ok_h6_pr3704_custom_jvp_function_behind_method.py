"""method look-alike: the custom_jvp is a module-level function and the class method only calls it.

Report: jax-ml/jax#3704 https://github.com/jax-ml/jax/pull/3704 (the PR to let custom_jvp/custom_vjp
decorate methods was not merged; the advice in the thread was to write the rule on a plain function
and put a thin wrapper method on the class, passing what the rule needs as arguments). Here a
scaled-tanh layer does so.
"""
import jax
import jax.numpy as jnp
import numpy as np

EVAL = {
    "id": "method/ok_h6_pr3704_custom_jvp_function_behind_method", "family": "method",
    "expect": "ok", "source": "jax-ml/jax#3704", "url": "https://github.com/jax-ml/jax/pull/3704",
    "written_at": "2026-12-02", "written_at_commit": "62a0272af379a14644eeb31ed58eba40374c4cfb",
    "argnums": (0,), "extra": ["jvp", "jacfwd"], "heldout": True,
}


@jax.custom_jvp
def scaled_tanh(gain, x):
    return jnp.tanh(gain * x)


@scaled_tanh.defjvp
def _scaled_tanh_jvp(primals, tangents):
    (gain, x), (dgain, dx) = primals, tangents
    y = scaled_tanh(gain, x)
    return y, (1.0 - y ** 2) * (dgain * x + gain * dx)


class ScaledTanh:
    def __init__(self, gain):
        self.gain = gain

    def apply(self, x):  # eval: span
        return scaled_tanh(self.gain, x)  # eval: span


LAYER = ScaledTanh(1.5)


def eval_fn(x):
    return jnp.sum(LAYER.apply(x))


def eval_inputs():
    return (np.array([0.2, -0.7, 1.3], np.float32),)


def eval_reference(x):
    return np.asarray(np.sum(np.tanh(1.5 * np.asarray(x, np.float64))))
