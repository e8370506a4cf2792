"""nonlinear-jvp hazard: nan_to_num applied to the tangent inside a custom_jvp rule.

Report: jax-ml/jax#9087 https://github.com/jax-ml/jax/issues/9087 ("Cannot do nan_to_num in
customized JVP functions"): the maintainer confirms `where` on the tangent makes the rule
non-transposable, so reverse mode fails; a custom_vjp is the fit for that.
"""
import jax
import jax.numpy as jnp
import numpy as np

EVAL = {
    "id": "nonlinear-jvp/jax9087_nan_to_num_tangent", "family": "nonlinear-jvp", "expect": "hazard",
    "source": "jax-ml/jax#9087", "url": "https://github.com/jax-ml/jax/issues/9087",
    "written_at": "2026-12-01", "written_at_commit": "66aa237f5176449a9711e6278e47349128c8731b",
    "argnums": (0,), "extra": ["jvp"],
}


@jax.custom_jvp
def safe_log(x):
    return jnp.log(x)


@safe_log.defjvp
def safe_log_jvp(primals, tangents):
    (x,), (x_dot,) = primals, tangents
    return jnp.log(x), jnp.nan_to_num(x_dot / x)  # eval: span


def eval_fn(x):
    return safe_log(x)


def eval_inputs():
    return (np.array([0.5, 2.0], np.float32),)


def eval_reference(x):
    return np.log(np.asarray(x, np.float64))
