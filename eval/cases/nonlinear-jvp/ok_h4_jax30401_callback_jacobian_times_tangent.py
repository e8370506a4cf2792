"""nonlinear-jvp look-alike: a custom_jvp around a host (NumPy) function whose rule calls pure_callback only on the primal and multiplies the tangent by the returned Jacobian.

Report: jax-ml/jax#30401 https://github.com/jax-ml/jax/issues/30401 (custom_jvp with pure_callback;
the workaround discussed there keeps callbacks on the primal side so the tangent stays a JAX-linear
expression, which reverse mode can transpose). Here a host-side elementwise softplus supplies its
own derivative.
"""
import jax
import jax.numpy as jnp
import numpy as np

EVAL = {
    "id": "nonlinear-jvp/ok_h4_jax30401_callback_jacobian_times_tangent", "family": "nonlinear-jvp",
    "expect": "ok", "source": "jax-ml/jax#30401", "url": "https://github.com/jax-ml/jax/issues/30401",
    "written_at": "2026-12-02", "written_at_commit": "8b8e5ef99343de7779754cb23d51776bc6898883",
    "argnums": (0,), "heldout": True,
}


def _host_softplus(v):
    return np.log1p(np.exp(np.asarray(v))).astype(np.float32)


def _host_sigmoid(v):
    return (1.0 / (1.0 + np.exp(-np.asarray(v)))).astype(np.float32)


def _cb(fn, v):
    return jax.pure_callback(fn, jax.ShapeDtypeStruct(v.shape, v.dtype), v, vmap_method="sequential")


@jax.custom_jvp
def host_softplus(v):
    return _cb(_host_softplus, v)


@host_softplus.defjvp
def _host_softplus_jvp(primals, tangents):
    (v,), (v_dot,) = primals, tangents
    slope = _cb(_host_sigmoid, v)
    return host_softplus(v), slope * v_dot  # eval: span


def eval_fn(v):
    return jnp.sum(host_softplus(v) ** 2)


def eval_inputs():
    return (np.array([0.5, -1.0, 2.0], np.float32),)


def eval_reference(v):
    return np.asarray(np.sum(np.log1p(np.exp(np.asarray(v, np.float64))) ** 2))
