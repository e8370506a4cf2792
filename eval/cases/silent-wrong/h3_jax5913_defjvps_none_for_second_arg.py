"""silent-wrong hazard: defjvps with None for an argument that has no closed-form derivative; its gradient is silently zero.

Report: jax-ml/jax#5913 https://github.com/jax-ml/jax/issues/5913 (a bivariate function with a
known JVP in x only; the reporter wanted differentiation with respect to y to raise, as betainc's
primitive rule does, but custom_jvp treats the missing rule as a zero tangent). Here a regularised
incomplete-gamma-like weight gets a rule for x and None for the shape parameter, and the caller
differentiates both.
"""
import jax
import jax.numpy as jnp
import numpy as np

EVAL = {
    "id": "silent-wrong/h3_jax5913_defjvps_none_for_second_arg", "family": "silent-wrong",
    "expect": "hazard", "source": "jax-ml/jax#5913", "url": "https://github.com/jax-ml/jax/issues/5913",
    "written_at": "2026-12-02", "written_at_commit": "211ce24975f5ee97618de3dc23050e26a289688a",
    "argnums": (0, 1), "heldout": True,
}


@jax.custom_jvp
def soft_weight(x, shape):
    return 1.0 - jnp.exp(-shape * x)


soft_weight.defjvps(
    lambda x_dot, ans, x, shape: shape * jnp.exp(-shape * x) * x_dot,
    None,  # eval: span
)


def eval_fn(x, shape):
    return jnp.sum(soft_weight(x, shape))  # eval: span


def eval_inputs():
    return (np.array([0.5, 1.0, 2.0], np.float32), np.array([1.5, 0.7, 0.3], np.float32))


def eval_reference(x, shape):
    x, s = np.asarray(x, np.float64), np.asarray(shape, np.float64)
    return np.asarray(np.sum(1.0 - np.exp(-s * x)))
