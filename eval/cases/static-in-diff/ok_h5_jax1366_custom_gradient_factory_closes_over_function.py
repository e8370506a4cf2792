"""static-in-diff look-alike: a factory that closes a jax.custom_gradient function over a Python callable.

Report: jax-ml/jax#1366 https://github.com/jax-ml/jax/issues/1366 (the workaround in the report: build
the custom_gradient function inside make_f(func), so the callable is closed over instead of passed
as an argument; only arrays cross the custom_gradient boundary). Here a blended binary op is built
the same way, scaling the op's own gradient by one half on purpose.
"""
import jax
import jax.numpy as jnp
import numpy as np

EVAL = {
    "id": "static-in-diff/ok_h5_jax1366_custom_gradient_factory_closes_over_function", "family": "static-in-diff",
    "expect": "ok", "source": "jax-ml/jax#1366", "url": "https://github.com/jax-ml/jax/issues/1366",
    "written_at": "2026-12-02", "written_at_commit": "2f27280778b10986f4436c94bc630dd525ce7747",
    "argnums": (0, 1), "heldout": True,
}


def _weighted(a, b):
    return a * b + 0.5 * a


def make_halved_grad(op):
    @jax.custom_gradient  # eval: span
    def halved_grad(a, b):  # eval: span
        out, op_vjp = jax.vjp(op, a, b)
        return out, lambda g: tuple(0.5 * c for c in op_vjp(g))

    return halved_grad


halved_weighted = make_halved_grad(_weighted)


def eval_fn(a, b):
    return jnp.sum(halved_weighted(a, b))


def eval_inputs():
    return (np.array([1.0, 2.0, -1.0], np.float32), np.array([0.5, -1.5, 3.0], np.float32))


def eval_reference(a, b):
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    return np.asarray(np.sum(a * b + 0.5 * a))


def eval_grad_reference(a, b):
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    return (0.5 * (b + 0.5), 0.5 * a)
