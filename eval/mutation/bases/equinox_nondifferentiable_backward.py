"""equinox: a custom_jvp with a nondiff message whose rule passes the tangent through (the library's rule raises; here it is the identity, as in its `nondifferentiable_backward` counterpart).

Adapted from patrick-kidger/equinox:equinox/_ad.py:825.
"""
import functools
import functools as ft
from functools import partial

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

EVAL = {'id': 'mutation/equinox_nondifferentiable_backward', 'family': 'mutation', 'expect': 'ok', 'library': 'equinox', 'source': 'patrick-kidger/equinox:equinox/_ad.py:825', 'argnums': (0,), 'extra': ['jvp', 'jacfwd']}

@ft.partial(jax.custom_jvp, nondiff_argnums=(0,))
def _identity_with_msg(msg, x):
    return x


@_identity_with_msg.defjvp
def _identity_with_msg_jvp(msg, primals, tangents):
    (x,) = primals
    (tx,) = tangents
    return x, tx


def eval_fn(x):
    return jnp.sin(_identity_with_msg("unused", x))


def eval_inputs():
    return (np.array([0.5, 1.5, -0.7], np.float32),)


def eval_reference(x):
    return np.sin(np.asarray(x, np.float64))
