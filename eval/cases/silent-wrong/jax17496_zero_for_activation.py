"""silent-wrong hazard: a custom activation's bwd returns a literal zero for its input inside an MLP.

Report: jax-ml/jax#17496 https://github.com/jax-ml/jax/issues/17496 (a custom_vjp that returned a
gradient only for the weights: in a chain, everything upstream of it got a zero gradient). Here
the layer returns zeros for the activations that flow into it, so the first layer never learns.
"""
import jax
import jax.numpy as jnp
import numpy as np

EVAL = {
    "id": "silent-wrong/jax17496_zero_for_activation", "family": "silent-wrong", "expect": "hazard",
    "source": "jax-ml/jax#17496", "url": "https://github.com/jax-ml/jax/issues/17496",
    "written_at": "2026-12-01", "written_at_commit": "4615b729f08551e6598efd9f16e68d364163efc2",
    "argnums": (0,),
}
X = np.array([0.5, -1.0, 2.0], np.float32)
W2 = np.array([[0.3, -0.2], [0.1, 0.4], [-0.5, 0.2]], np.float32)


@jax.custom_vjp
def dense(h, w):
    return jnp.tanh(h @ w)


def dense_fwd(h, w):
    y = jnp.tanh(h @ w)
    return y, (h, y)


def dense_bwd(res, g):
    h, y = res
    gz = g * (1.0 - y * y)
    return jnp.zeros_like(h), jnp.outer(h, gz)  # eval: span


dense.defvjp(dense_fwd, dense_bwd)


def eval_fn(w1):
    return jnp.sum(dense(jnp.tanh(X @ w1), W2))


def eval_inputs():
    return (np.array([[0.2, 0.1, 0.0], [-0.3, 0.4, 0.1], [0.05, 0.2, -0.1]], np.float32),)


def eval_reference(w1):
    h = np.tanh(X.astype(np.float64) @ np.asarray(w1, np.float64))
    return np.sum(np.tanh(h @ W2.astype(np.float64)))
