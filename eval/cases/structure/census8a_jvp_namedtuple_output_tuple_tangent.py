"""structure hazard: a custom_jvp returning a NamedTuple of moments whose
rule returns a plain tuple of tangents: JAX compares the pytree nodes.

Source: census row E05 of docs/facts/jax-errors.md, written on branch rules8a as a realistic edit of a
correct rule through a route no fixture of the rule covered before (issue 45).
https://docs.jax.dev/en/latest/notebooks/Custom_derivative_rules_for_Python_code.html
"""
import jax
import jax.numpy as jnp
import numpy as np
from typing import NamedTuple

EVAL = {
    "id": "structure/census8a_jvp_namedtuple_output_tuple_tangent", "family": "structure", "expect": "hazard",
    "source": "census E05", "url": "https://docs.jax.dev/en/latest/notebooks/Custom_derivative_rules_for_Python_code.html",
    "written_at": "2026-12-07", "written_at_commit": "5abea46c1fd00eda02b2669f98bc7f1223e4b9b6",
    "argnums": (0,), "extra": ["jvp"],
}


class Moments(NamedTuple):
    mean: jax.Array
    var: jax.Array


@jax.custom_jvp
def moments(x):
    m = jnp.mean(x)
    return Moments(m, jnp.mean((x - m) ** 2))


@moments.defjvp
def moments_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    out = moments(x)
    tm = jnp.mean(t)
    return out, (tm, jnp.mean(2 * (x - out.mean) * (t - tm)))  # eval: span


def eval_fn(x):
    mv = moments(x)
    return mv.var + 0.5 * mv.mean


def eval_inputs():
    return (np.array([0.3, 1.7, -0.4, 0.9], np.float32),)


def eval_reference(x):
    x = np.asarray(x, np.float64)
    return np.var(x) + 0.5 * np.mean(x)
