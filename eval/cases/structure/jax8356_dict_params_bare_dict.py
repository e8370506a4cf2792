"""structure hazard: the only argument is a dict of parameters and bwd returns a bare dict.

Report: jax-ml/jax#8356 https://github.com/jax-ml/jax/issues/8356 ("Improve error message in
custom_vjp when returning the wrong grad structure"): bwd's output must be the args tuple, so a
single dict argument needs `(ct,)`; the reporter's own fix wrapped the structure in a tuple.
"""
import jax
import jax.numpy as jnp
import numpy as np

EVAL = {
    "id": "structure/jax8356_dict_params_bare_dict", "family": "structure", "expect": "hazard",
    "source": "jax-ml/jax#8356", "url": "https://github.com/jax-ml/jax/issues/8356",
    "written_at": "2026-12-02", "written_at_commit": "9e042dab056b2e5f1652c5b10417b37c94b25964",
    "argnums": (0,),
}


@jax.custom_vjp
def gated(params):
    return jnp.tanh(params["w"]) * params["gate"]


def gated_fwd(params):
    return gated(params), params


def gated_bwd(params, g):
    t = jnp.tanh(params["w"])
    ct = {"w": g * params["gate"] * (1 - t ** 2), "gate": g * t}
    return ct  # eval: span


gated.defvjp(gated_fwd, gated_bwd)


def eval_fn(w):
    return gated({"w": w, "gate": jnp.full_like(w, 0.5)})


def eval_inputs():
    return (np.array([0.2, -1.1], np.float32),)


def eval_reference(w):
    return 0.5 * np.tanh(np.asarray(w, np.float64))
