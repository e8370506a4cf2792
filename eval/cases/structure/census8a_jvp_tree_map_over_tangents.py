"""structure hazard: a gradient-scaling identity whose jvp rule maps the whole `tangents`
tuple (`tree_map(f, tangents)`), a 1-tuple, where the output is one array.

Source: census row E05 of docs/facts/jax-errors.md, written on branch rules8a as a realistic edit of a
correct rule through a route no fixture of the rule covered before (issue 45).
https://docs.jax.dev/en/latest/notebooks/Custom_derivative_rules_for_Python_code.html
"""
import jax
import jax.numpy as jnp
import numpy as np

EVAL = {
    "id": "structure/census8a_jvp_tree_map_over_tangents", "family": "structure", "expect": "hazard",
    "source": "census E05", "url": "https://docs.jax.dev/en/latest/notebooks/Custom_derivative_rules_for_Python_code.html",
    "written_at": "2026-12-07", "written_at_commit": "5abea46c1fd00eda02b2669f98bc7f1223e4b9b6",
    "argnums": (0,), "extra": ["jvp", "jacfwd"],
}


@jax.custom_jvp
def scale_grad(x):
    return x


@scale_grad.defjvp
def scale_grad_jvp(primals, tangents):
    (x,) = primals
    return x, jax.tree_util.tree_map(lambda t: 0.5 * t, tangents)  # eval: span


def eval_fn(x):
    return jnp.sin(scale_grad(x)) * 2.0


def eval_inputs():
    return (np.array([0.3, 1.7, -0.4], np.float32),)


def eval_reference(x):
    return np.sin(np.asarray(x, np.float64)) * 2.0


def eval_grad_reference(x):
    return (np.cos(np.asarray(x, np.float64)),)
