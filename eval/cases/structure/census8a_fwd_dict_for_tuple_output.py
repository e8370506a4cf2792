"""structure hazard: a sin/cos pair whose fwd returns its primal output as a dict:
`grad(jit(f))` raises, a plain `grad` sees the dict.

Source: census row E16 of docs/facts/jax-errors.md, written on branch rules8a as a realistic edit of a
correct rule through a route no fixture of the rule covered before (issue 45).
https://docs.jax.dev/en/latest/notebooks/Custom_derivative_rules_for_Python_code.html
"""
import jax
import jax.numpy as jnp
import numpy as np

EVAL = {
    "id": "structure/census8a_fwd_dict_for_tuple_output", "family": "structure", "expect": "hazard",
    "source": "census E16", "url": "https://docs.jax.dev/en/latest/notebooks/Custom_derivative_rules_for_Python_code.html",
    "written_at": "2026-12-07", "written_at_commit": "5abea46c1fd00eda02b2669f98bc7f1223e4b9b6",
    "argnums": (0,), "extra": ["grad_jit"],
}


@jax.custom_vjp
def sincos(x):
    return jnp.sin(x), jnp.cos(x)


def sincos_fwd(x):
    s, c = jnp.sin(x), jnp.cos(x)
    return {"sin": s, "cos": c}, (s, c)  # eval: span


def sincos_bwd(res, g):
    s, c = res
    gs, gc = g
    return (gs * c - gc * s,)


sincos.defvjp(sincos_fwd, sincos_bwd)


def eval_fn(x):
    s, c = sincos(x)
    return s * 2.0 + c


def eval_inputs():
    return (np.array([0.3, 1.7, -0.4], np.float32),)


def eval_reference(x):
    x = np.asarray(x, np.float64)
    return np.sin(x) * 2.0 + np.cos(x)
