"""nonlinear-jvp look-alike: a safe sqrt custom_jvp whose tangent is jnp.where(x > 0, t / (2 y), 0): the mask depends only on the primal.

Report: HajimeKawahara/exojax#598 https://github.com/HajimeKawahara/exojax/pull/598 (a custom
JVP for sqrt added to the chord-geometry code so forward-mode differentiation of a transmission
spectrum stops producing NaN at zero). A where whose condition is primal-only is linear in the
tangent and transposes. Here chord lengths through shells are computed with it.
"""
import jax
import jax.numpy as jnp
import numpy as np

EVAL = {
    "id": "nonlinear-jvp/ok_h4_exojax598_safe_sqrt_where_on_tangent", "family": "nonlinear-jvp",
    "expect": "ok", "source": "HajimeKawahara/exojax#598",
    "url": "https://github.com/HajimeKawahara/exojax/pull/598",
    "written_at": "2026-12-02", "written_at_commit": "8b8e5ef99343de7779754cb23d51776bc6898883",
    "argnums": (0,), "extra": ["jacfwd"], "heldout": True,
}


@jax.custom_jvp
def safe_sqrt(x):
    return jnp.sqrt(jnp.maximum(x, 0.0))


@safe_sqrt.defjvp
def _safe_sqrt_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    y = safe_sqrt(x)
    return y, jnp.where(x > 0, t / (2.0 * y), 0.0)  # eval: span


def eval_fn(radii):
    impact = 0.8
    return jnp.sum(2.0 * safe_sqrt(radii ** 2 - impact ** 2))


def eval_inputs():
    return (np.array([1.0, 1.5, 2.0], np.float32),)


def eval_reference(radii):
    r = np.asarray(radii, np.float64)
    return np.asarray(np.sum(2.0 * np.sqrt(r ** 2 - 0.64)))
