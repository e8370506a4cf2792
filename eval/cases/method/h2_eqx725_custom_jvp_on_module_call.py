"""method hazard: jax.custom_jvp decorates an equinox Module's __call__.

Report: patrick-kidger/equinox#725 https://github.com/patrick-kidger/equinox/issues/725 (a
wrapper Module that rescales its input wanted its forward-mode derivative to be the inner model's
Jacobian at the rescaled point, and tried to define the rule on the Module itself). A custom_jvp
object is not a descriptor, so calling the module does not bind `self`: the call fails.
"""
import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

EVAL = {
    "id": "method/h2_eqx725_custom_jvp_on_module_call", "family": "method", "expect": "hazard",
    "source": "patrick-kidger/equinox#725", "url": "https://github.com/patrick-kidger/equinox/issues/725",
    "written_at": "2026-12-02", "written_at_commit": "57286d6bb1b3765b2fe45d8e346dffc0e0612443",
    "argnums": (0,), "extra": ["jacfwd"], "heldout": True,
}
WEIGHT = np.array([1.5, -0.5, 2.0], np.float32)


class Rescaled(eqx.Module):
    weight: jax.Array
    scale: float = eqx.field(static=True)

    @jax.custom_jvp  # eval: span
    def __call__(self, x):  # eval: span
        return jnp.tanh(self.weight * x / self.scale)

    @__call__.defjvp
    def _call_jvp(primals, tangents):
        (model, x), (_, dx) = primals, tangents
        y = model(x)
        return y, (1.0 - y ** 2) * model.weight * dx


def eval_fn(x):
    model = Rescaled(jnp.asarray(WEIGHT), 2.0)
    return model(x)  # eval: span


def eval_inputs():
    return (np.array([0.3, -0.6, 0.9], np.float32),)


def eval_reference(x):
    return np.tanh(WEIGHT.astype(np.float64) * np.asarray(x, np.float64) / 2.0)


def eval_grad_reference(x):
    y = eval_reference(x)
    return ((1.0 - y ** 2) * WEIGHT.astype(np.float64),)
