"""nonlinear-jvp look-alike: a custom_jvp rule for a product whose tangent is the product rule, linear in (tx, ty).

Report: dfm/extending-jax#1 https://github.com/dfm/extending-jax/issues/1 (every well-behaved JVP is
linear in the tangents; products belong between a primal and a tangent, never two tangents). Same
gain-times-signal op as the hazard; both tangents appear, each multiplied by a primal.
"""
import jax
import jax.numpy as jnp
import numpy as np

EVAL = {
    "id": "nonlinear-jvp/ok_h3_extjax1_product_rule_tangent", "family": "nonlinear-jvp",
    "expect": "ok", "source": "dfm/extending-jax#1", "url": "https://github.com/dfm/extending-jax/issues/1",
    "written_at": "2026-12-02", "written_at_commit": "211ce24975f5ee97618de3dc23050e26a289688a",
    "argnums": (0, 1), "extra": ["jvp"], "heldout": True,
}


@jax.custom_jvp
def amplify(gain, signal):
    return gain * signal


@amplify.defjvp
def _amplify_jvp(primals, tangents):
    (gain, signal), (t_gain, t_signal) = primals, tangents
    return amplify(gain, signal), t_gain * signal + gain * t_signal  # eval: span


def eval_fn(gain, signal):
    return jnp.sum(amplify(gain, signal))


def eval_inputs():
    return (np.array([0.5, 2.0, -1.0], np.float32), np.array([1.5, -0.3, 0.8], np.float32))


def eval_reference(gain, signal):
    return np.asarray(np.sum(np.asarray(gain, np.float64) * np.asarray(signal, np.float64)))
