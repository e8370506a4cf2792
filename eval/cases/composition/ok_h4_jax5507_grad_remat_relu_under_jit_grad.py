"""composition look-alike: jit(grad(...)) of a loss that itself takes grad of a jax.remat-wrapped function using relu (a custom_jvp).

Report: jax-ml/jax#5507 https://github.com/jax-ml/jax/issues/5507 (composing jax.remat and grad
around jax.nn.relu, then taking jit(grad) of the result, raised an UnexpectedTracerError; sigmoid
worked). On JAX 0.10.2 the nesting runs. Here an input-gradient penalty is differentiated the same way.
"""
import jax
import jax.numpy as jnp
import numpy as np

EVAL = {
    "id": "composition/ok_h4_jax5507_grad_remat_relu_under_jit_grad", "family": "composition",
    "expect": "ok", "source": "jax-ml/jax#5507", "url": "https://github.com/jax-ml/jax/issues/5507",
    "written_at": "2026-12-02", "written_at_commit": "8b8e5ef99343de7779754cb23d51776bc6898883",
    "argnums": (0,), "heldout": True,
}

X = np.array([[1.0, -0.5], [0.3, 2.0], [-1.0, 0.7]], np.float32)


def input_grad_penalty(w, x):
    layer = jax.remat(lambda a, b: jnp.sum(jax.nn.relu(a @ b)))  # eval: span
    return jnp.sum(jax.grad(layer, argnums=1)(w, x) ** 2)  # eval: span


def eval_fn(w):
    return input_grad_penalty(w, jnp.asarray(X))


def eval_inputs():
    return (np.array([[1.0, -1.0, 0.4], [1.5, 0.3, -0.7]], np.float32),)


def eval_reference(w):
    w = np.asarray(w, np.float64)
    mask = (w @ X.astype(np.float64) > 0).astype(np.float64)
    gx = w.T @ mask
    return np.asarray(np.sum(gx ** 2))


def eval_custom():
    def jit_grad_outer():
        w = eval_inputs()[0]
        got = jax.jit(jax.grad(eval_fn))(jnp.asarray(w))
        wd = np.asarray(w, np.float64)
        mask = (wd @ X.astype(np.float64) > 0).astype(np.float64)
        expected = 2.0 * mask @ (wd.T @ mask).T
        return got, expected

    return {"jit_grad_outer": jit_grad_outer}
