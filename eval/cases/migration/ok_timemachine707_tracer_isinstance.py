"""migration look-alike: `isinstance(x, jax.core.Tracer)` decides whether derivatives are requested.

Source: proteneer/timemachine#707 https://github.com/proteneer/timemachine/pull/707 (a wrapper tests
its tangents with `isinstance(t, Tracer)`). Every tracer (JVPTracer, LinearizeTracer, jit's)
is a `jax.core.Tracer`, so the test means the same thing before and after direct linearize.
"""
import jax
import jax.numpy as jnp
import numpy as np

EVAL = {
    "id": "migration/ok_timemachine707_tracer_isinstance", "family": "migration", "expect": "ok",
    "source": "proteneer/timemachine#707", "url": "https://github.com/proteneer/timemachine/pull/707",
    "written_at": "2026-12-02", "written_at_commit": "9e042dab056b2e5f1652c5b10417b37c94b25964",
    "argnums": (0,),
}


def _traced(x):
    return isinstance(x, jax.core.Tracer)


def potential(x):
    if _traced(x):
        return jnp.sum(jnp.cos(x))
    return np.sum(np.cos(np.asarray(x)))  # concrete input: plain numpy


def eval_fn(x):
    return potential(x)


def eval_inputs():
    return (np.array([0.5, -1.0], np.float32),)


def eval_reference(x):
    return np.sum(np.cos(np.asarray(x, np.float64)))
