"""composition hazard: the caller copies its `*args` into a list and casts the differentiated entry to int32.

Source: the `jax.grad` API page https://docs.jax.dev/en/latest/_autosummary/jax.grad.html (inputs must be
real or complex; census row E42 of docs/facts/jax-errors.md). A helper quantises the first input
(`a[0] = jnp.round(a[0] * 10).astype(jnp.int32)`) before differentiating with respect to it: JAX
raises "grad requires real- or complex-valued inputs ... but got int32".
"""
import jax
import jax.numpy as jnp
import numpy as np

EVAL = {
    "id": "composition/e42_grad_at_int_list_entry", "family": "composition",
    "expect": "hazard", "source": "jax docs: jax.grad", "url": "https://docs.jax.dev/en/latest/_autosummary/jax.grad.html",
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


def quantised_slope(*args):
    a = list(args)
    a[0] = jnp.round(a[0] * 10.0).astype(jnp.int32)
    return jax.grad(model, argnums=0)(*a)  # eval: span


def eval_fn(x, scale):
    return model(x, scale)


def eval_inputs():
    return (np.array([0.2, -0.4, 1.1], np.float32), np.float32(2.0))


def eval_reference(x, scale):
    return np.sum(np.tanh(np.asarray(x, np.float64)) * scale)


def eval_custom():
    x, scale = eval_inputs()
    return {"quantised_slope": lambda: (quantised_slope(x, scale), None)}
