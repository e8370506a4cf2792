"""closure hazard (custom_jvp): an equinox Module holding a traced array is passed in a custom_jvp nondiff slot inside a scan.

Report: patrick-kidger/equinox#745 https://github.com/patrick-kidger/equinox/issues/745 ("leaked
trace error when using custom_jvp, scan, eqx.Module, and jit": a callable Module whose field was a
jax array went into `nondiff_argnums=(0,)` of a custom_jvp called in a scan body; grad of the
jitted loss leaked a tracer; a plain function in that slot worked). Here the Module is built in the
loss from the differentiated parameter.
"""
import functools as ft

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

EVAL = {
    "id": "closure/eqx745_module_field_nondiff_jvp", "family": "closure", "expect": "hazard",
    "source": "patrick-kidger/equinox#745", "url": "https://github.com/patrick-kidger/equinox/issues/745",
    "written_at": "2026-12-02", "written_at_commit": "9e042dab056b2e5f1652c5b10417b37c94b25964",
    "argnums": (0,), "extra": ["grad_jit"],
}


class Wave(eqx.Module):
    amplitude: jax.Array

    def __call__(self, x):
        return self.amplitude * jnp.sin(x)


@ft.partial(jax.custom_jvp, nondiff_argnums=(0,))  # eval: span
def modulate(wave, x, y):  # eval: span
    return wave(x) * y


@modulate.defjvp
def modulate_jvp(wave, primals, tangents):
    x, y = primals
    x_dot, y_dot = tangents
    out, wave_x_dot = jax.jvp(wave, (x,), (x_dot,))
    return out * y, wave_x_dot * y + out * y_dot


@jax.jit
def loss(amplitude, xs):
    wave = Wave(amplitude)  # eval: span

    def body(carry, x):
        return carry + modulate(wave, x, carry), None  # eval: span

    total, _ = jax.lax.scan(body, jnp.float32(1.0), xs)
    return total


def eval_fn(amplitude, xs):
    return loss(amplitude, xs)


def eval_inputs():
    return (np.float32(0.5), np.array([0.3, -0.2, 0.9], np.float32))


def eval_reference(amplitude, xs):
    carry = 1.0
    for x in np.asarray(xs, np.float64):
        carry = carry + np.float64(amplitude) * np.sin(x) * carry
    return carry
