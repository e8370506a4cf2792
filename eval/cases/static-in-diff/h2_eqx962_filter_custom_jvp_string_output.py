"""static-in-diff hazard: an eqx.filter_custom_jvp function returns a Module with a string field.

Report: patrick-kidger/equinox#962 https://github.com/patrick-kidger/equinox/issues/962 (a
filter_custom_jvp wrapper around a function mapping a Module to a Module whose `name` is a str;
even the plain forward call raised "not a valid JAX type": the filtering only applies to the
inputs, the outputs must be JAX values).
"""
import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

EVAL = {
    "id": "static-in-diff/h2_eqx962_filter_custom_jvp_string_output", "family": "static-in-diff",
    "expect": "hazard", "source": "patrick-kidger/equinox#962",
    "url": "https://github.com/patrick-kidger/equinox/issues/962",
    "written_at": "2026-12-02", "written_at_commit": "57286d6bb1b3765b2fe45d8e346dffc0e0612443",
    "argnums": (0,), "heldout": True,
}


class Pair(eqx.Module):
    a: jax.Array
    b: jax.Array
    name: str


def rescale(p):
    return Pair(p.a * 2.0, p.b * 3.0, p.name)  # eval: span


def with_identity_tangent(fn):
    @eqx.filter_custom_jvp  # eval: span
    def call(p):  # eval: span
        return fn(p)

    @call.def_jvp
    def _call_jvp(primals, tangents):
        (p,), (tp,) = primals, tangents
        ta = jnp.zeros_like(p.a) if tp.a is None else tp.a
        tb = jnp.zeros_like(p.b) if tp.b is None else tp.b
        return call(p), fn(Pair(ta, tb, p.name))

    return call


scaled = with_identity_tangent(rescale)


def eval_fn(a):
    out = scaled(Pair(a, jnp.ones_like(a), "layer"))  # eval: span
    return out.a + out.b


def eval_inputs():
    return (np.array([0.5, -1.0], np.float32),)


def eval_reference(a):
    return 2.0 * np.asarray(a, np.float64) + 3.0
