"""structure look-alike: an eqx.filter_custom_vjp whose residuals include a Python string next to arrays.

Report: patrick-kidger/equinox#436 https://github.com/patrick-kidger/equinox/pull/436
("filter_custom_vjp now supports non-array residuals"). Here a soft-sign activation takes a static
mode string, and fwd passes the mode back through the residuals for bwd to branch on in Python.
"""
import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

EVAL = {
    "id": "structure/ok_h3_eqx436_filter_custom_vjp_nonarray_residual", "family": "structure",
    "expect": "ok", "source": "patrick-kidger/equinox#436",
    "url": "https://github.com/patrick-kidger/equinox/pull/436",
    "written_at": "2026-12-02", "written_at_commit": "211ce24975f5ee97618de3dc23050e26a289688a",
    "argnums": (0,), "heldout": True,
}


@eqx.filter_custom_vjp
def activate(x, mode):
    return x / (1.0 + jnp.abs(x)) if mode == "softsign" else jnp.tanh(x)


@activate.def_fwd
def _activate_fwd(perturbed, x, mode):
    y = activate(x, mode)
    return y, (x, y, mode)  # eval: span


@activate.def_bwd
def _activate_bwd(res, g, perturbed, x, mode):
    x_saved, y, how = res  # eval: span
    if how == "softsign":
        return g / (1.0 + jnp.abs(x_saved)) ** 2
    return g * (1.0 - y ** 2)


def eval_fn(x):
    return jnp.sum(activate(x, "softsign"))


def eval_inputs():
    return (np.array([0.5, -2.0, 3.0], np.float32),)


def eval_reference(x):
    x = np.asarray(x, np.float64)
    return np.asarray(np.sum(x / (1.0 + np.abs(x))))
