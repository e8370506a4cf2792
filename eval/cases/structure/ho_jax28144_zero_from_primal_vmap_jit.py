"""structure hazard: a custom_jvp rule returns `zero_from_primal(..., symbolic_zeros=True)` as its tangent.

Report: jax-ml/jax#28144 https://github.com/jax-ml/jax/issues/28144 (a custom_jvp whose rule
returns a symbolic zero tangent worked under `jvp` alone but crashed under `jvp(vmap(jit(f)))`
with "Zero(...) is not a valid JAX type"; fixed for the batching path in jax-ml/jax#28150). Here a
stop-gradient-like clamp declares its tangent a symbolic zero; the checks run `jvp` of `vmap` of
`jit` as the reporter did, plus the usual ones. On JAX 0.10.2 the reporter's path works; `grad`
fails ("SymbolicZero ... is not a valid JAX type"): the rule is registered without
`symbolic_zeros=True`, so reverse mode cannot transpose the symbolic zero it returns.
"""
import jax
import jax.numpy as jnp
import numpy as np
from jax.custom_derivatives import zero_from_primal

EVAL = {
    "id": "structure/ho_jax28144_zero_from_primal_vmap_jit", "family": "structure", "expect": "hazard",
    "source": "jax-ml/jax#28144", "url": "https://github.com/jax-ml/jax/issues/28144",
    "written_at": "2026-12-02", "written_at_commit": "7d338003625df627af3f64e858b0803f5255fc3c",
    "argnums": (0,), "extra": ["jvp", "jacfwd"], "heldout": True,
}


@jax.custom_jvp  # eval: span
def frozen_shift(x):  # eval: span
    return x + 1.0


@frozen_shift.defjvp
def frozen_shift_jvp(primals, tangents):
    (x,), _ = primals, tangents
    return frozen_shift(x), zero_from_primal(x, symbolic_zeros=True)  # eval: span


def eval_fn(x):
    return frozen_shift(x)


def eval_inputs():
    return (np.array([0.0, 1.0, 2.0], np.float32),)


def eval_reference(x):
    return np.asarray(x, np.float64) + 1.0


def eval_grad_reference(x):
    return (np.zeros_like(np.asarray(x, np.float64)),)


def eval_custom():
    x = jnp.arange(3.0)

    def jvp_vmap_jit():
        _, t = jax.jvp(jax.vmap(jax.jit(frozen_shift)), (x,), (x,))
        return t, np.zeros(3)

    return {"jvp_vmap_jit": jvp_vmap_jit}
