"""closure look-alike: a module-level custom_vjp cell takes its gain as an argument and returns the gain's cotangent.

Report: jax-ml/jax#4521 https://github.com/jax-ml/jax/issues/4521 (the suggested fix for custom_vjp
functions defined inside another function: define them at top level and pass what they used to
close over as explicit arguments, with a cotangent in bwd). Here a recurrent tanh cell does so and
runs in lax.scan.
"""
import jax
import jax.numpy as jnp
import numpy as np

EVAL = {
    "id": "closure/ok_h5_jax4521_custom_vjp_scale_as_argument", "family": "closure",
    "expect": "ok", "source": "jax-ml/jax#4521", "url": "https://github.com/jax-ml/jax/issues/4521",
    "written_at": "2026-12-02", "written_at_commit": "2f27280778b10986f4436c94bc630dd525ce7747",
    "argnums": (0,), "heldout": True,
}

XS = np.array([[0.3, -0.2], [0.1, 0.4], [-0.5, 0.2]], np.float32)


@jax.custom_vjp  # eval: span
def cell(gain, h):  # eval: span
    return jnp.tanh(gain * h)


def _cell_fwd(gain, h):
    y = cell(gain, h)
    return y, (gain, h, y)


def _cell_bwd(res, g):
    gain, h, y = res
    dpre = g * (1.0 - y ** 2)
    return (jnp.sum(dpre * h), dpre * gain)


cell.defvjp(_cell_fwd, _cell_bwd)


def model(gain):
    def step(h, x):
        h = cell(gain, h + x)
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
