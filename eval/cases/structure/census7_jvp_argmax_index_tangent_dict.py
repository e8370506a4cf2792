"""structure hazard: a custom_jvp returning a dict with an integer index; the rule's tangent for the
index is `jnp.zeros_like(i)`, an int32 array, where JAX requires float0.

Source: census row E09 of docs/facts/jax-errors.md (cd.py L395-403, the tangent of an integer
output must be float0), written on branch census7 as a realistic edit of a correct top-1 rule (the
float0 zero replaced by the `zeros_like` a user reaches for). Every transform raises TypeError.
https://docs.jax.dev/en/latest/notebooks/Custom_derivative_rules_for_Python_code.html
"""
import jax
import jax.numpy as jnp
import numpy as np

EVAL = {
    "id": "structure/census7_jvp_argmax_index_tangent_dict", "family": "structure", "expect": "hazard",
    "source": "census E09", "url": "https://docs.jax.dev/en/latest/notebooks/Custom_derivative_rules_for_Python_code.html",
    "written_at": "2026-12-07", "written_at_commit": "89458f57b4bf127d8a4a969ec2e4ddf051aca0dd",
    "argnums": (0,),
}


@jax.custom_jvp
def top1(x):
    return {"value": jnp.max(x), "index": jnp.argmax(x)}


@top1.defjvp
def top1_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    out = top1(x)
    i = out["index"]
    return out, {"value": t[i], "index": jnp.zeros_like(i)}  # eval: span


def eval_fn(x):
    return top1(x)["value"]


def eval_inputs():
    return (np.array([0.3, 1.7, -0.4], np.float32),)


def eval_reference(x):
    return np.max(np.asarray(x, np.float64))
