"""Caller for diffrax135_method_field_solver_xmod: the user's model and fit, importing the solver module by name."""
import os
import sys

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from diffrax135_method_field_solver_xmod import implicit_euler  # noqa: E402

DT = 0.1


class DecayModel(eqx.Module):
    rate: jax.Array

    def vector_field(self, y):
        return -self.rate * y

    def __call__(self, y0):
        field = lambda y: self.vector_field(y)
        return implicit_euler(field, y0, jnp.float32(DT))


def fit_loss(rate, y0):
    return DecayModel(rate)(y0)


def eval_fn(rate, y0):
    return fit_loss(rate, y0)


def eval_inputs():
    return (np.float32(0.8), np.array([1.0, 2.0], np.float32))


def eval_reference(rate, y0):
    return np.asarray(y0, np.float64) / (1.0 + DT * np.float64(rate)) ** 10
