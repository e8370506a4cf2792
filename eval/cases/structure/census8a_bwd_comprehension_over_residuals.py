"""structure hazard: a bilinear custom_vjp whose bwd returns one cotangent per
residual (`tuple(g * r for r in res)`) while fwd saves three residuals for two arguments.

Source: census row E19 of docs/facts/jax-errors.md, written on branch rules8a as a realistic edit of a
correct rule through a route no fixture of the rule covered before (issue 45).
https://docs.jax.dev/en/latest/notebooks/Custom_derivative_rules_for_Python_code.html
"""
import jax
import jax.numpy as jnp
import numpy as np

EVAL = {
    "id": "structure/census8a_bwd_comprehension_over_residuals", "family": "structure", "expect": "hazard",
    "source": "census E19", "url": "https://docs.jax.dev/en/latest/notebooks/Custom_derivative_rules_for_Python_code.html",
    "written_at": "2026-12-07", "written_at_commit": "5abea46c1fd00eda02b2669f98bc7f1223e4b9b6",
    "argnums": (0, 1),
}


@jax.custom_vjp
def bilinear(x, y):
    return x * y


def bilinear_fwd(x, y):
    return x * y, (y, x, x * y)


def bilinear_bwd(res, g):
    return tuple(g * r for r in res)  # eval: span


bilinear.defvjp(bilinear_fwd, bilinear_bwd)


def eval_fn(x, y):
    return bilinear(x, y) + x


def eval_inputs():
    return (np.array([0.3, 1.7], np.float32), np.array([-0.4, 0.9], np.float32))


def eval_reference(x, y):
    x, y = np.asarray(x, np.float64), np.asarray(y, np.float64)
    return x * y + x
