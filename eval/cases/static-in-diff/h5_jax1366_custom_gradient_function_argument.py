"""static-in-diff hazard: a jax.custom_gradient function that takes a Python callable as a positional argument.

Report: jax-ml/jax#1366 https://github.com/jax-ml/jax/issues/1366 (a user wanted custom_gradient on
f(func, x, y) with func an ordinary function and got "<class 'function'> is not a valid JAX type";
custom_gradient has no nondiff_argnums, every argument must be an array). Here a blended binary op
takes the op to blend as its first argument.
"""
import jax
import jax.numpy as jnp
import numpy as np

EVAL = {
    "id": "static-in-diff/h5_jax1366_custom_gradient_function_argument", "family": "static-in-diff",
    "expect": "hazard", "source": "jax-ml/jax#1366", "url": "https://github.com/jax-ml/jax/issues/1366",
    "written_at": "2026-12-02", "written_at_commit": "2f27280778b10986f4436c94bc630dd525ce7747",
    "argnums": (0, 1), "heldout": True,
}


def _weighted(a, b):
    return a * b + 0.5 * a


@jax.custom_gradient  # eval: span
def halved_grad(op, a, b):  # eval: span
    out, op_vjp = jax.vjp(op, a, b)
    return out, lambda g: (None,) + tuple(0.5 * c for c in op_vjp(g))


def eval_fn(a, b):
    return jnp.sum(halved_grad(_weighted, a, b))  # eval: span


def eval_inputs():
    return (np.array([1.0, 2.0, -1.0], np.float32), np.array([0.5, -1.5, 3.0], np.float32))


def eval_reference(a, b):
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    return np.asarray(np.sum(a * b + 0.5 * a))


def eval_grad_reference(a, b):
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    return (0.5 * (b + 0.5), 0.5 * a)
