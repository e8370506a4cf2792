"""forward-mode hazard: jax.jacfwd of an equinox Module whose __call__ goes through a custom_vjp.

Report: patrick-kidger/equinox#725 https://github.com/patrick-kidger/equinox/issues/725 (the
reporter wanted `jax.jacfwd(model)` and `jax.jacrev(model)` to follow a custom rule and asked
whether to write a custom JVP or VJP). Written with custom_vjp, jacrev works but jacfwd raises:
custom_vjp functions do not support forward mode.
"""
import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

EVAL = {
    "id": "forward-mode/h2_eqx725_jacfwd_module_custom_vjp", "family": "forward-mode",
    "expect": "hazard", "source": "patrick-kidger/equinox#725",
    "url": "https://github.com/patrick-kidger/equinox/issues/725",
    "written_at": "2026-12-02", "written_at_commit": "57286d6bb1b3765b2fe45d8e346dffc0e0612443",
    "argnums": (0,), "heldout": True,
}
WEIGHT = np.array([1.5, -0.5, 2.0], np.float32)


@jax.custom_vjp  # eval: span
def rescaled_apply(model, x):  # eval: span
    return jnp.tanh(model.weight * x / model.scale)


def _rescaled_apply_fwd(model, x):
    y = rescaled_apply(model, x)
    return y, (model, x, y)


def _rescaled_apply_bwd(res, g):
    model, x, y = res
    slope = (1.0 - y ** 2) * g
    return eqx.tree_at(lambda m: m.weight, model, slope * x), slope * model.weight


rescaled_apply.defvjp(_rescaled_apply_fwd, _rescaled_apply_bwd)


class Rescaled(eqx.Module):
    weight: jax.Array
    scale: float = eqx.field(static=True)

    def __call__(self, x):
        return rescaled_apply(self, x)


def eval_fn(x):
    model = Rescaled(jnp.asarray(WEIGHT), 2.0)
    return model(x)


def eval_grad_reference(x):
    y = eval_reference(x)
    return ((1.0 - y ** 2) * WEIGHT.astype(np.float64),)


def eval_inputs():
    return (np.array([0.3, -0.6, 0.9], np.float32),)


def eval_reference(x):
    return np.tanh(WEIGHT.astype(np.float64) * np.asarray(x, np.float64) / 2.0)


def eval_custom():
    model = Rescaled(jnp.asarray(WEIGHT), 2.0)
    x = jnp.asarray(eval_inputs()[0])
    expected = np.diag(eval_grad_reference(x)[0])
    return {
        "jacrev_model": lambda: (jax.jacrev(model)(x), expected),
        "jacfwd_model": lambda: (jax.jacfwd(model)(x), expected),  # eval: span
    }
