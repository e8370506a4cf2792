"""composition hazard: a custom_vjp rebound over a custom_jvp of the same name.

Report: jax-ml/jax#3996 https://github.com/jax-ml/jax/issues/3996 ("Defining both custom_jvp and
custom_vjp"): the reporter wrapped a custom_jvp function in custom_vjp under the same name to get
both rules; jacrev worked and jacfwd raised "can't apply forward-mode autodiff (jvp) to a
custom_vjp function" (the answer: not possible, the outer custom_vjp hides the jvp rule).
"""
import jax
import jax.numpy as jnp
import numpy as np

EVAL = {
    "id": "composition/jax3996_vjp_rebound_over_jvp", "family": "composition", "expect": "hazard",
    "source": "jax-ml/jax#3996", "url": "https://github.com/jax-ml/jax/issues/3996",
    "written_at": "2026-12-01", "written_at_commit": "c10c45a8c2ee52022265ee289b536960fd004d90",
    "argnums": (0,), "extra": ["jvp", "jacfwd"],
}


def tagged(x):
    return jnp.tanh(x)


tagged = jax.custom_jvp(tagged)
tagged.defjvp(lambda primals, tangents: (jnp.tanh(primals[0]), (1 - jnp.tanh(primals[0]) ** 2) * tangents[0]))

tagged = jax.custom_vjp(tagged)  # eval: span
tagged.defvjp(lambda x: (jnp.tanh(x), x), lambda x, g: ((1 - jnp.tanh(x) ** 2) * g,))


def eval_fn(x):
    return tagged(x)


def eval_inputs():
    return (np.float32(0.4),)


def eval_reference(x):
    return np.tanh(np.float64(x))
