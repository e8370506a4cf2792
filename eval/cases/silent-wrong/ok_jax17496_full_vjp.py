"""silent-wrong look-alike: the matvec custom_vjp of jax-ml/jax#17496 returning the cotangent for both inputs.

Report: jax-ml/jax#17496 https://github.com/jax-ml/jax/issues/17496.
"""
import jax
import jax.numpy as jnp
import numpy as np

EVAL = {
    "id": "silent-wrong/ok_jax17496_full_vjp", "family": "silent-wrong", "expect": "ok",
    "source": "jax-ml/jax#17496", "url": "https://github.com/jax-ml/jax/issues/17496",
    "written_at": "2026-12-01", "written_at_commit": "66aa237f5176449a9711e6278e47349128c8731b",
    "argnums": (0,),
}
V = np.array([1.0, -2.0], np.float32)
W2 = np.array([[0.5, 1.0], [-1.0, 0.3]], np.float32)


@jax.custom_vjp
def matvec(m, v):
    return m @ v


def matvec_fwd(m, v):
    return m @ v, (m, v)


def matvec_bwd(res, g):
    m, v = res
    return jnp.outer(g, v), m.T @ g  # eval: span


matvec.defvjp(matvec_fwd, matvec_bwd)


def eval_fn(w1):
    return matvec(W2, jnp.tanh(matvec(w1, V)))


def eval_inputs():
    return (np.array([[0.2, 0.1], [-0.3, 0.4]], np.float32),)


def eval_reference(w1):
    return W2.astype(np.float64) @ np.tanh(np.asarray(w1, np.float64) @ V)
