"""closure hazard: a custom_vjp defined inside a layer's method closes over the layer's weights.

Report: google-deepmind/dm-haiku#98 https://github.com/google-deepmind/dm-haiku/issues/98 (porting a
custom gradient into Haiku, the reporter found that the forward pass is not an explicit function of
the weights, so the backward pass cannot hand them cotangents). Here the custom_vjp is built inside
`Gate.__call__` and reads `self.params["w"]` from the enclosing method; the loss differentiates
the weights, which JAX cannot do for a closed-over value: on JAX 0.10.2 every `grad` check raises
UnexpectedTracerError (the bwd reads `w` too, so a LinearizeTracer escapes).
"""
import jax
import numpy as np

EVAL = {
    "id": "closure/ho_haiku98_weights_closed_in_layer", "family": "closure", "expect": "hazard",
    "source": "google-deepmind/dm-haiku#98", "url": "https://github.com/google-deepmind/dm-haiku/issues/98",
    "written_at": "2026-12-02", "written_at_commit": "7d338003625df627af3f64e858b0803f5255fc3c",
    "argnums": (0,), "heldout": True,
}


class Gate:
    def __init__(self, params):
        self.params = params

    def __call__(self, x):
        w = self.params["w"]

        @jax.custom_vjp  # eval: span
        def gate(v):  # eval: span
            return jax.nn.sigmoid(w * v)

        def gate_fwd(v):
            s = gate(v)
            return s, s

        def gate_bwd(s, g):
            return (g * s * (1.0 - s) * w,)

        gate.defvjp(gate_fwd, gate_bwd)
        return gate(x)


def eval_fn(w, x):
    return Gate({"w": w})(x)


def eval_inputs():
    return (np.float32(1.3), np.array([0.2, -0.6, 1.0], np.float32))


def eval_reference(w, x):
    return 1.0 / (1.0 + np.exp(-np.float64(w) * np.asarray(x, np.float64)))
