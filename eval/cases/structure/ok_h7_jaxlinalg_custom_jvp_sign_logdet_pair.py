"""structure look-alike: a custom_jvp returning a (sign, log|det|) pair whose rule gives the sign a zeros_like tangent.

Source: jax-ml/jax jax/_src/numpy/linalg.py, `_slogdet_small` and its jvp rule
https://github.com/jax-ml/jax/blob/cec06d116c05f0d52adfceee3d3b730fdbcb0ce5/jax/_src/numpy/linalg.py#L488-L523
(read at commit cec06d1): the small-matrix slogdet is a custom_jvp whose output is a pair; the
rule returns the pair of primals and a pair of tangents, the sign's tangent being zeros_like(sign)
(the sign is piecewise constant) and log|det|'s the trace formula. Here the same shape of rule for
batched 2x2 matrices, written out by hand.
"""
import jax
import jax.numpy as jnp
import numpy as np

EVAL = {
    "id": "structure/ok_h7_jaxlinalg_custom_jvp_sign_logdet_pair", "family": "structure",
    "expect": "ok", "source": "jax-ml/jax:jax/_src/numpy/linalg.py",
    "url": "https://github.com/jax-ml/jax/blob/cec06d116c05f0d52adfceee3d3b730fdbcb0ce5/jax/_src/numpy/linalg.py#L488-L523",
    "written_at": "2026-12-05", "written_at_commit": "914cb50819952883a4a3f7630a31351c99785b0d",
    "argnums": (0,), "heldout": True,
}


def _det2(m):
    return m[..., 0, 0] * m[..., 1, 1] - m[..., 0, 1] * m[..., 1, 0]


@jax.custom_jvp  # eval: span
def slogdet2(m):  # eval: span
    det = _det2(m)
    return jnp.sign(det), jnp.log(jnp.abs(det))


@slogdet2.defjvp  # eval: span
def _slogdet2_jvp(primals, tangents):  # eval: span
    (m,), (dm,) = primals, tangents
    sign, logdet = slogdet2(m)
    # d log|det m| = tr(m^-1 dm); for 2x2 the adjugate is written out
    num = (dm[..., 0, 0] * m[..., 1, 1] + m[..., 0, 0] * dm[..., 1, 1]
           - dm[..., 0, 1] * m[..., 1, 0] - m[..., 0, 1] * dm[..., 1, 0])
    dlogdet = num / _det2(m)
    return (sign, logdet), (jnp.zeros_like(sign), dlogdet)  # eval: span


def eval_fn(m):
    sign, logdet = slogdet2(m)
    return sign * jnp.exp(logdet) + logdet


def eval_inputs():
    return (np.array([[[2.0, 0.5], [0.3, 1.5]],
                      [[-1.0, 0.4], [0.2, 1.2]],
                      [[0.7, -1.1], [0.9, 0.6]]], np.float32),)


def eval_reference(m):
    m = np.asarray(m, np.float64)
    det = m[..., 0, 0] * m[..., 1, 1] - m[..., 0, 1] * m[..., 1, 0]
    return det + np.log(np.abs(det))
