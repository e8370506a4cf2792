"""closure hazard: a custom_vjp defined inside the loss closes over the weight that grad differentiates.

Report: jax-ml/jax#4008 https://github.com/jax-ml/jax/pull/4008 (custom_jvp/custom_vjp functions and
rules may close over tracers since this PR, but differentiating with respect to a closed-over value
is refused: the custom rule only says how to differentiate the explicit inputs). Here a gated unit
built inside the loss multiplies by a weight it reads from the enclosing scope.
"""
import jax
import jax.numpy as jnp
import numpy as np

EVAL = {
    "id": "closure/h6_pr4008_custom_vjp_closes_over_differentiated_weight", "family": "closure",
    "expect": "hazard", "source": "jax-ml/jax#4008", "url": "https://github.com/jax-ml/jax/pull/4008",
    "written_at": "2026-12-02", "written_at_commit": "62a0272af379a14644eeb31ed58eba40374c4cfb",
    "argnums": (0,), "heldout": True,
}

XS = np.array([0.2, -0.4, 1.1], np.float32)


def loss(w, xs):
    @jax.custom_vjp  # eval: span
    def gate(x):  # eval: span
        return jax.nn.sigmoid(w * x)  # eval: span

    def gate_fwd(x):
        y = gate(x)
        return y, (x, y)

    def gate_bwd(res, g):
        x, y = res
        return (g * y * (1.0 - y) * w,)

    gate.defvjp(gate_fwd, gate_bwd)
    return jnp.sum(gate(xs))


def eval_fn(w):
    return loss(w, jnp.asarray(XS))


def eval_inputs():
    return (np.float32(1.5),)


def eval_reference(w):
    return np.asarray(np.sum(1.0 / (1.0 + np.exp(-float(w) * XS.astype(np.float64)))))
