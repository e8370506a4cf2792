"""forward-mode hazard: a callable op object registers a custom_vjp in __init__; the caller uses jax.jvp.

Report: jax-ml/jax#2026 https://github.com/jax-ml/jax/pull/2026 (a reviewer wrapped external
cos/sin routines with custom_vjp, whose fwd even computed the derivative, and found jax.jvp of
them raising; the answer: custom_vjp functions support reverse mode only). Here the wrapper is a
class whose instances build and register the custom_vjp, and the caller takes a directional
derivative with jax.jvp.
"""
import jax
import jax.numpy as jnp
import numpy as np

EVAL = {
    "id": "forward-mode/h2_pr2026_callable_op_custom_vjp_jvp", "family": "forward-mode",
    "expect": "hazard", "source": "jax-ml/jax#2026", "url": "https://github.com/jax-ml/jax/pull/2026",
    "written_at": "2026-12-02", "written_at_commit": "57286d6bb1b3765b2fe45d8e346dffc0e0612443",
    "argnums": (0,), "heldout": True,
}


class ExternalCos:
    """Stands for a routine computed outside JAX, with a hand-written derivative."""

    def __init__(self):
        self.apply = jax.custom_vjp(self._impl)  # eval: span
        self.apply.defvjp(self._fwd, self._bwd)

    @staticmethod
    def _impl(x):
        return jnp.cos(x)

    def _fwd(self, x):
        return self._impl(x), -jnp.sin(x)

    @staticmethod
    def _bwd(dcos, g):
        return (g * dcos,)

    def __call__(self, x):
        return self.apply(x)


OP = ExternalCos()


def eval_fn(x):
    return OP(x)


def eval_inputs():
    return (np.array([0.1, 1.0, 2.5], np.float32),)


def eval_reference(x):
    return np.cos(np.asarray(x, np.float64))


def eval_custom():
    x = jnp.asarray(eval_inputs()[0])
    direction = jnp.ones_like(x)
    return {"jvp_op": lambda: (jax.jvp(OP, (x,), (direction,))[1], -np.sin(np.asarray(x, np.float64)))}  # eval: span
