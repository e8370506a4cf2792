"""nondiff-array hazard: a custom_vjp keeps a per-example temperature array in nondiff_argnums; the caller vmaps over it.

Report: jax-ml/jax#33897 https://github.com/jax-ml/jax/pull/33897 (a PR improving the error raised
when a tracer is passed in a custom_vjp nondiff_argnums position, which users keep hitting with
array-valued "settings"). Here a tempered softmax marks its temperature non-differentiable and is
batched over temperatures.
"""
from functools import partial

import jax
import jax.numpy as jnp
import numpy as np

EVAL = {
    "id": "nondiff-array/h3_pr33897_temperature_nondiff_under_vmap", "family": "nondiff-array",
    "expect": "hazard", "source": "jax-ml/jax#33897", "url": "https://github.com/jax-ml/jax/pull/33897",
    "written_at": "2026-12-02", "written_at_commit": "211ce24975f5ee97618de3dc23050e26a289688a",
    "argnums": (0,), "vmap_in_axes": (0, 0), "heldout": True,
}


@partial(jax.custom_vjp, nondiff_argnums=(1,))  # eval: span
def tempered_softmax(logits, temperature):  # eval: span
    return jax.nn.softmax(logits / temperature)


def _ts_fwd(logits, temperature):
    p = tempered_softmax(logits, temperature)
    return p, p


def _ts_bwd(temperature, p, g):
    return ((p * g - p * jnp.sum(p * g)) / temperature,)


tempered_softmax.defvjp(_ts_fwd, _ts_bwd)


def eval_fn(logits, temperature):
    return tempered_softmax(logits, temperature)[0]  # eval: span


def eval_inputs():
    return (np.array([1.0, 0.5, -0.5], np.float32), np.float32(2.0))


def eval_reference(logits, temperature):
    z = np.asarray(logits, np.float64) / float(temperature)
    e = np.exp(z - z.max())
    return np.asarray((e / e.sum())[0])
