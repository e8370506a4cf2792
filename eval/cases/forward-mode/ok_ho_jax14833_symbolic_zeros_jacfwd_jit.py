"""forward-mode look-alike: `jacfwd(jit(f))` of a custom_jvp registered with `symbolic_zeros=True`.

Report: jax-ml/jax#14833 https://github.com/jax-ml/jax/issues/14833 (a custom_jvp whose rule
branches on `SymbolicZero` tangents raised "SymbolicZero ... is not a valid JAX type" under
`jacfwd(jit(f))`; fixed). The rule is the documented way to skip work for inputs that are not
perturbed: it checks each tangent's type and returns the product rule's surviving terms.
"""
from functools import partial

import jax
import numpy as np
from jax.custom_derivatives import SymbolicZero

EVAL = {
    "id": "forward-mode/ok_ho_jax14833_symbolic_zeros_jacfwd_jit", "family": "forward-mode", "expect": "ok",
    "source": "jax-ml/jax#14833", "url": "https://github.com/jax-ml/jax/issues/14833",
    "written_at": "2026-12-02", "written_at_commit": "7d338003625df627af3f64e858b0803f5255fc3c",
    "argnums": (0,), "extra": ["jvp", "jacfwd", "hessian"], "heldout": True,
}


@jax.custom_jvp
def scaled(x, y):
    return x * y


@partial(scaled.defjvp, symbolic_zeros=True)
def scaled_jvp(primals, tangents):
    x, y = primals
    tx, ty = tangents
    parts = []
    if not isinstance(tx, SymbolicZero):
        parts.append(tx * y)
    if not isinstance(ty, SymbolicZero):
        parts.append(x * ty)
    out = scaled(x, y)
    return out, sum(parts[1:], parts[0]) if parts else 0.0 * out


def eval_fn(x, y):
    return scaled(x, y)


def eval_inputs():
    return (np.float32(0.1), np.float32(0.2))


def eval_reference(x, y):
    return np.float64(x) * np.float64(y)


def eval_custom():
    def jacfwd_jit():
        return jax.jacfwd(jax.jit(scaled))(0.1, 0.2), np.float64(0.2)

    return {"jacfwd_of_jit": jacfwd_jit}
