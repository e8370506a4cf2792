"""method hazard: jax.custom_vjp applied to an instance method and called through the instance.

Report: jax-ml/jax#3704 https://github.com/jax-ml/jax/pull/3704 (a PR to let custom_jvp and
custom_vjp decorate methods, addressing jax-ml/jax#2483; it was closed unmerged, so the decorated
object still has no __get__ and obj.method(x) does not bind self). Here a calibration object
decorates its own transform with custom_vjp and defines the rules as methods too.
"""
import jax
import jax.numpy as jnp
import numpy as np

EVAL = {
    "id": "method/h3_pr3704_custom_vjp_on_instance_method", "family": "method",
    "expect": "hazard", "source": "jax-ml/jax#3704", "url": "https://github.com/jax-ml/jax/pull/3704",
    "written_at": "2026-12-02", "written_at_commit": "211ce24975f5ee97618de3dc23050e26a289688a",
    "argnums": (0,), "heldout": True,
}


class Calibration:
    gain = 1.5

    @jax.custom_vjp  # eval: span
    def apply(self, x):  # eval: span
        return jnp.tanh(self.gain * x)

    def _apply_fwd(self, x):
        y = jnp.tanh(self.gain * x)
        return y, y

    def _apply_bwd(self, y, g):
        return None, self.gain * (1.0 - y ** 2) * g

    apply.defvjp(_apply_fwd, _apply_bwd)


def eval_fn(x):
    return jnp.sum(Calibration().apply(x))  # eval: span


def eval_inputs():
    return (np.array([0.1, -0.6, 1.2], np.float32),)


def eval_reference(x):
    return np.asarray(np.sum(np.tanh(1.5 * np.asarray(x, np.float64))))
