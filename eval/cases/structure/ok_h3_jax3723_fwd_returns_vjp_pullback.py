"""structure look-alike: a custom_vjp fwd stores the jax.vjp pullback itself as its residual.

Report: jax-ml/jax#3723 https://github.com/jax-ml/jax/issues/3723 (a documentation to-do after
jax-ml/jax#3705: the callable returned by jax.vjp is a pytree, so a custom_vjp fwd may return it as
residuals and bwd may call it). Here a gradient-scaling wrapper around a smooth map keeps the
pullback and halves what it returns.
"""
import jax
import jax.numpy as jnp
import numpy as np

EVAL = {
    "id": "structure/ok_h3_jax3723_fwd_returns_vjp_pullback", "family": "structure",
    "expect": "ok", "source": "jax-ml/jax#3723", "url": "https://github.com/jax-ml/jax/issues/3723",
    "written_at": "2026-12-02", "written_at_commit": "211ce24975f5ee97618de3dc23050e26a289688a",
    "argnums": (0,), "heldout": True,
}


def _smooth(x):
    return jnp.sin(x) * x


@jax.custom_vjp
def damped(x):
    return _smooth(x)


def _damped_fwd(x):
    y, pullback = jax.vjp(_smooth, x)
    return y, pullback  # eval: span


def _damped_bwd(pullback, g):
    (gx,) = pullback(g)  # eval: span
    return (0.5 * gx,)


damped.defvjp(_damped_fwd, _damped_bwd)


def eval_fn(x):
    return jnp.sum(damped(x))


def eval_inputs():
    return (np.array([0.3, -1.1, 2.0], np.float32),)


def eval_reference(x):
    x = np.asarray(x, np.float64)
    return np.asarray(np.sum(np.sin(x) * x))


def eval_grad_reference(x):
    x = np.asarray(x, np.float64)
    return (0.5 * (np.cos(x) * x + np.sin(x)),)
