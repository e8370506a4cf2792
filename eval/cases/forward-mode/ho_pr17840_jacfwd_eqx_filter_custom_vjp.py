"""forward-mode hazard: `jax.jacfwd` through an equinox `filter_custom_vjp` solver.

Report: jax-ml/jax#17840 https://github.com/jax-ml/jax/pull/17840 (equinox's author proposes an
opt-in JVP for custom_vjp because downstream solvers built on it cannot be used in forward mode).
`eqx.filter_custom_vjp` is a custom_vjp underneath; here a damped-iteration solve uses it with the
documented `def_fwd`/`def_bwd` API and the caller asks for its Jacobian with `jacfwd` inside a
model class's method.
"""
import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

EVAL = {
    "id": "forward-mode/ho_pr17840_jacfwd_eqx_filter_custom_vjp", "family": "forward-mode",
    "expect": "hazard", "source": "jax-ml/jax#17840", "url": "https://github.com/jax-ml/jax/pull/17840",
    "written_at": "2026-12-02", "written_at_commit": "7d338003625df627af3f64e858b0803f5255fc3c",
    "argnums": (0,), "heldout": True,
}


@eqx.filter_custom_vjp  # eval: span
def cube_root(b):  # eval: span
    y = jnp.ones_like(b)
    for _ in range(40):
        y = y - (y ** 3 - b) / (3.0 * y ** 2)
    return y


@cube_root.def_fwd
def cube_root_fwd(perturbed, b):
    y = cube_root(b)
    return y, y


@cube_root.def_bwd
def cube_root_bwd(y, g, perturbed, b):
    return g / (3.0 * y ** 2)


class Sensitivity:
    def __init__(self, weights):
        self.weights = weights

    def slopes(self, b):
        return jnp.diagonal(jax.jacfwd(cube_root)(b)) * self.weights  # eval: span


MODEL = Sensitivity(np.array([1.0, 2.0, 0.5], np.float32))


def eval_fn(b):
    return MODEL.slopes(b)


def eval_inputs():
    return (np.array([2.0, 8.0, 0.5], np.float32),)


def eval_reference(b):
    b = np.asarray(b, np.float64)
    return np.array([1.0, 2.0, 0.5]) / (3.0 * np.cbrt(b) ** 2)
