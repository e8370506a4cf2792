"""composition look-alike: a custom_jvp wrapped around a custom_vjp (the other order).

Report: jax-ml/jax#3996 https://github.com/jax-ml/jax/issues/3996 (both rules wanted; with the
custom_jvp outside, forward and reverse mode both use the jvp rule and work on JAX 0.10.2).
"""
import jax
import jax.numpy as jnp
import numpy as np

EVAL = {
    "id": "composition/ok_jax3996_jvp_over_vjp", "family": "composition", "expect": "ok",
    "source": "jax-ml/jax#3996", "url": "https://github.com/jax-ml/jax/issues/3996",
    "written_at": "2026-12-01", "written_at_commit": "c10c45a8c2ee52022265ee289b536960fd004d90",
    "argnums": (0,), "extra": ["jvp", "jacfwd"],
}


def _tanh(x):
    return jnp.tanh(x)


inner = jax.custom_vjp(_tanh)
inner.defvjp(lambda x: (jnp.tanh(x), x), lambda x, g: ((1 - jnp.tanh(x) ** 2) * g,))
tagged = jax.custom_jvp(inner)
tagged.defjvp(lambda primals, tangents: (jnp.tanh(primals[0]), (1 - jnp.tanh(primals[0]) ** 2) * tangents[0]))


def eval_fn(x):
    return tagged(x)


def eval_inputs():
    return (np.float32(0.4),)


def eval_reference(x):
    return np.tanh(np.float64(x))
