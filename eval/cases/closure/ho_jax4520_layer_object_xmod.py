"""closure hazard, caller in another module: a library custom_vjp takes a callable nondiff argument.

Report: jax-ml/jax#4520 https://github.com/jax-ml/jax/issues/4520 (a network layer passed as the
nondiff callable of a custom_vjp; `grad` with respect to the layer's parameters failed). This file is
the library: it only defines `apply_layer` with the callable in `nondiff_argnums`. The training
script (`_ho_jax4520_layer_driver.py`) imports it by name and passes a layer object built from the
parameters it differentiates, inside a jitted loss.
"""
import functools

import jax
import jax.numpy as jnp

EVAL = {
    "id": "closure/ho_jax4520_layer_object_xmod", "family": "closure", "expect": "hazard",
    "source": "jax-ml/jax#4520", "url": "https://github.com/jax-ml/jax/issues/4520",
    "written_at": "2026-12-02", "written_at_commit": "7d338003625df627af3f64e858b0803f5255fc3c",
    "argnums": (0,), "driver": "_ho_jax4520_layer_driver.py", "heldout": True,
}


@functools.partial(jax.custom_vjp, nondiff_argnums=(0,))  # eval: span
def apply_layer(layer, h):  # eval: span
    return jnp.maximum(layer(h), 0.0) + 0.1 * h


def _apply_layer_fwd(layer, h):
    return apply_layer(layer, h), h


def _apply_layer_bwd(layer, h, ct):
    _, pull = jax.vjp(lambda v: jnp.maximum(layer(v), 0.0) + 0.1 * v, h)
    return pull(ct)


apply_layer.defvjp(_apply_layer_fwd, _apply_layer_bwd)
