"""structure look-alike: a custom_vjp product inside lax.scan, vmapped with an unbatched coefficient whose bwd sums x * g.

Report: jax-ml/jax#5832 https://github.com/jax-ml/jax/issues/5832 (custom_vjp + scan + vmap with
in_axes=(0, None) raised a ValueError under jax.vjp in jax 0.2.9; 0.2.8 worked). The bwd reduces
the coefficient's cotangent to a scalar, which is right per example. On JAX 0.10.2 it runs. Here a
repeated gain is applied three times in a scan.
"""
import jax
import jax.numpy as jnp
import numpy as np

EVAL = {
    "id": "structure/ok_h4_jax5832_custom_vjp_scan_vmap_unbatched_coeff", "family": "structure",
    "expect": "ok", "source": "jax-ml/jax#5832", "url": "https://github.com/jax-ml/jax/issues/5832",
    "written_at": "2026-12-02", "written_at_commit": "8b8e5ef99343de7779754cb23d51776bc6898883",
    "argnums": (0, 1), "vmap_in_axes": (0, None), "heldout": True,
}


@jax.custom_vjp
def scale(x, coeff):
    return x * coeff


def _scale_fwd(x, coeff):
    return scale(x, coeff), (x, coeff)


def _scale_bwd(res, g):
    x, coeff = res
    return g * coeff, jnp.sum(x * g)  # eval: span


scale.defvjp(_scale_fwd, _scale_bwd)


def repeated(x, coeff):
    y, _ = jax.lax.scan(lambda c, _: (scale(c, coeff), None), x, None, length=3)  # eval: span
    return y


def eval_fn(xs, coeff):
    return jnp.sum(jax.vmap(repeated, in_axes=(0, None))(xs, coeff) ** 2)


def eval_inputs():
    return (np.array([[0.5, -1.0], [1.0, 2.0], [0.2, 0.3]], np.float32), np.float32(1.2))


def eval_reference(xs, coeff):
    return np.asarray(np.sum((np.asarray(xs, np.float64) * float(coeff) ** 3) ** 2))
