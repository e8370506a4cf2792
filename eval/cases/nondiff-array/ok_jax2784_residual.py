"""nondiff-array look-alike: the fixed form of jax-ml/jax#2784, bound passed as a regular argument.

Report: jax-ml/jax#2784 https://github.com/jax-ml/jax/issues/2784. The documented fix
(https://jax.readthedocs.io/en/latest/custom_vjp_update.html): take the bound out of
nondiff_argnums, keep it in the residuals and return None for it from bwd.
"""
import jax
import jax.numpy as jnp
import numpy as np

EVAL = {
    "id": "nondiff-array/ok_jax2784_residual", "family": "nondiff-array", "expect": "ok",
    "source": "jax-ml/jax#2784", "url": "https://github.com/jax-ml/jax/issues/2784",
    "written_at": "2026-12-01", "written_at_commit": "66aa237f5176449a9711e6278e47349128c8731b",
    "argnums": (0,),
}


@jax.custom_vjp
def bounded_identity(lo, hi, x):  # eval: span
    return x


def bounded_identity_fwd(lo, hi, x):
    return x, (lo, hi)


def bounded_identity_bwd(res, g):
    lo, hi = res
    return None, None, jnp.clip(g, lo, hi)


bounded_identity.defvjp(bounded_identity_fwd, bounded_identity_bwd)


def eval_fn(x):
    return bounded_identity(-1.0, x + 1.0, x)


def eval_inputs():
    return (np.float32(0.25),)


def eval_reference(x):
    return np.asarray(x, np.float64)


def eval_grad_reference(x):
    return (np.clip(1.0, -1.0, np.asarray(x, np.float64) + 1.0),)
