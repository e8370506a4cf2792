"""nonlinear-jvp hazard: a custom_jvp rule for a product builds the tangent as f(x+tx, y+ty) - f(x, y), keeping tx*ty.

Report: dfm/extending-jax#1 https://github.com/dfm/extending-jax/issues/1 (a tutorial on custom JAX
operations said no transpose rule was needed because "our JVP is linear in the tangents"; the
reply: every well-behaved JVP is linear in the tangents by definition, and reverse mode transposes
only that linear tangent computation). Here a gain-times-signal op writes its tangent as the
difference of the expanded product, so the second-order term tx*ty makes it bilinear in the
tangents: jvp is off by that term and grad cannot transpose it.
"""
import jax
import jax.numpy as jnp
import numpy as np

EVAL = {
    "id": "nonlinear-jvp/h3_extjax1_tangent_from_finite_expansion", "family": "nonlinear-jvp",
    "expect": "hazard", "source": "dfm/extending-jax#1", "url": "https://github.com/dfm/extending-jax/issues/1",
    "written_at": "2026-12-02", "written_at_commit": "211ce24975f5ee97618de3dc23050e26a289688a",
    "argnums": (0, 1), "extra": ["jvp"], "heldout": True,
}


@jax.custom_jvp
def amplify(gain, signal):
    return gain * signal


@amplify.defjvp
def _amplify_jvp(primals, tangents):
    (gain, signal), (t_gain, t_signal) = primals, tangents
    out = amplify(gain, signal)
    return out, (gain + t_gain) * (signal + t_signal) - out  # eval: span


def eval_fn(gain, signal):
    return jnp.sum(amplify(gain, signal))


def eval_inputs():
    return (np.array([0.5, 2.0, -1.0], np.float32), np.array([1.5, -0.3, 0.8], np.float32))


def eval_reference(gain, signal):
    return np.asarray(np.sum(np.asarray(gain, np.float64) * np.asarray(signal, np.float64)))
