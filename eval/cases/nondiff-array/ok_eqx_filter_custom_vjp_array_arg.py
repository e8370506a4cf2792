"""nondiff-array look-alike: equinox's filter_custom_vjp receives a traced array outside its vjp argument.

Source: patrick-kidger/equinox#413 https://github.com/patrick-kidger/equinox/issues/413 (the
`filter_custom_vjp` protocol: the first argument is differentiated, the others are passed to
the rules as `perturbed` inputs; equinox splits the arrays off itself, so they may be tracers).
The mask here is a traced array under jit and grad, and that is fine.
"""
import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

EVAL = {
    "id": "nondiff-array/ok_eqx_filter_custom_vjp_array_arg", "family": "nondiff-array", "expect": "ok",
    "source": "patrick-kidger/equinox#413", "url": "https://github.com/patrick-kidger/equinox/issues/413",
    "written_at": "2026-12-02", "written_at_commit": "9e042dab056b2e5f1652c5b10417b37c94b25964",
    "argnums": (0,),
}


@eqx.filter_custom_vjp
def masked(x, mask):
    return x * mask


@masked.def_fwd
def masked_fwd(perturbed, x, mask):
    return x * mask, None


@masked.def_bwd
def masked_bwd(residuals, grad_obj, perturbed, x, mask):
    return grad_obj * mask


@jax.jit
def apply(x, m):
    mask = jnp.where(m > 0.0, 1.0, 0.5)
    return masked(x, mask)


def eval_fn(x, m):
    return apply(x, m)


def eval_inputs():
    return (np.float32(2.0), np.float32(1.0))


def eval_reference(x, m):
    return np.float64(x) * (1.0 if m > 0 else 0.5)


def eval_grad_reference(x, m):
    return (1.0 if m > 0 else 0.5,)
