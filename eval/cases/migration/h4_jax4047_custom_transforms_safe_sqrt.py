"""migration hazard: a safe sqrt written with jax.custom_transforms and jax.defjvp (both removed).

Report: jax-ml/jax#4047 https://github.com/jax-ml/jax/issues/4047 (a pairwise-distance energy used
a safe_sqrt built with @jax.custom_transforms and jax.defjvp(safe_sqrt, lambda g, ans, x: ...)
to keep gradients finite at zero distance; the reporter saw NaN gradients under vmap). Both APIs
were deleted from JAX; here a distance norm keeps the old spelling.
"""
import jax
import jax.numpy as jnp
import numpy as np

EVAL = {
    "id": "migration/h4_jax4047_custom_transforms_safe_sqrt", "family": "migration",
    "expect": "hazard", "source": "jax-ml/jax#4047", "url": "https://github.com/jax-ml/jax/issues/4047",
    "written_at": "2026-12-02", "written_at_commit": "8b8e5ef99343de7779754cb23d51776bc6898883",
    "argnums": (0,), "heldout": True,
}


def _build():
    @jax.custom_transforms  # eval: span
    def safe_sqrt(x):  # eval: span
        return jnp.sqrt(x)

    jax.defjvp(safe_sqrt, lambda g, ans, x: 0.5 * g / jnp.where(x > 0, ans, jnp.inf))  # eval: span
    return safe_sqrt


def eval_fn(points):
    safe_sqrt = _build()
    diff = points[:, None, :] - points[None, :, :] + 1.0
    return jnp.sum(safe_sqrt(jnp.sum(diff ** 2, axis=-1)))


def eval_inputs():
    return (np.array([[0.0, 1.0], [2.0, -1.0], [0.5, 0.5]], np.float32),)


def eval_reference(points):
    p = np.asarray(points, np.float64)
    diff = p[:, None, :] - p[None, :, :] + 1.0
    return np.asarray(np.sum(np.sqrt(np.sum(diff ** 2, axis=-1))))
