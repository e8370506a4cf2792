"""structure hazard: bwd of a mean returns the scalar output cotangent as the input's cotangent.

Report: jax-ml/jax#28757 https://github.com/jax-ml/jax/pull/28757 ("improve error message when
custom_vjp bwd rule produces wrong shape/dtype": a bwd whose output shape differs from its input's).
"""
import jax
import jax.numpy as jnp
import numpy as np

EVAL = {
    "id": "structure/jax28757_bwd_mean_cotangent", "family": "structure", "expect": "hazard",
    "source": "jax-ml/jax#28757", "url": "https://github.com/jax-ml/jax/pull/28757",
    "written_at": "2026-12-01", "written_at_commit": "c10c45a8c2ee52022265ee289b536960fd004d90",
    "argnums": (0,),
}


@jax.custom_vjp
def average(x):
    return jnp.mean(x)


def average_fwd(x):
    return jnp.mean(x), x.size


def average_bwd(n, g):
    return (g / n,)  # eval: span


average.defvjp(average_fwd, average_bwd)


def eval_fn(x):
    return average(x)


def eval_inputs():
    return (np.array([1.0, 2.0, 4.0, 5.0], np.float32),)


def eval_reference(x):
    return np.mean(np.asarray(x, np.float64))
