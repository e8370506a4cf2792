"""static-in-diff hazard: a step count travels in a NamedTuple passed in a differentiable slot.

Report: jax-ml/jax#11646 https://github.com/jax-ml/jax/issues/11646 (a custom_vjp used an argument
as a Python integer while it sat in a differentiable position; under `jit` it is traced). Here
the integer is a field of a settings NamedTuple: the custom_vjp loops `range(cfg.steps)`, which
works eagerly and raises TracerIntegerConversionError under `jit` (the custom_vjp traces every
leaf of a differentiable argument).
"""
from typing import NamedTuple

import jax
import numpy as np

EVAL = {
    "id": "static-in-diff/jax11646_steps_in_namedtuple", "family": "static-in-diff", "expect": "hazard",
    "source": "jax-ml/jax#11646", "url": "https://github.com/jax-ml/jax/issues/11646",
    "written_at": "2026-12-02", "written_at_commit": "9e042dab056b2e5f1652c5b10417b37c94b25964",
    "argnums": (0,),
}


class Settings(NamedTuple):
    steps: int
    rate: float


@jax.custom_vjp
def grow(x, cfg):  # eval: span
    y = x
    for _ in range(cfg.steps):  # eval: span
        y = y + cfg.rate * y
    return y


def grow_fwd(x, cfg):
    return grow(x, cfg), (x, cfg)


def grow_bwd(res, g):
    x, cfg = res
    return g * (1.0 + cfg.rate) ** cfg.steps, None


grow.defvjp(grow_fwd, grow_bwd)


def eval_fn(x):
    return grow(x, Settings(3, 0.1))  # eval: span


def eval_inputs():
    return (np.float32(2.0),)


def eval_reference(x):
    return np.float64(x) * 1.1 ** 3
