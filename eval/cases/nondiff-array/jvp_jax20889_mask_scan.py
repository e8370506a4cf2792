"""nondiff-array hazard (custom_jvp): an array mask in custom_jvp nondiff_argnums, inside lax.scan, under grad.

Report: jax-ml/jax#20889 https://github.com/jax-ml/jax/issues/20889 ("improve error message and
docs for custom_jvp / custom_vjp nondiff_argnums escaped tracer error"). A user's custom_jvp took
a boolean mask as a nondiff argument and was called in a scan body; grad of the loss raised an
escaped-tracer error. Still open.
"""
import jax
import jax.numpy as jnp
import numpy as np

EVAL = {
    "id": "nondiff-array/jvp_jax20889_mask_scan", "family": "nondiff-array", "expect": "hazard",
    "source": "jax-ml/jax#20889", "url": "https://github.com/jax-ml/jax/issues/20889",
    "written_at": "2026-12-01", "written_at_commit": "66aa237f5176449a9711e6278e47349128c8731b",
    "argnums": (0,),
}


def _masked(arr, mask):  # eval: span
    return jnp.where(mask, 0.0, arr * 1.5)


masked = jax.custom_jvp(_masked, nondiff_argnums=(1,))  # eval: span


@masked.defjvp
def masked_jvp(mask, primals, tangents):  # eval: span
    (arr,), (arr_dot,) = primals, tangents
    return _masked(arr, mask), jnp.where(mask, 0.0, arr_dot * 1.5)


def eval_fn(x, mask):
    def step(carry, _):
        a, m = carry
        return (masked(a, m), m), None  # eval: span

    (out, _), _ = jax.lax.scan(step, (x, mask), None, length=2)
    return out


def eval_inputs():
    return (np.array([1.0, 2.0, 3.0], np.float32), np.array([False, True, False]))


def eval_reference(x, mask):
    x = np.asarray(x, np.float64)
    return np.where(mask, 0.0, x * 2.25)
