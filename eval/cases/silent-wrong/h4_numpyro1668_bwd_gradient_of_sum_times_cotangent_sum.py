"""silent-wrong hazard: a custom_vjp around a host model returns grad(sum(model)) scaled by sum(g) instead of the VJP.

Report: pyro-ppl/numpyro#1668 https://github.com/pyro-ppl/numpyro/issues/1668 (a PyTorch layer
called through pure_callback was given a custom_vjp so NUTS could differentiate it; the bwd
computed the gradient of the summed output on the host and returned outer(grad, g).sum(axis=1),
the reporter unsure it was right). That equals the true VJP W^T g only when every entry of g is
equal. Here a host-side affine layer (NumPy) is wrapped the same way.
"""
import jax
import jax.numpy as jnp
import numpy as np

EVAL = {
    "id": "silent-wrong/h4_numpyro1668_bwd_gradient_of_sum_times_cotangent_sum", "family": "silent-wrong",
    "expect": "hazard", "source": "pyro-ppl/numpyro#1668",
    "url": "https://github.com/pyro-ppl/numpyro/issues/1668",
    "written_at": "2026-12-02", "written_at_commit": "8b8e5ef99343de7779754cb23d51776bc6898883",
    "argnums": (0,), "heldout": True,
}

_W = np.array([[1.0, 0.5, -0.5], [0.0, 2.0, 1.0]], np.float32)
_B = np.array([0.1, -0.2], np.float32)


def _host_forward(z):
    return (_W @ np.asarray(z) + _B).astype(np.float32)


def _host_grad_of_sum(z):
    return _W.sum(axis=0).astype(np.float32)


@jax.custom_vjp
def layer(z):
    return jax.pure_callback(_host_forward, jax.ShapeDtypeStruct((2,), z.dtype), z,
                             vmap_method="sequential")


def _layer_fwd(z):
    return layer(z), (z,)


def _layer_bwd(res, g):  # eval: span
    (z,) = res
    grad = jax.pure_callback(_host_grad_of_sum, jax.ShapeDtypeStruct(z.shape, z.dtype), z,
                             vmap_method="sequential")
    return (jnp.outer(grad, g).sum(axis=1),)  # eval: span


layer.defvjp(_layer_fwd, _layer_bwd)


def eval_fn(z):
    y = layer(z)
    return jnp.sum(y ** 2)


def eval_inputs():
    return (np.array([0.5, -1.0, 2.0], np.float32),)


def eval_reference(z):
    y = _W.astype(np.float64) @ np.asarray(z, np.float64) + _B.astype(np.float64)
    return np.asarray(np.sum(y ** 2))
