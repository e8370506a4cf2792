"""closure hazard (custom_jvp): a user function in a custom_jvp nondiff slot closes over the model parameters.

Report: machine-discovery/deer#41 https://github.com/machine-discovery/deer/issues/41 (a neural ODE
whose dynamics `func`, passed to a custom_jvp solver as a nondiff argument, closed over the model
parameters; the library expects parameters passed explicitly). Differentiating w.r.t. the
closed-over parameters goes around the custom rule.
"""
from functools import partial

import jax
import jax.numpy as jnp
import numpy as np

EVAL = {
    "id": "closure/deer41_jvp_func_closes_params", "family": "closure", "expect": "hazard",
    "source": "machine-discovery/deer#41", "url": "https://github.com/machine-discovery/deer/issues/41",
    "written_at": "2026-12-01", "written_at_commit": "66aa237f5176449a9711e6278e47349128c8731b",
    "argnums": (0,), "extra": ["grad_jit"],
}
STEPS, DT = 20, 0.05


@partial(jax.custom_jvp, nondiff_argnums=(0,))  # eval: span
def integrate(func, y0):  # eval: span
    return jax.lax.fori_loop(0, STEPS, lambda _, y: y + DT * func(y), y0)


@integrate.defjvp
def integrate_jvp(func, primals, tangents):
    (y0,), (y0_dot,) = primals, tangents
    y, y_dot = jax.lax.fori_loop(
        0, STEPS, lambda _, c: (c[0] + DT * func(c[0]), c[1] + DT * jax.jvp(func, (c[0],), (c[1],))[1]),
        (y0, y0_dot))
    return y, y_dot


def eval_fn(rate):
    dynamics = lambda y: -rate * y  # eval: span
    return integrate(dynamics, jnp.ones(2))  # eval: span


def eval_inputs():
    return (np.array([0.5, 1.5], np.float32),)


def eval_reference(rate):
    return (1.0 - DT * np.asarray(rate, np.float64)) ** STEPS
