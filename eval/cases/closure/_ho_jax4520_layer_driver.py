"""Caller for ho_jax4520_layer_object_xmod: a training script importing the library module by name."""
import os
import sys

import jax
import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from ho_jax4520_layer_object_xmod import apply_layer

H = np.array([0.4, -0.2, 1.3], np.float32)


class Scale:
    def __init__(self, params):
        self.gain = params["gain"]

    def __call__(self, v):
        return self.gain * v


@jax.jit
def objective(gain):
    net = Scale({"gain": gain})
    return apply_layer(net, H)


def eval_fn(gain):
    return objective(gain)


def eval_inputs():
    return (np.float32(1.5),)


def eval_reference(gain):
    h = H.astype(np.float64)
    return np.maximum(np.float64(gain) * h, 0.0) + 0.1 * h
