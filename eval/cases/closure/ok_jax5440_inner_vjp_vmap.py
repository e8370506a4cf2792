"""closure look-alike (fixed report): a custom_vjp defined inside a function closes over a vmapped value.

Report: jax-ml/jax#5440 https://github.com/jax-ml/jax/issues/5440 ("Error when custom_vjp-wrapped
original function closes over batch (vmap) tracer"), fixed by PR #4008's successors. The closed-over
value is batched, never differentiated; the differentiated input is an explicit argument.
"""
import jax
import numpy as np

EVAL = {
    "id": "closure/ok_jax5440_inner_vjp_vmap", "family": "closure", "expect": "ok",
    "source": "jax-ml/jax#5440", "url": "https://github.com/jax-ml/jax/issues/5440",
    "written_at": "2026-12-01", "written_at_commit": "66aa237f5176449a9711e6278e47349128c8731b",
    "argnums": (1,), "vmap_in_axes": (0, None),
}


def eval_fn(a, y):
    @jax.custom_vjp
    def shift(v):  # eval: span
        return v + a

    def shift_fwd(v):
        return v + a, None

    def shift_bwd(_, g):
        return (g,)

    shift.defvjp(shift_fwd, shift_bwd)
    return shift(y)


def eval_inputs():
    return (np.float32(1.0), np.float32(2.0))


def eval_reference(a, y):
    return np.float64(a) + np.float64(y)
