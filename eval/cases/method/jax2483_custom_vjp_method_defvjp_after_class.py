"""method hazard: an instance method decorated with `jax.custom_vjp`, rules registered after the class.

Report: jax-ml/jax#2483 https://github.com/jax-ml/jax/issues/2483 ("custom_jvp breaks descriptors";
custom_vjp objects lack `__get__` as well). `layer.apply(x)` does not bind `self`, so every call
fails whatever the rules are.
"""
import jax
import jax.numpy as jnp
import numpy as np

EVAL = {
    "id": "method/jax2483_custom_vjp_method_defvjp_after_class", "family": "method", "expect": "hazard",
    "source": "jax-ml/jax#2483", "url": "https://github.com/jax-ml/jax/issues/2483",
    "written_at": "2026-12-02", "written_at_commit": "9e042dab056b2e5f1652c5b10417b37c94b25964",
    "argnums": (0,),
}


class LeakyClip:
    def __init__(self, slope):
        self.slope = slope

    @jax.custom_vjp  # eval: span
    def apply(self, x):  # eval: span
        return jnp.clip(x, -1.0, 1.0)


def _apply_fwd(self, x):
    return jnp.clip(x, -1.0, 1.0), x


def _apply_bwd(x, g):
    return None, g * jnp.where(jnp.abs(x) < 1.0, 1.0, 0.1)


LeakyClip.apply.defvjp(_apply_fwd, _apply_bwd)
LAYER = LeakyClip(0.1)


def eval_fn(x):
    return LAYER.apply(x)  # eval: span


def eval_inputs():
    return (np.array([0.5, -2.0], np.float32),)


def eval_reference(x):
    return np.clip(np.asarray(x, np.float64), -1.0, 1.0)


def eval_grad_reference(x):
    x = np.asarray(x, np.float64)
    return (np.where(np.abs(x) < 1.0, 1.0, 0.1),)
