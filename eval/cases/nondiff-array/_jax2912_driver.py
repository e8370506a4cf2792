"""Caller for jax2912_float_through_jit_xmod (the oracle passes that module as `case`)."""
import jax
import numpy as np

case = globals()["case"]


@jax.jit
def wrapper(s, p):
    return case.scaled(s, p)


def eval_fn(s, p):
    return wrapper(s, p)


def eval_inputs():
    return (0.2, np.float32(0.1))


def eval_reference(s, p):
    return np.float64(s) * np.asarray(p, np.float64)
