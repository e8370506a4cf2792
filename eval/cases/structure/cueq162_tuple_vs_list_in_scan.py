"""structure hazard: the primal returns a tuple, fwd's primal output is a list built in a variable.

Report: NVIDIA/cuEquivariance#162 https://github.com/NVIDIA/cuEquivariance/issues/162 (the
custom_vjp failed during training under a rematerialised scan; the container types of the primal
and of fwd's primal output disagreed; fixed in PR #295 by making both tuples).
"""
import jax
import jax.numpy as jnp
import numpy as np

EVAL = {
    "id": "structure/cueq162_tuple_vs_list_in_scan", "family": "structure", "expect": "hazard",
    "source": "NVIDIA/cuEquivariance#162", "url": "https://github.com/NVIDIA/cuEquivariance/issues/162",
    "written_at": "2026-12-01", "written_at_commit": "c10c45a8c2ee52022265ee289b536960fd004d90",
    "argnums": (0,), "extra": ["grad_jit"],
}


@jax.custom_vjp
def gate_and_norm(h):  # eval: span
    return jax.nn.sigmoid(h), jnp.tanh(h)  # eval: span


def gate_and_norm_fwd(h):
    gate, norm = jax.nn.sigmoid(h), jnp.tanh(h)
    outputs = [gate, norm]
    return outputs, (gate, norm)  # eval: span


def gate_and_norm_bwd(res, cts):
    gate, norm = res
    d_gate, d_norm = cts
    return (d_gate * gate * (1 - gate) + d_norm * (1 - norm ** 2),)


gate_and_norm.defvjp(gate_and_norm_fwd, gate_and_norm_bwd)


def eval_fn(h):
    gate, norm = gate_and_norm(h)
    return gate + norm


def eval_inputs():
    return (np.array([0.3, -1.2], np.float32),)


def eval_reference(h):
    h = np.asarray(h, np.float64)
    return 1 / (1 + np.exp(-h)) + np.tanh(h)


def eval_custom():
    def layers(h):
        body = jax.checkpoint(lambda c, _: (jnp.sum(eval_fn(c)) + 0 * c, None))
        return jax.lax.scan(body, h, None, length=2)[0]

    def remat_scan_grad():
        return jax.grad(lambda h: jnp.sum(layers(h)))(np.array([0.3, -1.2], np.float32)), None

    return {"grad_remat_scan": remat_scan_grad}
