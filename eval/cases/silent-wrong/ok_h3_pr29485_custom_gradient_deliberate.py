"""silent-wrong look-alike: a jax.custom_gradient whose gradient deliberately differs from the primal's derivative.

Report: jax-ml/jax#29485 https://github.com/jax-ml/jax/pull/29485 (a PR "fixing" the custom_gradient
docstring example x**2 with gradient g * x to g * 2 * x; the maintainer: the example is on purpose,
to show that any gradient can be returned). Here a damped square keeps the halved gradient on purpose.
"""
import jax
import jax.numpy as jnp
import numpy as np

EVAL = {
    "id": "silent-wrong/ok_h3_pr29485_custom_gradient_deliberate", "family": "silent-wrong",
    "expect": "ok", "source": "jax-ml/jax#29485", "url": "https://github.com/jax-ml/jax/pull/29485",
    "written_at": "2026-12-02", "written_at_commit": "211ce24975f5ee97618de3dc23050e26a289688a",
    "argnums": (0,), "heldout": True,
}


@jax.custom_gradient
def damped_square(x):
    return x ** 2, lambda g: (g * x,)  # eval: span


def eval_fn(x):
    return damped_square(x)


def eval_inputs():
    return (np.float32(1.5),)


def eval_reference(x):
    return np.asarray(float(x) ** 2)


def eval_grad_reference(x):
    return (np.asarray(float(x)),)
