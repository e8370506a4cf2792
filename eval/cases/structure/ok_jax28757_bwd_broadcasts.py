"""structure look-alike: bwd of a full reduction broadcasts the cotangent to the input's shape.

Report: jax-ml/jax#28757 https://github.com/jax-ml/jax/pull/28757 (a bwd must produce the
input's shape; broadcasting the scalar cotangent does).
"""
import jax
import jax.numpy as jnp
import numpy as np

EVAL = {
    "id": "structure/ok_jax28757_bwd_broadcasts", "family": "structure", "expect": "ok",
    "source": "jax-ml/jax#28757", "url": "https://github.com/jax-ml/jax/pull/28757",
    "written_at": "2026-12-01", "written_at_commit": "c10c45a8c2ee52022265ee289b536960fd004d90",
    "argnums": (0,),
}


@jax.custom_vjp
def total(x):
    return jnp.sum(x)


def total_fwd(x):
    return jnp.sum(x), x.shape


def total_bwd(shape, g):
    return (jnp.broadcast_to(g, shape),)


total.defvjp(total_fwd, total_bwd)


def eval_fn(x):
    return total(x)


def eval_inputs():
    return (np.array([1.0, 2.0, 3.0], np.float32),)


def eval_reference(x):
    return np.sum(np.asarray(x, np.float64))
