"""structure hazard: defjvps rule multiplies the tangent of an argument that callers pass as an int.

Report: jax-ml/jax#7098 https://github.com/jax-ml/jax/issues/7098 ("Reverse-mode autodiff of
custom_vjp fails": a defjvps function called with a Python int; the int argument's tangent is a
float0 zero that the rule multiplies).
"""
import jax
import jax.numpy as jnp
import numpy as np

EVAL = {
    "id": "structure/jax7098_defjvps_int_count", "family": "structure", "expect": "hazard",
    "source": "jax-ml/jax#7098", "url": "https://github.com/jax-ml/jax/issues/7098",
    "written_at": "2026-12-01", "written_at_commit": "c10c45a8c2ee52022265ee289b536960fd004d90",
    "argnums": (0,),
}


@jax.custom_jvp
def repeat_scale(n, x):
    return n * x


repeat_scale.defjvps(lambda n_dot, out, n, x: n_dot * x,  # eval: span
                     lambda x_dot, out, n, x: n * x_dot)


def eval_fn(x):
    return jnp.sum(repeat_scale(3, x))  # eval: span


def eval_inputs():
    return (np.array([0.5, 1.5], np.float32),)


def eval_reference(x):
    return np.sum(3.0 * np.asarray(x, np.float64))
