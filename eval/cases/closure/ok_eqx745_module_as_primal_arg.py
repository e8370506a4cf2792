"""closure look-alike (custom_jvp): the fix for equinox#745, the callable Module passed as an ordinary (differentiable) argument and given a tangent.

Report: patrick-kidger/equinox#745 https://github.com/patrick-kidger/equinox/issues/745 (a Module
with an array field in `nondiff_argnums` leaked a tracer under grad of a jitted scan; an equinox
Module is a pytree, so it can be a primal argument whose tangent the rule receives).
"""
import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

EVAL = {
    "id": "closure/ok_eqx745_module_as_primal_arg", "family": "closure", "expect": "ok",
    "source": "patrick-kidger/equinox#745", "url": "https://github.com/patrick-kidger/equinox/issues/745",
    "written_at": "2026-12-02", "written_at_commit": "9e042dab056b2e5f1652c5b10417b37c94b25964",
    "argnums": (0,), "extra": ["grad_jit"],
}


class Wave(eqx.Module):
    amplitude: jax.Array

    def __call__(self, x):
        return self.amplitude * jnp.sin(x)


@jax.custom_jvp
def modulate(wave, x, y):  # eval: span
    return wave(x) * y


@modulate.defjvp
def modulate_jvp(primals, tangents):
    return jax.jvp(lambda w, x, y: w(x) * y, primals, tangents)


@jax.jit
def loss(amplitude, xs):
    wave = Wave(amplitude)

    def body(carry, x):
        return carry + modulate(wave, x, carry), None

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
