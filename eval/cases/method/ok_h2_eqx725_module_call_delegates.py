"""method look-alike: the Module's __call__ delegates to a module-level custom_jvp function.

Report: patrick-kidger/equinox#725 https://github.com/patrick-kidger/equinox/issues/725 (the
advice: put the custom rule on a free function taking the Module as an argument). The rule gives
the inner model's slope at the rescaled point, as the reporter wanted, under jvp and jacfwd.
"""
import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

EVAL = {
    "id": "method/ok_h2_eqx725_module_call_delegates", "family": "method", "expect": "ok",
    "source": "patrick-kidger/equinox#725", "url": "https://github.com/patrick-kidger/equinox/issues/725",
    "written_at": "2026-12-02", "written_at_commit": "57286d6bb1b3765b2fe45d8e346dffc0e0612443",
    "argnums": (0,), "extra": ["jacfwd", "jvp"], "heldout": True,
}
WEIGHT = np.array([1.5, -0.5, 2.0], np.float32)


@jax.custom_jvp
def rescaled_apply(model, x):
    return jnp.tanh(model.weight * x / model.scale)


@rescaled_apply.defjvp
def _rescaled_apply_jvp(primals, tangents):
    (model, x), (dmodel, dx) = primals, tangents
    y = rescaled_apply(model, x)
    return y, (1.0 - y ** 2) * (model.weight * dx + dmodel.weight * x)


class Rescaled(eqx.Module):
    weight: jax.Array
    scale: float = eqx.field(static=True)

    def __call__(self, x):  # eval: span
        return rescaled_apply(self, x)


def eval_fn(x):
    model = Rescaled(jnp.asarray(WEIGHT), 2.0)
    return model(x)


def eval_inputs():
    return (np.array([0.3, -0.6, 0.9], np.float32),)


def eval_reference(x):
    return np.tanh(WEIGHT.astype(np.float64) * np.asarray(x, np.float64) / 2.0)


def eval_grad_reference(x):
    y = eval_reference(x)
    return ((1.0 - y ** 2) * WEIGHT.astype(np.float64),)
