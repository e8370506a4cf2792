"""structure hazard: an equinox.filter_custom_vjp bwd written with jax.custom_vjp's habit, a
1-tuple of cotangents, where equinox wants the gradient of `vjp_arg` itself.

Source: census row E58 of docs/facts/jax-errors.md (equinox _ad.py L1081: "custom_vjp gradients
must have the same structure as equinox.filter(vjp_arg, ...)"), written on branch census7 as a
realistic edit of a correct rule. grad raises RuntimeError.
https://docs.kidger.site/equinox/api/transformations/#custom-derivatives
"""
import equinox as eqx
import jax.numpy as jnp
import numpy as np

EVAL = {
    "id": "structure/census7_eqx_bwd_jax_style_tuple", "family": "structure", "expect": "hazard",
    "source": "census E58", "url": "https://docs.kidger.site/equinox/api/transformations/#custom-derivatives",
    "written_at": "2026-12-07", "written_at_commit": "89458f57b4bf127d8a4a969ec2e4ddf051aca0dd",
    "argnums": (0,),
}


@eqx.filter_custom_vjp
def softsign(x):
    return x / (1.0 + jnp.abs(x))


@softsign.def_fwd
def softsign_fwd(perturbed, x):
    return softsign(x), x


@softsign.def_bwd
def softsign_bwd(x, g, perturbed, _):
    return (g / (1.0 + jnp.abs(x)) ** 2,)  # eval: span


def eval_fn(x):
    return softsign(x)


def eval_inputs():
    return (np.float32(0.7),)


def eval_reference(x):
    x = np.float64(x)
    return x / (1.0 + abs(x))
