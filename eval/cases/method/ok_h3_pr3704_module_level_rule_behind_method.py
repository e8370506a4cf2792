"""method look-alike: the custom_vjp is a module-level function and the method only forwards to it.

Report: jax-ml/jax#3704 https://github.com/jax-ml/jax/pull/3704 (the PR to let custom_vjp decorate
methods was closed unmerged; the advice in jax-ml/jax#2483 was to write the rule as a function and
put a thin wrapper method on the class). Same calibration as the hazard, with the gain passed in.
"""
import jax
import jax.numpy as jnp
import numpy as np

EVAL = {
    "id": "method/ok_h3_pr3704_module_level_rule_behind_method", "family": "method",
    "expect": "ok", "source": "jax-ml/jax#3704", "url": "https://github.com/jax-ml/jax/pull/3704",
    "written_at": "2026-12-02", "written_at_commit": "211ce24975f5ee97618de3dc23050e26a289688a",
    "argnums": (0,), "heldout": True,
}


@jax.custom_vjp
def calibrate(gain, x):
    return jnp.tanh(gain * x)


def _calibrate_fwd(gain, x):
    y = jnp.tanh(gain * x)
    return y, (gain, x, y)


def _calibrate_bwd(res, g):
    gain, x, y = res
    slope = (1.0 - y ** 2) * g
    return jnp.sum(slope * x), gain * slope


calibrate.defvjp(_calibrate_fwd, _calibrate_bwd)


class Calibration:
    gain = 1.5

    def apply(self, x):  # eval: span
        return calibrate(jnp.float32(self.gain), x)  # eval: span


def eval_fn(x):
    return jnp.sum(Calibration().apply(x))


def eval_inputs():
    return (np.array([0.1, -0.6, 1.2], np.float32),)


def eval_reference(x):
    return np.asarray(np.sum(np.tanh(1.5 * np.asarray(x, np.float64))))
