"""structure look-alike: the primal and fwd's primal output are both tuples (fwd's through a variable).

Report: NVIDIA/cuEquivariance PR #295 https://github.com/NVIDIA/cuEquivariance/pull/295 (the fix
for issue #162: both containers made tuples), checked under a rematerialised scan too.
"""
import jax
import jax.numpy as jnp
import numpy as np

EVAL = {
    "id": "structure/ok_cueq295_both_tuples", "family": "structure", "expect": "ok",
    "source": "NVIDIA/cuEquivariance#295", "url": "https://github.com/NVIDIA/cuEquivariance/pull/295",
    "written_at": "2026-12-01", "written_at_commit": "c10c45a8c2ee52022265ee289b536960fd004d90",
    "argnums": (0,), "extra": ["grad_jit"],
}


@jax.custom_vjp
def gate_and_norm(h):
    return jax.nn.sigmoid(h), jnp.tanh(h)


def gate_and_norm_fwd(h):
    outputs = gate_and_norm(h)
    return outputs, outputs


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
        got = jax.grad(lambda h: jnp.sum(layers(h)))(np.array([0.3, -1.2], np.float32))
        return got, got

    return {"grad_remat_scan": remat_scan_grad}
