"""migration hazard: a custom JVP registered with the removed jax.custom_transforms / jax.defjvp_all API.

Report: jax-ml/jax#1670 https://github.com/jax-ml/jax/issues/1670 (a sum wrapped with
jax.custom_transforms and given a JVP via jax.defjvp_all that forwarded to jax.jvp; grad with respect
to one argument passed an internal ad.zero tangent in; custom_transforms was later replaced by
custom_jvp/custom_vjp and no longer exists). Here a weighted sum keeps the old registration.
"""
import jax
import jax.numpy as jnp
import numpy as np

EVAL = {
    "id": "migration/h3_jax1670_defjvp_all_custom_transforms", "family": "migration",
    "expect": "hazard", "source": "jax-ml/jax#1670", "url": "https://github.com/jax-ml/jax/issues/1670",
    "written_at": "2026-12-02", "written_at_commit": "211ce24975f5ee97618de3dc23050e26a289688a",
    "argnums": (0,), "heldout": True,
}


def _blend(a, b):
    return 0.25 * a + 0.75 * b


def eval_fn(a, b):
    blend = jax.custom_transforms(_blend)  # eval: span

    def blend_jvp(primals, tangents):
        return jax.jvp(_blend, primals, tangents)

    jax.defjvp_all(blend, blend_jvp)  # eval: span
    return jnp.sum(blend(a, b))


def eval_inputs():
    return (np.array([1.0, 2.0], np.float32), np.array([0.5, -1.0], np.float32))


def eval_reference(a, b):
    return np.asarray(np.sum(0.25 * np.asarray(a, np.float64) + 0.75 * np.asarray(b, np.float64)))
