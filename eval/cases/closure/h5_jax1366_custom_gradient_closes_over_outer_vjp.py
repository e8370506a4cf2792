"""closure hazard: a jax.custom_gradient function that returns an output and pullback computed outside it.

Report: jax-ml/jax#1366 https://github.com/jax-ml/jax/issues/1366 (the reporter's third attempt: run
jax.vjp on the inputs first, then define a custom_gradient _f(x, y) that just returns the
precomputed output and closes over the pullback; it "doesn't work": under grad the closed-over
values are tracers of the outer differentiation, which escape). Here a blended binary op does it.
"""
import jax
import jax.numpy as jnp
import numpy as np

EVAL = {
    "id": "closure/h5_jax1366_custom_gradient_closes_over_outer_vjp", "family": "closure",
    "expect": "hazard", "source": "jax-ml/jax#1366", "url": "https://github.com/jax-ml/jax/issues/1366",
    "written_at": "2026-12-02", "written_at_commit": "2f27280778b10986f4436c94bc630dd525ce7747",
    "argnums": (0, 1), "heldout": True,
}


def _weighted(a, b):
    return a * b + 0.5 * a


def halved_weighted(a, b):
    out, op_vjp = jax.vjp(_weighted, a, b)  # eval: span

    @jax.custom_gradient  # eval: span
    def _inner(a_, b_):  # eval: span
        return out, lambda g: tuple(0.5 * c for c in op_vjp(g))  # eval: span

    return _inner(a, b)


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
