"""nonlinear-jvp look-alike: the jax#3035 rule written linearly in the tangent.

Report: jax-ml/jax#3035 https://github.com/jax-ml/jax/issues/3035 (the working variant: a
tangent output that is a primal-dependent factor times the tangent transposes fine).
"""
import jax
import jax.numpy as jnp
import numpy as np

EVAL = {
    "id": "nonlinear-jvp/ok_jax3035_linear_tangent", "family": "nonlinear-jvp", "expect": "ok",
    "source": "jax-ml/jax#3035", "url": "https://github.com/jax-ml/jax/issues/3035",
    "written_at": "2026-12-01", "written_at_commit": "644178d763c66426181796926e5e777752a081d9",
    "argnums": (0,), "extra": ["jvp"],
}


@jax.custom_jvp
def cube(x):
    return x * x * x


@cube.defjvp
def cube_jvp(primals, tangents):
    (x,) = primals
    scale = 3.0 * x ** 2
    return cube(x), scale * tangents[0]  # eval: span


def eval_fn(x):
    return cube(x)


def eval_inputs():
    return (np.array([0.5, 2.0], np.float32),)


def eval_reference(x):
    return np.asarray(x, np.float64) ** 3
