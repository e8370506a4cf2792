"""structure hazard: a custom_jvp rule that calls jax.jvp with an integer-dtype zeros tangent for an integer primal.

Report: jax-ml/jax#4433 https://github.com/jax-ml/jax/issues/4433 (a custom_jvp rule re-ran jax.jvp on
the primal with (dx, 0) as tangents while one primal was an integer; after float0 tangents were
introduced jax.jvp rejects an integer tangent for an integer primal and the rule fails). Here an
integer power is wrapped the same way, the exponent's tangent made with zeros_like.
"""
import jax
import jax.numpy as jnp
import numpy as np

EVAL = {
    "id": "structure/h5_jax4433_custom_jvp_int_zeros_tangent_into_jvp", "family": "structure",
    "expect": "hazard", "source": "jax-ml/jax#4433", "url": "https://github.com/jax-ml/jax/issues/4433",
    "written_at": "2026-12-02", "written_at_commit": "2f27280778b10986f4436c94bc630dd525ce7747",
    "argnums": (0,), "heldout": True,
}


def _power(x, n):
    return x ** n


@jax.custom_jvp
def power(x, n):
    return _power(x, n)


@power.defjvp
def _power_jvp(primals, tangents):
    x, n = primals
    x_dot, _ = tangents
    return jax.jvp(_power, (x, n), (x_dot, jnp.zeros_like(n)))  # eval: span


def eval_fn(x, n):
    return jnp.sum(power(x, n))


def eval_inputs():
    return (np.array([1.5, -0.5, 2.0], np.float32), np.int32(3))


def eval_reference(x, n):
    return np.asarray(np.sum(np.asarray(x, np.float64) ** int(n)))
