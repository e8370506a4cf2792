"""nonlinear-jvp hazard: a custom_jvp rule raises the tangent to a power.

Report: jax-ml/jax#3035 https://github.com/jax-ml/jax/issues/3035 (questions on reverse AD: a
jvp rule returning `tangents[0]**3.` makes grad fail with "Transpose rule ... for 'pow' not
implemented", while returning the tangent itself works).
"""
import jax
import jax.numpy as jnp
import numpy as np

EVAL = {
    "id": "nonlinear-jvp/jax3035_tangent_cubed", "family": "nonlinear-jvp", "expect": "hazard",
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
    return cube(x), 3.0 * x * x * tangents[0] ** 3.0  # eval: span


def eval_fn(x):
    return cube(x)


def eval_inputs():
    return (np.array([0.5, 2.0], np.float32),)


def eval_reference(x):
    return np.asarray(x, np.float64) ** 3
