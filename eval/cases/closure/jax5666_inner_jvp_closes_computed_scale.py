"""closure hazard (custom_jvp): a custom_jvp defined inside a function closes over a value computed from a parameter (`scale = jnp.exp(log_scale)`) next to a static order.

Report: jax-ml/jax#5666 https://github.com/jax-ml/jax/issues/5666 ("Hunt for high order closure
problems in custom derivatives code": custom_jvp rules written inside larger functions closed over
intermediates, and differentiating the outer function failed; the maintainers pointed to passing
the values explicitly or `jax.closure_convert`). Here `order` is a Python int (static) and only
`scale` carries the problem; nothing in this module transforms `soft_clip`.
"""
import jax
import jax.numpy as jnp
import numpy as np

EVAL = {
    "id": "closure/jax5666_inner_jvp_closes_computed_scale", "family": "closure", "expect": "hazard",
    "source": "jax-ml/jax#5666", "url": "https://github.com/jax-ml/jax/issues/5666",
    "written_at": "2026-12-02", "written_at_commit": "9e042dab056b2e5f1652c5b10417b37c94b25964",
    "argnums": (0,), "static": (2,), "extra": ["grad_jit", "jacfwd"],
}


def soft_clip(log_scale, x, order):
    scale = jnp.exp(log_scale)

    @jax.custom_jvp  # eval: span
    def squash(v):  # eval: span
        out = v / scale  # eval: span
        for _ in range(order):
            out = jnp.tanh(out)
        return scale * out  # eval: span

    @squash.defjvp
    def squash_jvp(primals, tangents):
        (v,), (v_dot,) = primals, tangents
        out, deriv = v / scale, jnp.ones_like(v)
        for _ in range(order):
            out = jnp.tanh(out)
            deriv = deriv * (1.0 - out ** 2)
        return scale * out, deriv * v_dot

    return squash(x)


def eval_fn(log_scale, x, order):
    return soft_clip(log_scale, x, order)


def eval_inputs():
    return (np.float32(0.3), np.array([-2.0, 0.5, 3.0], np.float32), 2)


def eval_reference(log_scale, x, order):
    s = np.exp(np.float64(log_scale))
    out = np.asarray(x, np.float64) / s
    for _ in range(order):
        out = np.tanh(out)
    return s * out
