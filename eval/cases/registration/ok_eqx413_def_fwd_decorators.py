"""registration look-alike: equinox's `@f.def_fwd` / `@f.def_bwd` used as decorators.

Report: patrick-kidger/equinox#413 https://github.com/patrick-kidger/equinox/issues/413 (the
reporter registered fwd and bwd of an `eqx.filter_custom_vjp` with `@f.def_fwd`/`@f.def_bwd`;
equinox 0.10.6 had no such methods and raised AttributeError; current equinox documents exactly
this idiom, the decorators return None, and the rules run). Written after vjplint learnt
equinox's protocol (commit in `written_at_commit`): a false-positive check, not a recall claim.
"""
import equinox as eqx
import jax.numpy as jnp
import numpy as np

EVAL = {
    "id": "registration/ok_eqx413_def_fwd_decorators", "family": "registration", "expect": "ok",
    "source": "patrick-kidger/equinox#413", "url": "https://github.com/patrick-kidger/equinox/issues/413",
    "written_at": "2026-12-01", "written_at_commit": "7a9efd5c9f59ee3d58e5e2e04c528f95efbc1f30",
    "argnums": (0,),
}


@eqx.filter_custom_vjp
def total_square(v):
    return jnp.sum(v ** 2)


@total_square.def_fwd
def total_square_fwd(perturbed, v):
    return total_square(v), v


@total_square.def_bwd
def total_square_bwd(v, ct, perturbed, v_in):
    return 2.0 * v * ct


def eval_fn(v):
    return total_square(3.0 * v)


def eval_inputs():
    return (np.array([2.0, 0.5], np.float32),)


def eval_reference(v):
    return np.sum((3.0 * np.asarray(v, np.float64)) ** 2)
