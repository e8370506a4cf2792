"""migration look-alike: a JVPTracer test inside a function that is only ever run under `jax.jvp`.

Source: the direct-linearize migration guide (https://docs.jax.dev/en/latest/direct_linearize_migration.html)
and jax-ml/jax#25004 (https://github.com/jax-ml/jax/pull/25004): only `grad`/`vjp`/`linearize` switched to LinearizeTracer; inside `jax.jvp`
the inputs are still JVPTracers, so a test used only there keeps its meaning (even under an outer grad).
"""
import jax
import jax.numpy as jnp
import numpy as np
from jax.interpreters import ad

EVAL = {
    "id": "migration/ok_jvptracer_under_jvp_only", "family": "migration", "expect": "ok",
    "source": "jax-ml/jax#25004", "url": "https://github.com/jax-ml/jax/pull/25004",
    "written_at": "2026-12-02", "written_at_commit": "9e042dab056b2e5f1652c5b10417b37c94b25964",
    "argnums": (0,),
}


def _cubic(x):
    assert isinstance(x, ad.JVPTracer), "only for directional derivatives"
    return x ** 3


def eval_fn(x):
    _, slope = jax.jvp(_cubic, (x,), (jnp.ones_like(x),))
    return slope


def eval_inputs():
    return (np.array([0.5, -1.0], np.float32),)


def eval_reference(x):
    return 3.0 * np.asarray(x, np.float64) ** 2
