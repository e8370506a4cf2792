"""method look-alike: a custom_vjp over a bound method with a config value bound by `partial`.

Source: JAX's custom derivative guide, "Handling non-differentiable arguments" with
`nondiff_argnums` https://docs.jax.dev/en/latest/notebooks/Custom_derivative_rules_for_Python_code.html
spelled as library classes do: `jax.custom_vjp(partial(self._apply, cfg), nondiff_argnums=(1,))`.
JAX counts positions after both bindings (`self`, then `cfg`), so `power` is position 1, the
fwd and bwd methods take `(x, power)` and `(power, res, g)`, and every check passes. Written with
issue 37's fix of the count (the linter counted `cfg` bound but not `self`, and reported fwd and
bwd arities JAX does not use).
"""
from functools import partial

import jax
import numpy as np

EVAL = {
    "id": "method/ok_partial_bound_method_nondiff_power", "family": "method", "expect": "ok",
    "source": "JAX custom derivative guide (nondiff_argnums), bound-method spelling",
    "url": "https://docs.jax.dev/en/latest/notebooks/Custom_derivative_rules_for_Python_code.html",
    "written_at": "2026-12-06", "written_at_commit": "8c83d06fdd82f0bcf74ab0c19409e44ccd29fd2e",
    "argnums": (0,),
}


class Scaler:
    def __init__(self, cfg):
        self.cfg = cfg
        self.apply = jax.custom_vjp(partial(self._apply, cfg), nondiff_argnums=(1,))  # eval: span
        self.apply.defvjp(self._apply_fwd, self._apply_bwd)

    def _apply(self, cfg, x, power):
        return cfg * x ** power

    def _apply_fwd(self, x, power):
        return self._apply(self.cfg, x, power), x

    def _apply_bwd(self, power, x, g):
        return (g * self.cfg * power * x ** (power - 1),)


def eval_fn(x):
    return Scaler(2.0).apply(x, 3)


def eval_inputs():
    return (np.array([0.5, -1.0, 1.5], np.float32),)


def eval_reference(x):
    return 2.0 * np.asarray(x, np.float64) ** 3


def eval_grad_reference(x):
    return (6.0 * np.asarray(x, np.float64) ** 2,)
