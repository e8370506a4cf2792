"""structure look-alike (fixed report): a custom_jvp function inside a lax.scan body, differentiated.

Report: jax-ml/jax#2657 https://github.com/jax-ml/jax/issues/2657 ("TypeError: <class
'jax.ad_util.Zero'> is not a valid Jax type when I combine custom_jvp and lax.scan"), fixed by
jax-ml/jax#2673 (missing instantiate_zeros).
"""
import jax
import jax.numpy as jnp
import numpy as np

EVAL = {
    "id": "structure/ok_jax2657_jvp_rule_in_scan", "family": "structure", "expect": "ok",
    "source": "jax-ml/jax#2657", "url": "https://github.com/jax-ml/jax/issues/2657",
    "written_at": "2026-12-01", "written_at_commit": "4ca3eb3a9f0b546f5fb228ede943c80bf9bdb7b0",
    "argnums": (0,), "extra": ["jvp"],
}


@jax.custom_jvp
def softclip(x, scale):  # eval: span
    return scale * jnp.tanh(x / scale)


@softclip.defjvp
def softclip_jvp(primals, tangents):
    (x, scale), (x_dot, scale_dot) = primals, tangents
    t = jnp.tanh(x / scale)
    dscale = t - (x / scale) * (1 - t ** 2)
    return scale * t, (1 - t ** 2) * x_dot + dscale * scale_dot


def eval_fn(x):
    out, _ = jax.lax.scan(lambda c, _: (softclip(c, 2.0) + 0.1, None), x, None, length=3)
    return out


def eval_inputs():
    return (np.array([0.5, 3.0], np.float32),)


def eval_reference(x):
    c = np.asarray(x, np.float64)
    for _ in range(3):
        c = 2.0 * np.tanh(c / 2.0) + 0.1
    return c
