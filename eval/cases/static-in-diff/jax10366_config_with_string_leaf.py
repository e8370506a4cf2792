"""static-in-diff hazard: a pytree holding a string passed in a differentiable position.

Report: jax-ml/jax#10366 https://github.com/jax-ml/jax/issues/10366 (a custom_vjp taking the
operation name, "add" or "mul", as a third differentiable argument; the reporter tried to wrap the
string in a pytree class to get past "not a valid JAX type").
"""
import jax
import jax.numpy as jnp
import numpy as np

EVAL = {
    "id": "static-in-diff/jax10366_config_with_string_leaf", "family": "static-in-diff", "expect": "hazard",
    "source": "jax-ml/jax#10366", "url": "https://github.com/jax-ml/jax/issues/10366",
    "written_at": "2026-12-01", "written_at_commit": "c10c45a8c2ee52022265ee289b536960fd004d90",
    "argnums": (0,),
}


@jax.custom_vjp
def combine(x, y, spec):
    return x + y if spec["op"] == "add" else x * y


def combine_fwd(x, y, spec):
    return combine(x, y, spec), (x, y, spec)


def combine_bwd(res, g):
    x, y, spec = res
    return (g, g, None) if spec["op"] == "add" else (g * y, g * x, None)


combine.defvjp(combine_fwd, combine_bwd)


def eval_fn(x, y):
    return combine(x, y, {"op": "mul"})  # eval: span


def eval_inputs():
    return (np.float32(1.5), np.float32(-2.0))


def eval_reference(x, y):
    return np.float64(x) * np.float64(y)
