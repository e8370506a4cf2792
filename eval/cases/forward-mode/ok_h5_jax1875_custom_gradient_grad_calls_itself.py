"""forward-mode look-alike: a jax.custom_gradient whose gradient function calls the decorated function again, used under grad only.

Report: jax-ml/jax#1875 https://github.com/jax-ml/jax/issues/1875 (a TensorFlow-style multiply_no_nan
whose gradient function called multiply_no_nan on the cotangent raised an internal AssertionError
under grad; fixed by the custom_jvp/custom_vjp rewrite). On JAX 0.10.2 reverse mode works; the
caller only uses grad and value_and_grad, never a forward-mode transform.
"""
import jax
import jax.numpy as jnp
import numpy as np

EVAL = {
    "id": "forward-mode/ok_h5_jax1875_custom_gradient_grad_calls_itself", "family": "forward-mode",
    "expect": "ok", "source": "jax-ml/jax#1875", "url": "https://github.com/jax-ml/jax/issues/1875",
    "written_at": "2026-12-02", "written_at_commit": "2f27280778b10986f4436c94bc630dd525ce7747",
    "argnums": (0, 1), "heldout": True, "extra": ["value_and_grad", "grad_jit"],
}


@jax.custom_gradient  # eval: span
def masked_product(x, y):  # eval: span
    def grad_fn(dz):
        return masked_product(dz, y), masked_product(x, dz)  # eval: span

    return jnp.where(y == 0.0, jnp.zeros_like(y), x * y), grad_fn


def eval_fn(x, y):
    return jnp.sum(masked_product(x, y))


def eval_inputs():
    return (np.array([1.0, 2.0, -3.0], np.float32), np.array([0.5, 1.5, -2.0], np.float32))


def eval_reference(x, y):
    return np.asarray(np.sum(np.asarray(x, np.float64) * np.asarray(y, np.float64)))
