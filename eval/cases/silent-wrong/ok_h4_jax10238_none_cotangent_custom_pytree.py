"""silent-wrong look-alike: a custom_vjp bwd returns None for a custom-pytree argument that only carries a constant.

Report: jax-ml/jax#10238 https://github.com/jax-ml/jax/issues/10238 (returning None as the
cotangent of a registered pytree class argument raised a TypeError, because None was rebuilt
into the class; documented since). On JAX 0.10.2 None stands for a zero cotangent of the whole
subtree. Here a config object holding a fixed gain is passed alongside the differentiated input.
"""
import jax
import jax.numpy as jnp
import numpy as np


@jax.tree_util.register_pytree_node_class
class Gain:
    def __init__(self, k):
        self.k = k

    def tree_flatten(self):
        return (self.k,), None

    @classmethod
    def tree_unflatten(cls, aux, children):
        return cls(*children)


EVAL = {
    "id": "silent-wrong/ok_h4_jax10238_none_cotangent_custom_pytree", "family": "silent-wrong",
    "expect": "ok", "source": "jax-ml/jax#10238", "url": "https://github.com/jax-ml/jax/issues/10238",
    "written_at": "2026-12-02", "written_at_commit": "8b8e5ef99343de7779754cb23d51776bc6898883",
    "argnums": (0,), "heldout": True,
}


@jax.custom_vjp
def amplify(x, gain):
    return gain.k * x


def _amplify_fwd(x, gain):
    return amplify(x, gain), gain.k


def _amplify_bwd(k, g):
    return k * g, None  # eval: span


amplify.defvjp(_amplify_fwd, _amplify_bwd)


def eval_fn(x):
    return jnp.sum(amplify(x, Gain(jnp.float32(2.0))) ** 2)


def eval_inputs():
    return (np.array([0.5, -1.0, 1.5], np.float32),)


def eval_reference(x):
    return np.asarray(np.sum((2.0 * np.asarray(x, np.float64)) ** 2))
