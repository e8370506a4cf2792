"""nondiff-array hazard: a frozen dataclass config carrying the differentiated parameter sits in a nondiff slot.

Report: google/jaxopt#111 https://github.com/google/jaxopt/issues/111 (an energy minimisation
differentiated implicitly raised CustomVJPException: the energy function's parameters reached the
custom rule other than as explicit arguments; the maintainer: the dependence on params must go
through the optimality function's arguments). Here a relaxation solver's custom_vjp keeps its
settings object in nondiff_argnums, and the caller builds that object from the parameter it
differentiates.
"""
import dataclasses
from functools import partial

import jax
import jax.numpy as jnp
import numpy as np

EVAL = {
    "id": "nondiff-array/h2_jaxopt111_potential_config_nondiff", "family": "nondiff-array",
    "expect": "hazard", "source": "google/jaxopt#111", "url": "https://github.com/google/jaxopt/issues/111",
    "written_at": "2026-12-02", "written_at_commit": "57286d6bb1b3765b2fe45d8e346dffc0e0612443",
    "argnums": (0,), "heldout": True,
}


@dataclasses.dataclass(frozen=True)
class Potential:
    stiffness: float
    rest: float
    steps: int = 60


@partial(jax.custom_vjp, nondiff_argnums=(0,))  # eval: span
def relax(cfg, x0):  # eval: span
    def step(_, x):
        return x - 0.1 * cfg.stiffness * (x - cfg.rest)

    return jax.lax.fori_loop(0, cfg.steps, step, x0)


def _relax_fwd(cfg, x0):
    return relax(cfg, x0), None


def _relax_bwd(cfg, _, g):
    return ((1.0 - 0.1 * cfg.stiffness) ** cfg.steps * g,)


relax.defvjp(_relax_fwd, _relax_bwd)


def eval_fn(rest):
    cfg = Potential(stiffness=2.0, rest=rest)  # eval: span
    return relax(cfg, jnp.zeros(3))


def eval_inputs():
    return (np.array([0.5, -1.0, 2.0], np.float32),)


def eval_reference(rest):
    return np.asarray(rest, np.float64) * (1.0 - 0.8 ** 60)
