"""structure look-alike: an attention custom_vjp with nondiff_argnums=range(4, 6) whose fwd calls the primal with a flag that makes it return (o, l, m), and whose bwd returns None for the integer segment ids.

Source: jax-ml/jax jax/experimental/pallas/ops/tpu/flash_attention.py, `_flash_attention` /
`_flash_attention_fwd` / `_flash_attention_bwd`
https://github.com/jax-ml/jax/blob/cec06d116c05f0d52adfceee3d3b730fdbcb0ce5/jax/experimental/pallas/ops/tpu/flash_attention.py#L204-L318
(read at commit cec06d1): `partial(jax.custom_vjp, nondiff_argnums=range(5, 10))`; the primal returns
`o` or, when its `save_residuals` flag is set, `(o, l, m)`; fwd refuses the flag, calls the primal
with it set, unpacks three values and returns `o` with residuals; bwd returns
`dq, dk, dv, ds, None` (None for the segment ids) and the rules are registered with
`defvjp(fwd=..., bwd=...)`. Here a dense single-head attention with the same signature shape.
"""
import functools

import jax
import jax.numpy as jnp
import numpy as np

EVAL = {
    "id": "structure/ok_h7_jaxpallas_fwd_calls_primal_with_stats_flag", "family": "structure",
    "expect": "ok", "source": "jax-ml/jax:jax/experimental/pallas/ops/tpu/flash_attention.py",
    "url": "https://github.com/jax-ml/jax/blob/cec06d116c05f0d52adfceee3d3b730fdbcb0ce5/jax/experimental/pallas/ops/tpu/flash_attention.py#L204-L318",
    "written_at": "2026-12-05", "written_at_commit": "914cb50819952883a4a3f7630a31351c99785b0d",
    "argnums": (0, 1, 2), "heldout": True,
}


def _scores(q, k, segment_ids, scale):
    same = segment_ids[:, None] == segment_ids[None, :]
    return jnp.where(same, scale * (q @ k.T), -1e9)


@functools.partial(jax.custom_vjp, nondiff_argnums=range(4, 6))  # eval: span
def attention(q, k, v, segment_ids, with_stats, scale):  # eval: span
    s = _scores(q, k, segment_ids, scale)
    m = jnp.max(s, axis=-1)
    p = jnp.exp(s - m[:, None])
    l = jnp.sum(p, axis=-1)
    o = (p @ v) / l[:, None]
    if with_stats:
        return o, l, m
    return o


def _attention_fwd(q, k, v, segment_ids, with_stats, scale):  # eval: span
    if with_stats:
        raise NotImplementedError("the statistics output has no derivative rule")
    o, l, m = attention(q, k, v, segment_ids, True, scale)  # eval: span
    return o, (q, k, v, segment_ids, o, l, m)  # eval: span


def _attention_bwd(with_stats, scale, residuals, do):  # eval: span
    q, k, v, segment_ids, o, l, m = residuals
    p = jnp.exp(_scores(q, k, segment_ids, scale) - m[:, None]) / l[:, None]
    dv = p.T @ do
    dp = do @ v.T
    ds = p * (dp - jnp.sum(do * o, axis=-1, keepdims=True))
    dq = scale * (ds @ k)
    dk = scale * (ds.T @ q)
    return dq, dk, dv, None  # eval: span


attention.defvjp(fwd=_attention_fwd, bwd=_attention_bwd)  # eval: span


def eval_fn(q, k, v, segment_ids):
    return attention(q, k, v, segment_ids, False, 0.5)


def eval_inputs():
    rng = np.random.default_rng(7)
    q, k, v = (rng.normal(size=(4, 3)).astype(np.float32) for _ in range(3))
    return (q, k, v, np.array([0, 0, 1, 1], np.int32))


def eval_reference(q, k, v, segment_ids):
    q, k, v = (np.asarray(a, np.float64) for a in (q, k, v))
    s = np.where(segment_ids[:, None] == segment_ids[None, :], 0.5 * (q @ k.T), -1e9)
    p = np.exp(s - s.max(-1, keepdims=True))
    return (p / p.sum(-1, keepdims=True)) @ v
