"""structure hazard: bwd returns a bare cotangent instead of a 1-tuple.

Report: jax-ml/jax#5571 https://github.com/jax-ml/jax/pull/5571 ("Improve error message for
custom_vjp ... when backward function does not return a tuple. I ran into this myself, I think it
may be a common mistake"). Still a TypeError under every reverse-mode transformation.
"""
import jax
import jax.numpy as jnp
import numpy as np

EVAL = {
    "id": "structure/jax5571_bwd_bare_cotangent", "family": "structure", "expect": "hazard",
    "source": "jax-ml/jax#5571", "url": "https://github.com/jax-ml/jax/pull/5571",
    "written_at": "2026-12-01", "written_at_commit": "66aa237f5176449a9711e6278e47349128c8731b",
    "argnums": (0,),
}


@jax.custom_vjp
def softplus(x):
    return jnp.log1p(jnp.exp(x))


def softplus_fwd(x):
    return softplus(x), x


def softplus_bwd(x, g):
    return g * jax.nn.sigmoid(x)  # eval: span


softplus.defvjp(softplus_fwd, softplus_bwd)


def eval_fn(x):
    return softplus(x)


def eval_inputs():
    return (np.array([-1.0, 0.5], np.float32),)


def eval_reference(x):
    return np.log1p(np.exp(np.asarray(x, np.float64)))
