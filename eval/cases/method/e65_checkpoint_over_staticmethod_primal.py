"""method hazard: `@jax.checkpoint` added beneath a `@custom_jvp` creator, above `@staticmethod`.

Source: lenstronomy/JAXtronomy https://github.com/lenstronomy/JAXtronomy (`EPLMajorAxis` keeps a
`@custom_jvp @staticmethod @jit` stack in its class body). Rematerialising the primal by inserting
`@jax.checkpoint` right under the creator hands checkpoint the staticmethod object: "cannot
create weak reference to 'staticmethod' object" at the first call.
"""
import jax
import jax.numpy as jnp
import numpy as np

EVAL = {
    "id": "method/e65_checkpoint_over_staticmethod_primal", "family": "method",
    "expect": "hazard", "source": "lenstronomy/JAXtronomy", "url": "https://github.com/lenstronomy/JAXtronomy",
    "written_at": "2026-12-07", "written_at_commit": "7929f7c7a7cd3de25b6e41c92a8e1e8a1d3df93f",
    "argnums": (0,),
}


class Profile:
    @jax.custom_jvp
    @jax.checkpoint  # eval: span
    @staticmethod
    def evaluate(x):
        return jnp.sin(x) * x

    @evaluate.defjvp
    def evaluate_jvp(primals, tangents):
        (x,), (t,) = primals, tangents
        return jnp.sin(x) * x, (jnp.cos(x) * x + jnp.sin(x)) * t


def eval_fn(x):
    return Profile.evaluate(x)


def eval_inputs():
    return (np.array([0.2, -0.4, 1.1], np.float32),)


def eval_reference(x):
    x = np.asarray(x, np.float64)
    return np.sin(x) * x
