"""structure look-alike: a custom_vjp whose bwd applies the custom function itself to the cotangent, used inside lax.scan.

Report: jax-ml/jax#3397 https://github.com/jax-ml/jax/issues/3397 (a custom identity whose bwd
returned (custom_identity(g),) hit an "impossible master trace type" assertion once the function was
called inside lax.scan; plain grad worked). Fixed since; on JAX 0.10.2 it runs. Here a gradient
tap that passes values and cotangents through itself is applied per time step.
"""
import jax
import jax.numpy as jnp
import numpy as np

EVAL = {
    "id": "structure/ok_h5_jax3397_bwd_calls_custom_identity_in_scan", "family": "structure",
    "expect": "ok", "source": "jax-ml/jax#3397", "url": "https://github.com/jax-ml/jax/issues/3397",
    "written_at": "2026-12-02", "written_at_commit": "2f27280778b10986f4436c94bc630dd525ce7747",
    "argnums": (0,), "heldout": True,
}


@jax.custom_vjp
def tap(v):
    return v


def _tap_fwd(v):
    return tap(v), None


def _tap_bwd(_, g):
    return (tap(g),)  # eval: span


tap.defvjp(_tap_fwd, _tap_bwd)


def eval_fn(x):
    def body(carry, v):
        return carry, tap(v) * carry

    _, ys = jax.lax.scan(body, x[0], x)
    return jnp.sum(ys)


def eval_inputs():
    return (np.array([1.5, -0.5, 2.0], np.float32),)


def eval_reference(x):
    x = np.asarray(x, np.float64)
    return np.asarray(np.sum(x * x[0]))
