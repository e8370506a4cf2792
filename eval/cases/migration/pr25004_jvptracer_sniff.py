"""migration hazard: a function picks its differentiable path by testing for JVPTracer.

Source: jax-ml/jax#25004 https://github.com/jax-ml/jax/pull/25004 (the linearize trace) and the
direct-linearize migration guide (https://jax.readthedocs.io/en/latest/direct_linearize_migration.html:
`grad` now shows LinearizeTracer where it showed JVPTracer). Code that detects differentiation
with `isinstance(x, JVPTracer)` (as an FDTD code base did) takes its non-differentiable fast path
under `grad`: the gradient is silently zero.
"""
import jax
import jax.numpy as jnp
import numpy as np
from jax.interpreters import ad

EVAL = {
    "id": "migration/pr25004_jvptracer_sniff", "family": "migration", "expect": "hazard",
    "source": "jax-ml/jax#25004", "url": "https://github.com/jax-ml/jax/pull/25004",
    "written_at": "2026-12-01", "written_at_commit": "66aa237f5176449a9711e6278e47349128c8731b",
    "argnums": (0,),
}


@jax.custom_jvp
def field_energy(e):
    return jnp.sum(e ** 2)


@field_energy.defjvp
def field_energy_jvp(primals, tangents):
    (e,), (e_dot,) = primals, tangents
    return jnp.sum(e ** 2), jnp.sum(2 * e * e_dot)


def eval_fn(e):
    if isinstance(e, ad.JVPTracer):  # eval: span
        return field_energy(e)
    return jax.lax.stop_gradient(jnp.sum(e ** 2))  # fast path, "not differentiating"


def eval_inputs():
    return (np.array([1.0, -0.5], np.float32),)


def eval_reference(e):
    return np.sum(np.asarray(e, np.float64) ** 2)
