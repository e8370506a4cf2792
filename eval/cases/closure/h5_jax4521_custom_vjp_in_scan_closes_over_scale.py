"""closure hazard: a custom_vjp defined inside the model closes over a differentiated scale and runs in lax.scan.

Report: jax-ml/jax#4521 https://github.com/jax-ml/jax/issues/4521 (an assertion from scan, vmap and
custom derivatives; the first reply asked whether the custom_vjp function was defined inside another
function, closing over that function's traced values, which its rule cannot differentiate). Here a
recurrent tanh cell defines its custom_vjp inside the model and closes over the gain being trained.
"""
import jax
import jax.numpy as jnp
import numpy as np

EVAL = {
    "id": "closure/h5_jax4521_custom_vjp_in_scan_closes_over_scale", "family": "closure",
    "expect": "hazard", "source": "jax-ml/jax#4521", "url": "https://github.com/jax-ml/jax/issues/4521",
    "written_at": "2026-12-02", "written_at_commit": "2f27280778b10986f4436c94bc630dd525ce7747",
    "argnums": (0,), "heldout": True,
}

XS = np.array([[0.3, -0.2], [0.1, 0.4], [-0.5, 0.2]], np.float32)


def model(gain):
    @jax.custom_vjp  # eval: span
    def cell(h):  # eval: span
        return jnp.tanh(gain * h)  # eval: span

    def cell_fwd(h):
        y = cell(h)
        return y, (y,)

    def cell_bwd(res, g):
        (y,) = res
        return (g * gain * (1.0 - y ** 2),)

    cell.defvjp(cell_fwd, cell_bwd)

    def step(h, x):
        h = cell(h + x)
        return h, h

    _, hs = jax.lax.scan(step, jnp.zeros(2, jnp.float32), jnp.asarray(XS))
    return jnp.sum(hs)


def eval_fn(gain):
    return model(gain)


def eval_inputs():
    return (np.float32(0.8),)


def eval_reference(gain):
    h = np.zeros(2)
    total = 0.0
    for x in XS.astype(np.float64):
        h = np.tanh(float(gain) * (h + x))
        total += h.sum()
    return np.asarray(total)
