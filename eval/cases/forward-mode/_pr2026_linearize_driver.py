"""Caller for pr2026_linearize_apply_xmod: a user script that linearizes the library's custom_vjp."""
import os
import sys

import jax
import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import pr2026_linearize_apply_xmod as trig  # noqa: E402


def eval_fn(x):
    return trig.external_cos(x)


def tangent_line(x, v):
    y, lin = jax.linearize(trig.external_cos, x)
    return y, lin(v)


def eval_inputs():
    return (np.array([0.3, 1.2], np.float32),)


def eval_reference(x):
    return np.cos(np.asarray(x, np.float64))


def eval_custom():
    x = np.array([0.3, 1.2], np.float32)
    v = np.ones_like(x)

    def run():
        _, t = tangent_line(x, v)
        return np.asarray(t), -np.sin(x.astype(np.float64))

    return {"linearize_apply": run}
