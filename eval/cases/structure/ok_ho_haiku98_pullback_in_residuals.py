"""structure look-alike: fwd keeps a `jax.vjp` pullback as the residual, bwd calls it with `g`.

Report: google-deepmind/dm-haiku#98 https://github.com/google-deepmind/dm-haiku/issues/98 (the
reporter's pattern: store one VJP in the residuals of another custom VJP, a feature he had added
in jax-ml/jax#3705). A pullback is a pytree of arrays, so it may be a residual; bwd passes the whole
cotangent (a pair here) as the pullback's single argument and returns its tuple.
"""
import jax
import jax.numpy as jnp
import numpy as np

EVAL = {
    "id": "structure/ok_ho_haiku98_pullback_in_residuals", "family": "structure", "expect": "ok",
    "source": "google-deepmind/dm-haiku#98", "url": "https://github.com/google-deepmind/dm-haiku/issues/98",
    "written_at": "2026-12-02", "written_at_commit": "7d338003625df627af3f64e858b0803f5255fc3c",
    "argnums": (0, 1), "extra": ["grad_jit"], "heldout": True,
}


def encode(x, weights):
    h = jnp.tanh(weights * x)
    return h, jnp.sum(h)


@jax.custom_vjp
def block(x, weights):
    return encode(x, weights)


def block_fwd(x, weights):
    return jax.vjp(encode, x, weights)


def block_bwd(pullback, cts):
    return pullback(cts)


block.defvjp(block_fwd, block_bwd)


def eval_fn(x, weights):
    h, total = block(x, weights)
    return h * total


def eval_inputs():
    return (np.array([0.5, -0.25, 1.0], np.float32), np.array([1.2, 0.8, -0.4], np.float32))


def eval_reference(x, weights):
    h = np.tanh(np.asarray(weights, np.float64) * np.asarray(x, np.float64))
    return h * np.sum(h)
