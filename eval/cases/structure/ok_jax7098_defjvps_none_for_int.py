"""structure look-alike: defjvps with None for the argument callers pass as an int.

Report: jax-ml/jax#7098 https://github.com/jax-ml/jax/issues/7098 (an int argument gets a float0
tangent; a None rule never touches it).
"""
import jax
import jax.numpy as jnp
import numpy as np

EVAL = {
    "id": "structure/ok_jax7098_defjvps_none_for_int", "family": "structure", "expect": "ok",
    "source": "jax-ml/jax#7098", "url": "https://github.com/jax-ml/jax/issues/7098",
    "written_at": "2026-12-01", "written_at_commit": "c10c45a8c2ee52022265ee289b536960fd004d90",
    "argnums": (0,),
}


@jax.custom_jvp
def repeat_scale(n, x):
    return n * x


repeat_scale.defjvps(None, lambda x_dot, out, n, x: n * x_dot)


def eval_fn(x):
    return jnp.sum(repeat_scale(3, x))


def eval_inputs():
    return (np.array([0.5, 1.5], np.float32),)


def eval_reference(x):
    return np.sum(3.0 * np.asarray(x, np.float64))
