"""composition look-alike: `jax.vmap(jax.grad(model))` at a vector: each call sees one point.

Source: the `jax.grad` API page https://docs.jax.dev/en/latest/_autosummary/jax.grad.html (the
function must return a scalar; census row E43 of docs/facts/jax-errors.md). A helper takes the
slope of a model built on a custom_vjp activation at a grid of points made with `linspace`,
mapping the gradient over the points with `vmap`, which works.
"""
import jax
import jax.numpy as jnp
import numpy as np

EVAL = {
    "id": "composition/ok_e43_vmapped_grad_of_elementwise_model", "family": "composition",
    "expect": "ok", "source": "jax docs: jax.grad", "url": "https://docs.jax.dev/en/latest/_autosummary/jax.grad.html",
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


def model(x):
    return 2.0 * soft(x) + 0.1 * x


def slopes(grid):
    return jax.vmap(jax.grad(model))(grid)


def eval_fn(x):
    return model(x)


def eval_inputs():
    return (np.array([0.2, -0.4, 1.1], np.float32),)


def eval_reference(x):
    x = np.asarray(x, np.float64)
    return 2.0 * np.tanh(x) + 0.1 * x


def eval_custom():
    grid = jnp.linspace(-1.0, 1.0, 5)
    expected = 2.0 * (1.0 - jnp.tanh(grid) ** 2) + 0.1
    return {"slopes": lambda: (slopes(grid), expected)}
