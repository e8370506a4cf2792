"""structure look-alike: a masked RNN custom_vjp with trailing nondiff hyperparameters whose bwd returns jnp.zeros_like(lengths) for the integer lengths.

Source: jax-ml/jax jax/experimental/rnn.py, `lstm` / `lstm_fwd` / `lstm_bwd`
https://github.com/jax-ml/jax/blob/cec06d116c05f0d52adfceee3d3b730fdbcb0ce5/jax/experimental/rnn.py#L270-L514
(read at commit cec06d1): `partial(custom_vjp, nondiff_argnums=(5, ..., 10))` puts the
hyperparameters after the arrays, so bwd takes them first, then `(residuals, gradients)`; it returns
`(dx, dh_0, dc_0, dw, jnp.zeros_like(seq_lengths))`, an integer zero for the int32 sequence lengths
(JAX drops a cotangent whose input's tangent type is float0). Here a scalar-weight tanh RNN whose
steps past each row's length keep the state, with bwd from jax.vjp of the unrolled loop.
"""
import functools

import jax
import jax.numpy as jnp
import numpy as np

EVAL = {
    "id": "structure/ok_h7_jaxrnn_bwd_int_zeros_like_for_lengths", "family": "structure",
    "expect": "ok", "source": "jax-ml/jax:jax/experimental/rnn.py",
    "url": "https://github.com/jax-ml/jax/blob/cec06d116c05f0d52adfceee3d3b730fdbcb0ce5/jax/experimental/rnn.py#L270-L514",
    "written_at": "2026-12-05", "written_at_commit": "914cb50819952883a4a3f7630a31351c99785b0d",
    "argnums": (0, 1, 2), "heldout": True,
}


def _run(xs, h0, w, lengths, reverse):
    h = h0
    xs = xs[::-1] if reverse else xs
    for t in range(xs.shape[0]):
        h = jnp.where(t < lengths, jnp.tanh(w * h + xs[t]), h)
    return h


@functools.partial(jax.custom_vjp, nondiff_argnums=(4,))  # eval: span
def masked_rnn(xs, h0, w, lengths, reverse=False):  # eval: span
    return _run(xs, h0, w, lengths, reverse)


def masked_rnn_fwd(xs, h0, w, lengths, reverse=False):  # eval: span
    return _run(xs, h0, w, lengths, reverse), (xs, h0, w, lengths)


def masked_rnn_bwd(reverse, residuals, dh):  # eval: span
    xs, h0, w, lengths = residuals
    _, pull = jax.vjp(lambda a, b, c: _run(a, b, c, lengths, reverse), xs, h0, w)
    dxs, dh0, dw = pull(dh)
    return (dxs, dh0, dw, jnp.zeros_like(lengths))  # eval: span


masked_rnn.defvjp(masked_rnn_fwd, masked_rnn_bwd)  # eval: span


def eval_fn(xs, h0, w, lengths):
    return masked_rnn(xs, h0, w, lengths)


def eval_inputs():
    xs = np.array([[0.5, -0.2, 0.1], [0.3, 0.4, -0.6], [-0.1, 0.2, 0.9], [0.7, -0.5, 0.2]], np.float32)
    return (xs, np.array([0.1, -0.3, 0.2], np.float32), np.array(0.8, np.float32),
            np.array([4, 2, 3], np.int32))


def eval_reference(xs, h0, w, lengths):
    xs, h = np.asarray(xs, np.float64), np.asarray(h0, np.float64)
    for t in range(xs.shape[0]):
        h = np.where(t < lengths, np.tanh(float(w) * h + xs[t]), h)
    return h
