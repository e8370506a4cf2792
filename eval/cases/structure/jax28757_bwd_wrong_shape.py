"""structure hazard: bwd returns a cotangent whose shape differs from the primal input.

Report: jax-ml/jax#28757 https://github.com/jax-ml/jax/pull/28757 ("improve error message when
custom_vjp bwd rule produces wrong shape/dtype": "Even the best of us can miss important error
information, like noticing when shapes disagree").
"""
import jax
import jax.numpy as jnp
import numpy as np

EVAL = {
    "id": "structure/jax28757_bwd_wrong_shape", "family": "structure", "expect": "hazard",
    "source": "jax-ml/jax#28757", "url": "https://github.com/jax-ml/jax/pull/28757",
    "written_at": "2026-12-01", "written_at_commit": "66aa237f5176449a9711e6278e47349128c8731b",
    "argnums": (0,),
}


@jax.custom_vjp
def total(x):
    return jnp.sum(x)


def total_fwd(x):
    return jnp.sum(x), x.shape


def total_bwd(shape, g):
    return (g,)  # eval: span


total.defvjp(total_fwd, total_bwd)


def eval_fn(x):
    return total(x)


def eval_inputs():
    return (np.array([1.0, 2.0, 3.0], np.float32),)


def eval_reference(x):
    return np.sum(np.asarray(x, np.float64))
