"""method look-alike: a callable namedtuple whose __call__ applies jax.nn.relu (a custom_jvp) to its field, passed through jit and differentiated.

Report: jax-ml/jax#2578 https://github.com/jax-ml/jax/issues/2578 (after relu became a custom_jvp,
grad through a jitted g(f, x) with f a namedtuple calling relu(self.a) hit an AssertionError in
partial_eval; fixed in #2593). The custom_jvp here is a library function called from a method,
never decorated onto one. Here a gated scale is a namedtuple.
"""
import collections

import jax
import jax.numpy as jnp
import numpy as np

EVAL = {
    "id": "method/ok_h4_jax2578_namedtuple_call_relu_under_jit", "family": "method",
    "expect": "ok", "source": "jax-ml/jax#2578", "url": "https://github.com/jax-ml/jax/issues/2578",
    "written_at": "2026-12-02", "written_at_commit": "8b8e5ef99343de7779754cb23d51776bc6898883",
    "argnums": (0, 1), "heldout": True,
}


class GatedScale(collections.namedtuple("GatedScale", ["a"])):
    def __call__(self, x):  # eval: span
        return jax.nn.relu(self.a) * x  # eval: span


@jax.jit
def apply(f, x):
    return f(x)


def eval_fn(a, x):
    return jnp.sum(apply(GatedScale(a), x))


def eval_inputs():
    return (np.float32(2.0), np.array([0.5, -1.0, 3.0], np.float32))


def eval_reference(a, x):
    return np.asarray(max(float(a), 0.0) * np.sum(np.asarray(x, np.float64)))
