"""registration look-alike: the rules are registered by a setup function the module calls at import.

Source: jax-ml/jax#2026 https://github.com/jax-ml/jax/pull/2026 (one `defvjp` call per custom_vjp
function). Some code bases gather the registrations in a function run once at import; the
custom_vjp is registered before any call, so every transformation works.
"""
import jax
import jax.numpy as jnp
import numpy as np

EVAL = {
    "id": "registration/ok_defvjp_in_setup_function", "family": "registration", "expect": "ok",
    "source": "jax-ml/jax#2026", "url": "https://github.com/jax-ml/jax/pull/2026",
    "written_at": "2026-12-02", "written_at_commit": "9e042dab056b2e5f1652c5b10417b37c94b25964",
    "argnums": (0,),
}


@jax.custom_vjp
def softplus(x):
    return jnp.logaddexp(x, 0.0)


def softplus_fwd(x):
    return softplus(x), x


def softplus_bwd(x, g):
    return (g * jax.nn.sigmoid(x),)


def _register_rules():
    softplus.defvjp(softplus_fwd, softplus_bwd)


_register_rules()


def eval_fn(x):
    return softplus(x)


def eval_inputs():
    return (np.float32(0.3),)


def eval_reference(x):
    return np.logaddexp(np.float64(x), 0.0)
