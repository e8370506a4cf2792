"""static-in-diff look-alike (fixed report): a new-style PRNG key inside a differentiable custom_vjp argument.

Report: jax-ml/jax#18442 https://github.com/jax-ml/jax/issues/18442 ("Cannot take gradient of VJP
function involving new-style RNG key"), fixed by https://github.com/jax-ml/jax/pull/18444 (key
dtypes get a special tangent type in custom_vjp).
"""
import jax
import jax.numpy as jnp
import numpy as np

EVAL = {
    "id": "static-in-diff/ok_jax18442_key_in_state", "family": "static-in-diff", "expect": "ok",
    "source": "jax-ml/jax#18442", "url": "https://github.com/jax-ml/jax/issues/18442",
    "written_at": "2026-12-01", "written_at_commit": "66aa237f5176449a9711e6278e47349128c8731b",
    "argnums": (0,),
}


@jax.custom_vjp
def fixed_point(theta, state):  # eval: span
    value, _ = state
    return value * theta


def fixed_point_fwd(theta, state):
    return fixed_point(theta, state), state[0]


def fixed_point_bwd(value, g):
    return g * value, None


fixed_point.defvjp(fixed_point_fwd, fixed_point_bwd)


def eval_fn(theta):
    return fixed_point(theta, (jnp.float32(8.0), jax.random.key(123)))


def eval_inputs():
    return (np.float32(3.0),)


def eval_reference(theta):
    return 8.0 * np.float64(theta)
