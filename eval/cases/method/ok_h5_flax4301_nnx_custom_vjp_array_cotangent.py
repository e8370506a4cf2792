"""method look-alike: an nnx.custom_vjp over (module, array) whose bwd returns the array's cotangent as an array.

Report: google/flax#4301 https://github.com/google/flax/issues/4301 (the maintainers' answer to a user
who wrapped the input's cotangent in nnx.State: the module gets a State of its parameters' cotangents,
a plain array argument gets a plain array). Here a small affine layer follows that answer and is
differentiated with respect to the input and, through nnx.grad, the parameters.
"""
import jax
import jax.numpy as jnp
import numpy as np
from flax import nnx

EVAL = {
    "id": "method/ok_h5_flax4301_nnx_custom_vjp_array_cotangent", "family": "method",
    "expect": "ok", "source": "google/flax#4301", "url": "https://github.com/google/flax/issues/4301",
    "written_at": "2026-12-02", "written_at_commit": "2f27280778b10986f4436c94bc630dd525ce7747",
    "argnums": (0,), "heldout": True,
}

W0 = np.array([[0.5, -1.0], [0.25, 2.0], [1.5, 0.0]], np.float32)
B0 = np.array([0.1, -0.2], np.float32)


class Affine(nnx.Module):
    def __init__(self):
        self.w = nnx.Param(jnp.asarray(W0))
        self.b = nnx.Param(jnp.asarray(B0))


@nnx.custom_vjp  # eval: span
def affine(m: Affine, x):  # eval: span
    return x @ m.w[...] + m.b[...]


def _affine_fwd(m: Affine, x):
    return affine(m, x), (m, x)


def _affine_bwd(res, g):  # eval: span
    m, x = res
    _, out_g = g
    m_g = nnx.State(dict(w=x[:, None] * out_g[None, :], b=out_g))
    return (m_g, m.w[...] @ out_g)  # eval: span


affine.defvjp(_affine_fwd, _affine_bwd)


def eval_fn(x):
    return jnp.sum(affine(Affine(), x) ** 2)


def eval_inputs():
    return (np.array([1.0, -0.5, 2.0], np.float32),)


def eval_reference(x):
    y = np.asarray(x, np.float64) @ W0.astype(np.float64) + B0.astype(np.float64)
    return np.asarray(np.sum(y ** 2))


def eval_custom():
    def param_grads():
        x = np.array([1.0, -0.5, 2.0], np.float32)
        grads = nnx.grad(lambda m: jnp.sum(affine(m, jnp.asarray(x)) ** 2))(Affine())
        y = x.astype(np.float64) @ W0.astype(np.float64) + B0.astype(np.float64)
        gw = x.astype(np.float64)[:, None] * (2 * y)[None, :]
        return (np.asarray(grads["w"][...]), np.asarray(grads["b"][...])), (gw, 2 * y)

    return {"nnx_grad_params": param_grads}
