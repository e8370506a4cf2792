"""structure hazard: one pytree argument, but bwd returns one cotangent per leaf (from a helper).

Report: jax-ml/jax#8356 https://github.com/jax-ml/jax/issues/8356 ("Improve error message in
custom_vjp when returning the wrong grad structure"): the bwd's output must mirror the args tuple;
a single `params` pair needs `((d_w, d_b),)`, not `(d_w, d_b)`.
"""
import jax
import jax.numpy as jnp
import numpy as np

EVAL = {
    "id": "structure/jax8356_params_grads_from_helper", "family": "structure", "expect": "hazard",
    "source": "jax-ml/jax#8356", "url": "https://github.com/jax-ml/jax/issues/8356",
    "written_at": "2026-12-01", "written_at_commit": "c10c45a8c2ee52022265ee289b536960fd004d90",
    "argnums": (0,),
}


@jax.custom_vjp
def affine(params):  # eval: span
    w, b = params
    return w * 2.0 + b


def affine_fwd(params):
    return affine(params), None


def _leaf_grads(g):
    return 2.0 * g, g


def affine_bwd(_, g):
    return _leaf_grads(g)  # eval: span


affine.defvjp(affine_fwd, affine_bwd)


def eval_fn(w):
    return affine((w, jnp.ones_like(w)))


def eval_inputs():
    return (np.array([0.5, -1.0], np.float32),)


def eval_reference(w):
    return 2.0 * np.asarray(w, np.float64) + 1.0
