"""nonlinear-jvp hazard: a custom_jvp around a host (NumPy) operator computes the tangent with pure_callback on the tangent itself.

Report: jax-ml/jax#30401 https://github.com/jax-ml/jax/issues/30401 (wrapping a NumPy linear
operator with pure_callback and custom_jvp; when the jvp rule applies the callback to the tangent,
reverse mode fails because pure callbacks cannot be transposed). Here a fixed host-side linear
map is applied to the tangent through the same callback.
"""
import jax
import jax.numpy as jnp
import numpy as np

EVAL = {
    "id": "nonlinear-jvp/h4_jax30401_pure_callback_on_tangent", "family": "nonlinear-jvp",
    "expect": "hazard", "source": "jax-ml/jax#30401", "url": "https://github.com/jax-ml/jax/issues/30401",
    "written_at": "2026-12-02", "written_at_commit": "8b8e5ef99343de7779754cb23d51776bc6898883",
    "argnums": (0,), "heldout": True,
}

_OP = np.array([[2.0, -1.0, 0.0], [-1.0, 2.0, -1.0], [0.0, -1.0, 2.0]], np.float32)


def _host_apply(v):
    return (_OP @ np.asarray(v)).astype(np.float32)


def _apply(v):
    return jax.pure_callback(_host_apply, jax.ShapeDtypeStruct(v.shape, v.dtype), v,
                             vmap_method="sequential")


@jax.custom_jvp  # eval: span
def host_op(v):  # eval: span
    return _apply(v)


@host_op.defjvp
def _host_op_jvp(primals, tangents):
    (v,), (v_dot,) = primals, tangents
    return host_op(v), _apply(v_dot)  # eval: span


def eval_fn(v):
    return jnp.sum(host_op(v) ** 2)


def eval_inputs():
    return (np.array([0.5, -1.0, 2.0], np.float32),)


def eval_reference(v):
    return np.asarray(np.sum((_OP.astype(np.float64) @ np.asarray(v, np.float64)) ** 2))
