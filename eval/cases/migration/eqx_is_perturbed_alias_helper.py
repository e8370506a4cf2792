"""migration hazard: a helper tests for an aliased JVPTracer to decide whether a value is being differentiated.

Source: an early equinox internal `is_perturbed` helper (`isinstance(x, jax.ad.JVPTracer)`, noted as
unreliable in jax-ml/jax#9567, https://github.com/jax-ml/jax/issues/9567) and the direct-linearize change (jax-ml/jax#25004, default since
jax-ml/jax#30262): `grad` now traces with LinearizeTracer, so the helper says "not perturbed" and
the function takes its stop_gradient path: the gradient is silently zero.
"""
import jax
import jax.numpy as jnp
import numpy as np
from jax.interpreters.ad import JVPTracer as _Tangent

EVAL = {
    "id": "migration/eqx_is_perturbed_alias_helper", "family": "migration", "expect": "hazard",
    "source": "jax-ml/jax#9567", "url": "https://github.com/jax-ml/jax/issues/9567",
    "written_at": "2026-12-02", "written_at_commit": "9e042dab056b2e5f1652c5b10417b37c94b25964",
    "argnums": (0,),
}


def _is_perturbed(x):
    return isinstance(x, _Tangent)  # eval: span


def smooth_abs(x, eps=1e-3):
    if _is_perturbed(x):
        return jnp.sqrt(x * x + eps)
    return jax.lax.stop_gradient(jnp.sqrt(x * x + eps))


def eval_fn(x):
    return smooth_abs(x)


def eval_inputs():
    return (np.array([0.5, -2.0], np.float32),)


def eval_reference(x):
    x = np.asarray(x, np.float64)
    return np.sqrt(x * x + 1e-3)
