"""silent-wrong look-alike: a custom_vjp bwd returns a float32 cotangent for a float16 input.

Report: jax-ml/jax#23779 https://github.com/jax-ml/jax/pull/23779 (custom_vjp used to drop a
cotangent the user's rule produced whenever its dtype differed from the primal's, a silent zero;
since the fix only float0 slots are dropped). Mixed precision does this naturally: the bwd computes
in float32 for a float16 activation, and the gradient must arrive.
"""
import jax
import jax.numpy as jnp
import numpy as np

EVAL = {
    "id": "silent-wrong/ok_ho_pr23779_f32_cotangent_for_f16", "family": "silent-wrong", "expect": "ok",
    "source": "jax-ml/jax#23779", "url": "https://github.com/jax-ml/jax/pull/23779",
    "written_at": "2026-12-02", "written_at_commit": "7d338003625df627af3f64e858b0803f5255fc3c",
    "argnums": (0,), "heldout": True,
}


@jax.custom_vjp
def gelu_half(h):
    return jax.nn.gelu(h.astype(jnp.float32)).astype(jnp.float16)


def gelu_half_fwd(h):
    return gelu_half(h), h


def gelu_half_bwd(h, g):
    _, pull = jax.vjp(jax.nn.gelu, h.astype(jnp.float32))
    (dh,) = pull(g.astype(jnp.float32))
    return (dh,)


gelu_half.defvjp(gelu_half_fwd, gelu_half_bwd)


def eval_fn(x):
    return gelu_half(x.astype(jnp.float16)).astype(jnp.float32)


def eval_inputs():
    return (np.array([0.5, -1.0, 2.0], np.float32),)


def _gelu(x):
    return 0.5 * x * (1.0 + np.tanh(np.sqrt(2.0 / np.pi) * (x + 0.044715 * x ** 3)))


def eval_reference(x):
    return _gelu(np.asarray(x, np.float64))
