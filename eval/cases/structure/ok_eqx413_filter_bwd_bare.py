"""structure look-alike: an `eqx.filter_custom_vjp` bwd returns the bare cotangent of its first argument.

Report: patrick-kidger/equinox#413 https://github.com/patrick-kidger/equinox/issues/413 (the
`def_fwd`/`def_bwd` API). Equinox's bwd returns the cotangent of `vjp_arg` alone, with the
structure of that argument, not jax.custom_vjp's tuple over all arguments: a bare array is right.
"""
import equinox as eqx
import jax.numpy as jnp
import numpy as np

EVAL = {
    "id": "structure/ok_eqx413_filter_bwd_bare", "family": "structure", "expect": "ok",
    "source": "patrick-kidger/equinox#413", "url": "https://github.com/patrick-kidger/equinox/issues/413",
    "written_at": "2026-12-02", "written_at_commit": "9e042dab056b2e5f1652c5b10417b37c94b25964",
    "argnums": (0,),
}


@eqx.filter_custom_vjp
def squared_norm(x, alpha):
    return alpha * jnp.sum(x ** 2)


@squared_norm.def_fwd
def squared_norm_fwd(perturbed, x, alpha):
    return squared_norm(x, alpha), x


@squared_norm.def_bwd
def squared_norm_bwd(residuals, grad_obj, perturbed, x, alpha):
    ct = 2.0 * alpha * residuals * grad_obj
    return ct


def eval_fn(x):
    return squared_norm(x, 1.5)


def eval_inputs():
    return (np.array([0.5, -1.0], np.float32),)


def eval_reference(x):
    return 1.5 * np.sum(np.asarray(x, np.float64) ** 2)
