"""structure look-alike: a factory wraps *args in jax.custom_vjp; integer index arguments get None cotangents.

Source: google/trax trax/fastmath/jax.py and trax/layers/research/efficient_attention.py
https://github.com/google/trax/blob/master/trax/layers/research/efficient_attention.py
(`fastmath.custom_vjp(f, f_fwd, f_bwd)` builds `functools.partial(jax.custom_vjp,
nondiff_argnums=...)` over `def _f(*args, **kwargs)` and calls `defvjp` inside the factory;
`permute_via_gather` uses it on `(permutation, inverse_permutation, val)`: fwd keeps the bare
inverse permutation as residual, bwd returns `(None, None, take(grad, inverse))`).
"""
import functools

import jax
import jax.numpy as jnp
import numpy as np

EVAL = {
    "id": "structure/ok_h7_trax_custom_vjp_factory_int_permutation", "family": "structure",
    "expect": "ok", "source": "google/trax trax/layers/research/efficient_attention.py",
    "url": "https://github.com/google/trax/blob/master/trax/layers/research/efficient_attention.py",
    "written_at": "2026-12-05", "written_at_commit": "914cb50819952883a4a3f7630a31351c99785b0d",
    "argnums": (0,), "heldout": True,
}


def custom_vjp(f, f_fwd, f_bwd, nondiff_argnums=()):
    @functools.partial(jax.custom_vjp, nondiff_argnums=nondiff_argnums)  # eval: span
    def wrapped(*args, **kwargs):
        return f(*args, **kwargs)

    wrapped.defvjp(f_fwd, f_bwd)  # eval: span
    return wrapped


def permute_via_gather(val, permutation, inverse_permutation, axis=0):
    def permute_impl(p, unused_ip, v):
        return jnp.take(v, p, axis=axis)

    def permute_fwd(p, ip, v):
        return jnp.take(v, p, axis=axis), ip  # eval: span

    def permute_bwd(ip, permuted_grad):
        return (None, None, jnp.take(permuted_grad, ip, axis=axis))  # eval: span

    permute = custom_vjp(permute_impl, permute_fwd, permute_bwd)
    return permute(permutation, inverse_permutation, val)


ROW_WEIGHTS = np.arange(1.0, 6.0, dtype=np.float32)[:, None]


def eval_fn(val, perm, inv_perm):
    return ROW_WEIGHTS * permute_via_gather(val, perm, inv_perm)


def eval_inputs():
    perm = np.array([3, 0, 4, 1, 2], np.int32)
    val = np.array([[0.1, 1.0], [0.5, -0.2], [2.0, 0.3], [-1.0, 0.7], [0.4, 0.9]], np.float32)
    return (val, perm, np.argsort(perm).astype(np.int32))


def eval_reference(val, perm, inv_perm):
    return ROW_WEIGHTS.astype(np.float64) * np.asarray(val, np.float64)[np.asarray(perm)]
