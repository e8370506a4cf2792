"""registration hazard: an equinox filter_custom_vjp gets `def_fwd` but never `def_bwd`.

Report: patrick-kidger/equinox#413 https://github.com/patrick-kidger/equinox/issues/413 (a user
registering the rules of an `eqx.filter_custom_vjp` with `def_fwd`/`def_bwd`). Here the
backward rule is written but its `@...def_bwd` decorator is missing, so the function has a
forward rule and no backward one: the primal runs, and differentiating it fails.
"""
import equinox as eqx
import jax.numpy as jnp
import numpy as np

EVAL = {
    "id": "registration/eqx413_def_bwd_missing", "family": "registration", "expect": "hazard",
    "source": "patrick-kidger/equinox#413", "url": "https://github.com/patrick-kidger/equinox/issues/413",
    "written_at": "2026-12-02", "written_at_commit": "9e042dab056b2e5f1652c5b10417b37c94b25964",
    "argnums": (0,),
}


@eqx.filter_custom_vjp  # eval: span
def squares_norm(x):  # eval: span
    return jnp.sum(x ** 2)


@squares_norm.def_fwd
def squares_norm_fwd(perturbed, x):
    return squares_norm(x), x


def squares_norm_bwd(residuals, grad_obj, perturbed, x):
    return 2.0 * residuals * grad_obj


def eval_fn(x):
    return squares_norm(x)


def eval_inputs():
    return (np.array([1.0, 2.0], np.float32),)


def eval_reference(x):
    return np.sum(np.asarray(x, np.float64) ** 2)
