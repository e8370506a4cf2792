"""structure hazard, registered in another module: bwd gives one cotangent for a two-argument primal.

Report: jax-ml/jax#8356 https://github.com/jax-ml/jax/issues/8356 (bwd's output must have one
entry per primal argument). Here the library module only defines the implementation and its two
rules; the user's module (`_jax8356_rules_driver.py`) imports them by name, wraps the
implementation in `jax.custom_vjp` and registers the rules, as code bases that share rules do.
"""
import jax.numpy as jnp

EVAL = {
    "id": "structure/jax8356_rules_in_module_xmod", "family": "structure", "expect": "hazard",
    "source": "jax-ml/jax#8356", "url": "https://github.com/jax-ml/jax/issues/8356",
    "written_at": "2026-12-02", "written_at_commit": "9e042dab056b2e5f1652c5b10417b37c94b25964",
    "argnums": (0,), "driver": "_jax8356_rules_driver.py",
}


def scaled_shift_impl(x, shift):
    return 3.0 * x + shift


def scaled_shift_fwd(x, shift):
    return scaled_shift_impl(x, shift), None


def scaled_shift_bwd(_, g):
    dx = 3.0 * g
    return (dx,)  # eval: span
