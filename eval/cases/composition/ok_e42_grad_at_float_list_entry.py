"""composition look-alike: the caller copies its `*args` into a list and casts the differentiated entry to float32.

Source: the `jax.grad` API page https://docs.jax.dev/en/latest/_autosummary/jax.grad.html (census row
E42 of docs/facts/jax-errors.md). The integer counts the caller receives are cast to float32 in
the list it spreads, so the gradient runs.
"""
import jax
import jax.numpy as jnp
import numpy as np

EVAL = {
    "id": "composition/ok_e42_grad_at_float_list_entry", "family": "composition",
    "expect": "ok", "source": "jax docs: jax.grad", "url": "https://docs.jax.dev/en/latest/_autosummary/jax.grad.html",
    "written_at": "2026-12-07", "written_at_commit": "882f200074e4498ef57041742a802cc1db99f91a",
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


def model(x, scale):
    return jnp.sum(soft(x) * scale)


def count_slope(*args):
    a = list(args)
    a[0] = jnp.asarray(a[0], jnp.float32)
    return jax.grad(model, argnums=0)(*a)  # eval: span


def eval_fn(x, scale):
    return model(x, scale)


def eval_inputs():
    return (np.array([0.2, -0.4, 1.1], np.float32), np.float32(2.0))


def eval_reference(x, scale):
    return np.sum(np.tanh(np.asarray(x, np.float64)) * scale)


def eval_custom():
    counts = jnp.arange(3)
    expected = 2.0 * (1.0 - jnp.tanh(jnp.arange(3.0)) ** 2)
    return {"count_slope": lambda: (count_slope(counts, 2.0), expected)}
