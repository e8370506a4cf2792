"""structure hazard: bwd calls a stored `jax.vjp` pullback with two arguments instead of one pair.

Report: jax-ml/jax#13099 https://github.com/jax-ml/jax/issues/13099 (a custom_vjp whose fwd keeps
the pullback of an inner function returning a pair `(xs, y)`; the bwd called the pullback with the
two cotangents as separate arguments and got an inscrutable error, later improved in
jax-ml/jax#13103). The function's output is a pair, so `g` is a pair; splatting it into the
pullback passes two arguments where `jax.vjp`'s function takes exactly one.
"""
import jax
import jax.numpy as jnp
import numpy as np

EVAL = {
    "id": "structure/ho_jax13099_pullback_called_with_two", "family": "structure", "expect": "hazard",
    "source": "jax-ml/jax#13099", "url": "https://github.com/jax-ml/jax/issues/13099",
    "written_at": "2026-12-02", "written_at_commit": "7d338003625df627af3f64e858b0803f5255fc3c",
    "argnums": (0,), "heldout": True,
}


def moments(x):
    return jnp.sin(x), jnp.sum(x * x)


@jax.custom_vjp  # eval: span
def combine(x):  # eval: span
    return moments(x)


def combine_fwd(x):
    out, pull = jax.vjp(moments, x)
    return out, pull


def combine_bwd(pull, g):
    return pull(*g)  # eval: span


combine.defvjp(combine_fwd, combine_bwd)


def eval_fn(x):
    a, b = combine(x)
    return a + b


def eval_inputs():
    return (np.array([0.5, -0.25, 1.0], np.float32),)


def eval_reference(x):
    x = np.asarray(x, np.float64)
    return np.sin(x) + np.sum(x * x)
