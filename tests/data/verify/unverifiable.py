"""Rewrites the harness cannot check by itself: each must be reported unverified, with why,
unless the user names example inputs (apply_op_example, see pyproject.toml here)."""

from functools import partial

import jax
import jax.numpy as jnp


# `op` has no annotation, no default and no call site: no value can be synthesised for it.
@partial(jax.custom_vjp, nondiff_argnums=(0, 1))
def apply_op(op, w, x):
    return jax.tree_util.tree_map(op, x) * w


def apply_op_fwd(op, w, x):
    return jax.tree_util.tree_map(op, x) * w, x


def apply_op_bwd(op, w, x, g):
    _, vjp = jax.vjp(op, x)
    return vjp(g * w)


apply_op.defvjp(apply_op_fwd, apply_op_bwd)


# The same function, with example inputs named in [tool.vjplint.verify] examples.
@partial(jax.custom_vjp, nondiff_argnums=(0, 1))
def apply_op_example(op, w, x):
    return op(x) * w


def apply_op_example_fwd(op, w, x):
    return op(x) * w, x


def apply_op_example_bwd(op, w, x, g):
    _, vjp = jax.vjp(op, x)
    return vjp(g * w)


apply_op_example.defvjp(apply_op_example_fwd, apply_op_example_bwd)


def apply_op_example_args(seed):
    return (jnp.tanh, jnp.full((3,), 0.5 + seed), jnp.arange(3.0) + seed)


# Only a (5, 7) array works here, and no probed shape has 35 elements.
@partial(jax.custom_vjp, nondiff_argnums=(0,))
def folded(w, x):
    return jnp.sum(x.reshape(5, 7), axis=0) * jnp.sum(w)


def folded_fwd(w, x):
    return folded(w, x), None


def folded_bwd(w, _, g):
    return (jnp.broadcast_to(g * jnp.sum(w), (5, 7)).reshape(35),)


folded.defvjp(folded_fwd, folded_bwd)


def make_scaler():
    # Defined inside a function: the harness cannot reach it from the module.
    @partial(jax.custom_vjp, nondiff_argnums=(0,))
    def inner(w, x):
        return x * w

    def inner_fwd(w, x):
        return x * w, None

    def inner_bwd(w, _, g):
        return (g * w,)

    inner.defvjp(inner_fwd, inner_bwd)
    return inner
