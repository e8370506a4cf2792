"""static-in-diff hazard: a shape tuple in a differentiable slot is unpacked and used to reshape.

Report: jax-ml/jax#8356 https://github.com/jax-ml/jax/issues/8356 (a shape passed as a
differentiable argument of a custom_vjp is traced by `jit`). Here the rule unpacks the shape
into `rows, cols` first and reshapes with them; under `jit` they are tracers and `reshape`
raises (shapes must be concrete).
"""
import jax
import numpy as np

EVAL = {
    "id": "static-in-diff/jax8356_shape_tuple_unpacked", "family": "static-in-diff", "expect": "hazard",
    "source": "jax-ml/jax#8356", "url": "https://github.com/jax-ml/jax/issues/8356",
    "written_at": "2026-12-02", "written_at_commit": "9e042dab056b2e5f1652c5b10417b37c94b25964",
    "argnums": (0,),
}


@jax.custom_vjp
def unflatten(v, shape):  # eval: span
    rows, cols = shape
    return v.reshape(rows, cols).sum(axis=1)  # eval: span


def unflatten_fwd(v, shape):
    return unflatten(v, shape), shape


def unflatten_bwd(shape, g):
    rows, cols = shape
    return (g.repeat(cols), None)


unflatten.defvjp(unflatten_fwd, unflatten_bwd)


def eval_fn(v):
    return unflatten(v, (2, 3))  # eval: span


def eval_inputs():
    return (np.arange(6, dtype=np.float32),)


def eval_reference(v):
    return np.asarray(v, np.float64).reshape(2, 3).sum(axis=1)
