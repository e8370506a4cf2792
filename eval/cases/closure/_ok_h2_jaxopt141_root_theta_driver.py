"""Caller for ok_h2_jaxopt141_root_solver_theta_xmod: the stiffness travels as theta."""
import os
import sys

import jax.numpy as jnp
import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from ok_h2_jaxopt141_root_solver_theta_xmod import find_root

TARGET = np.array([2.0, 0.5, 3.0], np.float32)


def cubic(x, theta):
    stiffness, target = theta
    return x ** 3 + stiffness * x - target


def equilibrium(stiffness):
    return find_root(cubic, jnp.ones_like(stiffness), (stiffness, jnp.asarray(TARGET)))


def eval_fn(stiffness):
    return equilibrium(stiffness)


def eval_inputs():
    return (np.array([1.0, 2.0, 0.5], np.float32),)


def eval_reference(stiffness):
    out = []
    for k, t in zip(np.asarray(stiffness, np.float64), TARGET.astype(np.float64)):
        roots = np.roots([1.0, 0.0, k, -t])
        out.append(float(np.real(roots[np.argmin(np.abs(np.imag(roots)))])))
    return np.array(out)
