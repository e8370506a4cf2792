"""structure hazard: an nnx.custom_vjp with graph=False, graph_updates=False whose bwd unpacks (input updates, output cotangent).

Report: google/flax#5452 https://github.com/google/flax/issues/5452 (the documented nnx bwd
signature, g = (input_updates_g, out_g), raised "iteration over a 0-d array" once the decorator
was given graph=False, graph_updates=False; fixed later in flax). Here a gated sine layer
follows the documented bwd with those options.
"""
import jax
import jax.numpy as jnp
import numpy as np
from flax import nnx

EVAL = {
    "id": "structure/h4_flax5452_nnx_custom_vjp_graph_updates_false", "family": "structure",
    "expect": "hazard", "source": "google/flax#5452", "url": "https://github.com/google/flax/issues/5452",
    "written_at": "2026-12-02", "written_at_commit": "8b8e5ef99343de7779754cb23d51776bc6898883",
    "argnums": (0, 1), "heldout": True,
}


class Gate(nnx.Module):
    def __init__(self, a, b):
        self.a = nnx.Param(a)
        self.b = nnx.Param(b)


@nnx.custom_vjp(graph=False, graph_updates=False)  # eval: span
def gate(m: Gate):  # eval: span
    return jnp.sin(m.a[...]) * m.b[...]


def _gate_fwd(m: Gate):
    return gate(m), (jnp.cos(m.a[...]), jnp.sin(m.a[...]), m)


def _gate_bwd(res, g):  # eval: span
    input_updates_g, out_g = g  # eval: span
    cos_a, sin_a, m = res
    (m_g,) = input_updates_g
    m_g = jax.tree.map(lambda v: v, m_g)
    m_g["a"][...] = cos_a * out_g * m.b[...]
    m_g["b"][...] = sin_a * out_g
    return (m_g,)


gate.defvjp(_gate_fwd, _gate_bwd)


def eval_fn(a, b):
    return jnp.sum(gate(Gate(a, b)))


def eval_inputs():
    return (np.float32(1.0), np.float32(2.0))


def eval_reference(a, b):
    return np.asarray(np.sin(float(a)) * float(b))


def eval_custom():
    def nnx_grads():
        m = Gate(jnp.float32(1.0), jnp.float32(2.0))
        grads = nnx.grad(gate, graph=False, graph_updates=False)(m)
        got = np.array([grads["a"][...], grads["b"][...]])
        return got, np.array([np.cos(1.0) * 2.0, np.sin(1.0)])

    return {"nnx_grad": nnx_grads}
