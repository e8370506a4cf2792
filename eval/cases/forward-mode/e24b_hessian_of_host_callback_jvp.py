"""forward-mode hazard: `jax.hessian` of a custom_jvp wrapping a host function whose jvp rule calls the host too.

Source: JAX's external-callbacks guide https://docs.jax.dev/en/latest/external-callbacks.html
(a `pure_callback` made differentiable with `jax.custom_jvp`, the slope from a second callback).
The first derivatives run; a second one differentiates the jvp rule and its callback: JAX raises
"Pure callbacks do not support JVP" (docs/facts/scripts/hazard_second_order_jvp_callback.py).
"""
import jax
import jax.numpy as jnp
import numpy as np

EVAL = {
    "id": "forward-mode/e24b_hessian_of_host_callback_jvp", "family": "forward-mode",
    "expect": "hazard", "source": "jax docs: external callbacks", "url": "https://docs.jax.dev/en/latest/external-callbacks.html",
    "written_at": "2026-12-07", "written_at_commit": "882f200074e4498ef57041742a802cc1db99f91a",
    "argnums": (0,), "extra": ["hessian"],
}


def _host_sin(x):
    return np.sin(x).astype(x.dtype)


def _host_cos(x):
    return np.cos(x).astype(x.dtype)


@jax.custom_jvp
def host_sin(x):
    return jax.pure_callback(_host_sin, jax.ShapeDtypeStruct(x.shape, x.dtype), x, vmap_method="broadcast_all")


@host_sin.defjvp
def host_sin_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    slope = jax.pure_callback(_host_cos, jax.ShapeDtypeStruct(x.shape, x.dtype), x, vmap_method="broadcast_all")  # eval: span
    return host_sin(x), slope * t


def energy(x):
    return jnp.sum(host_sin(x) ** 2)


def curvature(x):
    return jax.hessian(energy)(x)  # eval: span


def eval_fn(x):
    return host_sin(x)


def eval_inputs():
    return (np.array([0.2, -0.4, 1.1], np.float32),)


def eval_reference(x):
    return np.sin(np.asarray(x, np.float64))


def eval_custom():
    x = jnp.array([0.2, -0.4, 1.1], jnp.float32)
    expected = jnp.diag(2.0 * jnp.cos(2.0 * x))
    return {"curvature": lambda: (curvature(x), expected)}
