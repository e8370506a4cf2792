"""nonlinear-jvp hazard: the tangent output goes through a lax.switch (control flow on the tangent side).

Report: jax-ml/jax#14026 https://github.com/jax-ml/jax/issues/14026 ("custom_jvp + cond on
tangent side = assertion failure"): the reporter's bad rule evaluated the switch-based primal on
the tangent; the good rule used an arithmetic mask.
"""
import jax
import jax.numpy as jnp
import numpy as np

EVAL = {
    "id": "nonlinear-jvp/jax14026_switch_on_tangent", "family": "nonlinear-jvp", "expect": "hazard",
    "source": "jax-ml/jax#14026", "url": "https://github.com/jax-ml/jax/issues/14026",
    "written_at": "2026-12-01", "written_at_commit": "66aa237f5176449a9711e6278e47349128c8731b",
    "argnums": (0,), "extra": ["jvp"],
}


def pick_total(values, mode):
    branch = jnp.floor(mode).astype(jnp.int32)
    return jax.lax.switch(branch, [jnp.sum, lambda v: 1.0 - jnp.sum(v)], values)


custom_switch = jax.custom_jvp(pick_total)


@custom_switch.defjvp
def custom_switch_jvp(primals, tangents):
    (values, mode), (values_dot, _) = primals, tangents
    return pick_total(values, mode), pick_total(values_dot, mode)  # eval: span


def eval_fn(arr, choice):
    return custom_switch(arr, choice)


def eval_inputs():
    return (np.arange(3.0, dtype=np.float32), np.float32(0.0))


def eval_reference(arr, choice):
    return np.sum(np.asarray(arr, np.float64))
