"""method look-alike: `jax.custom_vjp` applied in `__init__` to a bound method, rules bound too.

Report: jax-ml/jax#2483 https://github.com/jax-ml/jax/issues/2483 (the decorated-method failure).
Wrapping the *bound* method `self._impl` binds `self` first, so the custom_vjp sees only `x`
and its rules are bound methods as well: this works.
"""
import jax
import jax.numpy as jnp
import numpy as np

EVAL = {
    "id": "method/ok_jax2483_bound_method_wrapped", "family": "method", "expect": "ok",
    "source": "jax-ml/jax#2483", "url": "https://github.com/jax-ml/jax/issues/2483",
    "written_at": "2026-12-02", "written_at_commit": "9e042dab056b2e5f1652c5b10417b37c94b25964",
    "argnums": (0,),
}


class LeakyClip:
    def __init__(self, slope):
        self.slope = slope
        self.apply = jax.custom_vjp(self._impl)
        self.apply.defvjp(self._fwd, self._bwd)

    def _impl(self, x):
        return jnp.clip(x, -1.0, 1.0)

    def _fwd(self, x):
        return self._impl(x), x

    def _bwd(self, x, g):
        return (g * jnp.where(jnp.abs(x) < 1.0, 1.0, self.slope),)


LAYER = LeakyClip(0.1)


def eval_fn(x):
    return LAYER.apply(x)


def eval_inputs():
    return (np.array([0.5, -2.0], np.float32),)


def eval_reference(x):
    return np.clip(np.asarray(x, np.float64), -1.0, 1.0)


def eval_grad_reference(x):
    x = np.asarray(x, np.float64)
    return (np.where(np.abs(x) < 1.0, 1.0, 0.1),)
