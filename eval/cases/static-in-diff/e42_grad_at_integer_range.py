"""static-in-diff hazard: `jax.grad` at an integer array (`jnp.arange(n)`).

Source: the `jax.grad` API page https://docs.jax.dev/en/latest/_autosummary/jax.grad.html
(`allow_int`: integer inputs are refused unless allowed; census row E42 of
docs/facts/jax-errors.md). A loss over a custom_vjp activation is differentiated at positions made
with `jnp.arange(4)`, an int32 array: "grad requires real- or complex-valued inputs".
"""
import jax
import jax.numpy as jnp
import numpy as np

EVAL = {
    "id": "static-in-diff/e42_grad_at_integer_range", "family": "static-in-diff",
    "expect": "hazard", "source": "jax docs: jax.grad", "url": "https://docs.jax.dev/en/latest/_autosummary/jax.grad.html",
    "written_at": "2026-12-07", "written_at_commit": "7929f7c7a7cd3de25b6e41c92a8e1e8a1d3df93f",
    "argnums": (0,),
}


@jax.custom_vjp
def soft(x):
    return jnp.tanh(x)


def _soft_fwd(x):
    y = jnp.tanh(x)
    return y, y


def _soft_bwd(y, g):
    return ((1.0 - y ** 2) * g,)


soft.defvjp(_soft_fwd, _soft_bwd)


def loss(positions):
    return jnp.sum(soft(0.5 * positions))


def position_gradient(n):
    positions = jnp.arange(n)
    return jax.grad(loss)(positions)  # eval: span


def eval_fn(x):
    return loss(x)


def eval_inputs():
    return (np.array([0.2, -0.4, 1.1], np.float32),)


def eval_reference(x):
    return np.sum(np.tanh(0.5 * np.asarray(x, np.float64)))


def eval_custom():
    p = jnp.arange(4.0)
    return {"position_gradient": lambda: (position_gradient(4), 0.5 * (1.0 - jnp.tanh(0.5 * p) ** 2))}
