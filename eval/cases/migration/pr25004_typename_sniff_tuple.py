"""migration hazard: the tracer's class name is compared with names kept in a module constant.

Source: jax-ml/jax#25004 https://github.com/jax-ml/jax/pull/25004 and the direct-linearize migration
guide (https://docs.jax.dev/en/latest/direct_linearize_migration.html): under `grad` the tracer
is LinearizeTracer, so `type(x).__name__ in ("JVPTracer",)` is False and the cached,
non-differentiable path runs: the gradient through it is silently zero.
"""
import jax
import jax.numpy as jnp
import numpy as np

EVAL = {
    "id": "migration/pr25004_typename_sniff_tuple", "family": "migration", "expect": "hazard",
    "source": "jax-ml/jax#25004", "url": "https://github.com/jax-ml/jax/pull/25004",
    "written_at": "2026-12-02", "written_at_commit": "9e042dab056b2e5f1652c5b10417b37c94b25964",
    "argnums": (0,),
}

_AUTODIFF_TRACERS = ("JVPTracer",)


def attenuate(x, rate):
    name = type(x).__name__
    if name in _AUTODIFF_TRACERS:  # eval: span
        return jnp.exp(-rate * x)
    return jax.lax.stop_gradient(jnp.exp(-rate * x))


def eval_fn(x):
    return jnp.sum(attenuate(x, 0.5))


def eval_inputs():
    return (np.array([0.5, 2.0], np.float32),)


def eval_reference(x):
    return np.sum(np.exp(-0.5 * np.asarray(x, np.float64)))
