"""structure hazard: a custom_jvp that also returns an integer step count gives that count an integer tangent.

Report: patrick-kidger/diffrax#508 https://github.com/patrick-kidger/diffrax/issues/508 (after a JAX
upgrade, differentiating diffeqsolve failed with "Custom JVP rule must produce primal and tangent
outputs with corresponding shapes and dtypes ... primal int32[] with tangent int32[], expecting
tangent float0[]": a custom_jvp inside returned zeros_like of its integer outputs as their tangents).
Here a fixed-iteration Newton square root reports how many steps it took.
"""
import jax
import jax.numpy as jnp
import numpy as np

EVAL = {
    "id": "structure/h5_diffrax508_custom_jvp_int_tangent_for_step_count", "family": "structure",
    "expect": "hazard", "source": "patrick-kidger/diffrax#508",
    "url": "https://github.com/patrick-kidger/diffrax/issues/508",
    "written_at": "2026-12-02", "written_at_commit": "2f27280778b10986f4436c94bc630dd525ce7747",
    "argnums": (0,), "heldout": True,
}

STEPS = 8


@jax.custom_jvp
def newton_sqrt(a):
    x = a
    steps = jnp.int32(0)
    for _ in range(STEPS):
        x = 0.5 * (x + a / x)
        steps = steps + 1
    return x, steps


@newton_sqrt.defjvp
def _newton_sqrt_jvp(primals, tangents):
    (a,), (a_dot,) = primals, tangents
    root, steps = newton_sqrt(a)
    return (root, steps), (a_dot / (2.0 * root), jnp.zeros_like(steps))  # eval: span


def eval_fn(a):
    root, _ = newton_sqrt(a)
    return root


def eval_inputs():
    return (np.array([2.0, 9.0, 0.5], np.float32),)


def eval_reference(a):
    return np.sqrt(np.asarray(a, np.float64))
