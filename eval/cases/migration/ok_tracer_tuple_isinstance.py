"""migration look-alike: JVPTracer is tested together with `jax.core.Tracer` in one isinstance tuple.

Source: equinox's early `is_perturbed` helper (jax-ml/jax#9567 thread, https://github.com/jax-ml/jax/issues/9567) fell back to `jax.core.Tracer`;
here the tuple `(ad.JVPTracer, jax.core.Tracer)` is True for every tracer, LinearizeTracer included,
so the test means "traced" before and after direct linearize (jax-ml/jax#25004).
"""
import jax
import jax.numpy as jnp
import numpy as np
from jax.interpreters import ad

EVAL = {
    "id": "migration/ok_tracer_tuple_isinstance", "family": "migration", "expect": "ok",
    "source": "jax-ml/jax#9567", "url": "https://github.com/jax-ml/jax/issues/9567",
    "written_at": "2026-12-02", "written_at_commit": "9e042dab056b2e5f1652c5b10417b37c94b25964",
    "argnums": (0,),
}


def smooth_abs(x, eps=1e-3):
    if isinstance(x, (ad.JVPTracer, jax.core.Tracer)):
        return jnp.sqrt(x * x + eps)
    return np.sqrt(np.asarray(x) ** 2 + eps)


def eval_fn(x):
    return smooth_abs(x)


def eval_inputs():
    return (np.array([0.5, -2.0], np.float32),)


def eval_reference(x):
    x = np.asarray(x, np.float64)
    return np.sqrt(x * x + 1e-3)
