"""nondiff-array hazard (custom_jvp): a custom_jvp nondiff value that is a lax.scan carry, differentiated.

Report: jax-ml/jax#9374 https://github.com/jax-ml/jax/issues/9374 (the reporter's follow-up
comment: "`jax.custom_jvp(nondiff_argnums=...)` also crashes when used inside of `lax.scan`").
Here the nondiff threshold is carried through a scan and the loss is differentiated.
"""
import functools as ft

import jax
import jax.numpy as jnp
import numpy as np

EVAL = {
    "id": "nondiff-array/jvp_jax9374_scan_carry", "family": "nondiff-array", "expect": "hazard",
    "source": "jax-ml/jax#9374", "url": "https://github.com/jax-ml/jax/issues/9374",
    "written_at": "2026-12-01", "written_at_commit": "5408ea44d83e030fbb42370e27bc8d5106b9dfb2",
    "argnums": (0,),
}


@ft.partial(jax.custom_jvp, nondiff_argnums=(1,))  # eval: span
def soft_floor(v, floor):  # eval: span
    return jnp.logaddexp(v, floor)


@soft_floor.defjvp
def soft_floor_jvp(floor, primals, tangents):
    (v,), (v_dot,) = primals, tangents
    return soft_floor(v, floor), jax.nn.sigmoid(v - floor) * v_dot


def _step(carry, _):
    v, floor = carry
    return (soft_floor(v, floor), floor * 0.5), None  # eval: span


def eval_fn(v, floor):
    (out, _), _ = jax.lax.scan(_step, (v, floor), None, length=3)
    return out


def eval_inputs():
    return (np.array([0.2, -1.0], np.float32), np.float32(0.4))


def eval_reference(v, floor):
    out, f = np.asarray(v, np.float64), np.float64(floor)
    for _ in range(3):
        out = np.logaddexp(out, f)
        f = f * 0.5
    return out
