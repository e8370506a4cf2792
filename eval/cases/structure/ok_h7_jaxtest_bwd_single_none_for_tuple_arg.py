"""structure look-alike: a custom_vjp whose first argument is a tuple of integer bounds and whose bwd returns one None for that whole tuple.

Source: jax-ml/jax tests/custom_api_test.py, `CustomVJPTest.test_bwd_nones_pytree`
https://github.com/jax-ml/jax/blob/cec06d116c05f0d52adfceee3d3b730fdbcb0ce5/tests/custom_api_test.py#L2455-L2468
(read at commit cec06d1): the primal takes a pair `xs` and an array `y`; bwd returns
`(None, 2 * cos * g)`, a single None standing for the zero cotangent of the whole pair, and JAX
accepts it. Here the pair is a window's integer (start, stop) and the function sums sin(y) inside it.
"""
import jax
import jax.numpy as jnp
import numpy as np

EVAL = {
    "id": "structure/ok_h7_jaxtest_bwd_single_none_for_tuple_arg", "family": "structure",
    "expect": "ok", "source": "jax-ml/jax:tests/custom_api_test.py",
    "url": "https://github.com/jax-ml/jax/blob/cec06d116c05f0d52adfceee3d3b730fdbcb0ce5/tests/custom_api_test.py#L2455-L2468",
    "written_at": "2026-12-05", "written_at_commit": "914cb50819952883a4a3f7630a31351c99785b0d",
    "argnums": (2,), "heldout": True,
}


def _inside(window, y):
    start, stop = window
    idx = jnp.arange(y.shape[-1])
    return (idx >= start) & (idx < stop)


@jax.custom_vjp  # eval: span
def window_sin_sum(window, y):  # eval: span
    return jnp.sum(jnp.where(_inside(window, y), jnp.sin(y), 0.0), axis=-1)


def _window_fwd(window, y):  # eval: span
    return window_sin_sum(window, y), (_inside(window, y), jnp.cos(y))


def _window_bwd(res, g):  # eval: span
    inside, cos_y = res
    return (None, jnp.where(inside, cos_y, 0.0) * g[..., None])  # eval: span


window_sin_sum.defvjp(_window_fwd, _window_bwd)  # eval: span


def eval_fn(start, stop, y):
    return window_sin_sum((start, stop), y)


def eval_inputs():
    return (np.array(1, np.int32), np.array(4, np.int32),
            np.array([0.3, -1.2, 0.8, 2.0, 0.5], np.float32))


def eval_reference(start, stop, y):
    y = np.asarray(y, np.float64)
    idx = np.arange(y.shape[-1])
    return np.sum(np.where((idx >= start) & (idx < stop), np.sin(y), 0.0), axis=-1)
