"""composition look-alike: grad of grad of jax.remat over a function that calls a custom_jvp twice.

Report: jax-ml/jax#4566 https://github.com/jax-ml/jax/issues/4566 (second derivatives through remat
dropped the custom_jvp rule, because remat's partial evaluation had no custom_jvp handling; fixed by
jax-ml/jax#4008). Here a rematerialised double soft-clip is differentiated twice.
"""
import jax
import jax.numpy as jnp
import numpy as np

EVAL = {
    "id": "composition/ok_h3_jax4566_grad_grad_remat_custom_jvp", "family": "composition",
    "expect": "ok", "source": "jax-ml/jax#4566", "url": "https://github.com/jax-ml/jax/issues/4566",
    "written_at": "2026-12-02", "written_at_commit": "211ce24975f5ee97618de3dc23050e26a289688a",
    "argnums": (0,), "heldout": True,
}


@jax.custom_jvp
def soft_clip(x):
    return jnp.tanh(x)


@soft_clip.defjvp
def _soft_clip_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    y = soft_clip(x)
    return y, (1.0 - y ** 2) * t


def twice(x):
    return soft_clip(soft_clip(x))


def eval_fn(x):
    return jax.grad(jax.remat(twice))(x)  # eval: span


def eval_inputs():
    return (np.float32(0.7),)


def eval_reference(x):
    x = float(x)
    inner = np.tanh(x)
    return np.asarray((1.0 - np.tanh(inner) ** 2) * (1.0 - inner ** 2))
