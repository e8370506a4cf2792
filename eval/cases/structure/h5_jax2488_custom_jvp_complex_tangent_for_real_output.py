"""structure hazard: a custom_jvp of a real-valued function of a complex input returns a complex tangent.

Report: jax-ml/jax#2488 https://github.com/jax-ml/jax/issues/2488 (custom_jvp "fails when the
function is real-valued and its gradient is complex-valued": the rule wrote the tangent as
conj-gradient times z_dot, a complex number, while the primal output is real; JAX requires the
tangent to have the output's tangent type). Here the energy |z|^2 of a complex field built from
real and imaginary parts.
"""
import jax
import jax.numpy as jnp
import numpy as np

EVAL = {
    "id": "structure/h5_jax2488_custom_jvp_complex_tangent_for_real_output", "family": "structure",
    "expect": "hazard", "source": "jax-ml/jax#2488", "url": "https://github.com/jax-ml/jax/issues/2488",
    "written_at": "2026-12-02", "written_at_commit": "2f27280778b10986f4436c94bc630dd525ce7747",
    "argnums": (0, 1), "heldout": True,
}


@jax.custom_jvp
def energy(z):
    return jnp.sum(jnp.real(z * jnp.conj(z)))


@energy.defjvp
def _energy_jvp(primals, tangents):
    (z,), (z_dot,) = primals, tangents
    return energy(z), jnp.sum(2.0 * jnp.conj(z) * z_dot)  # eval: span


def eval_fn(re, im):
    return energy(re + 1j * im)


def eval_inputs():
    return (np.array([1.0, 2.0, -0.5], np.float32), np.array([0.5, -1.0, 0.25], np.float32))


def eval_reference(re, im):
    re, im = np.asarray(re, np.float64), np.asarray(im, np.float64)
    return np.asarray(np.sum(re ** 2 + im ** 2))
