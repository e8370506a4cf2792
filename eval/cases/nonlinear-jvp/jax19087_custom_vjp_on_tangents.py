"""nonlinear-jvp hazard: a custom_jvp rule applies a custom_vjp function to its tangents.

Report: jax-ml/jax#19087 https://github.com/jax-ml/jax/issues/19087 ("Transpose rule for
'custom_vjp_call_jaxpr' not implemented for grad(custom_jvp(custom_vjp))"): the tangent map is
linear, but reverse mode must transpose it, and a custom_vjp call has no transpose rule.
"""
import jax
import jax.numpy as jnp
import numpy as np

EVAL = {
    "id": "nonlinear-jvp/jax19087_custom_vjp_on_tangents", "family": "nonlinear-jvp", "expect": "hazard",
    "source": "jax-ml/jax#19087", "url": "https://github.com/jax-ml/jax/issues/19087",
    "written_at": "2026-12-01", "written_at_commit": "e40c617544567857a00218a94effb935544a8c55",
    "argnums": (0, 1), "extra": ["jvp"],
}


@jax.custom_vjp
def combine(a, b):
    return a + b


combine.defvjp(lambda a, b: (a + b, None), lambda _, g: (g, g))


@jax.custom_jvp
def total(x, y):
    return x + y


@total.defjvp
def total_jvp(primals, tangents):
    x, y = primals
    tx, ty = tangents
    return x + y, combine(tx, ty)  # eval: span


def eval_fn(x, y):
    return total(x, y)


def eval_inputs():
    return (np.float32(1.0), np.float32(2.0))


def eval_reference(x, y):
    return np.float64(x) + np.float64(y)
