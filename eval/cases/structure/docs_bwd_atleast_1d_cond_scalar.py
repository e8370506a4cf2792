"""structure hazard: bwd returns the cotangent of a scalar input through `jnp.atleast_1d`.

Source: the `jax.custom_vjp` API page https://docs.jax.dev/en/latest/_autosummary/jax.custom_vjp.html
(bwd returns one cotangent per input, with the input's shape). A log-survival whose primal picks
its branch with `lax.cond(x > 0, ...)` (a scalar predicate, so `x` is a scalar) and whose bwd
"makes sure it returns an array": JAX's check compares `float32[1]` with `float32[]` and raises.
"""
import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

EVAL = {
    "id": "structure/docs_bwd_atleast_1d_cond_scalar", "family": "structure", "expect": "hazard",
    "source": "jax docs: jax.custom_vjp", "url": "https://docs.jax.dev/en/latest/_autosummary/jax.custom_vjp.html",
    "written_at": "2026-12-07", "written_at_commit": "95017652b41e6b2ff5624389643a0f4b83835c4e",
    "argnums": (0,),
}


@jax.custom_vjp
def log_survival(x):
    return lax.cond(x > 0, lambda: -x, lambda: jnp.zeros_like(x))


def log_survival_fwd(x):
    return log_survival(x), x


def log_survival_bwd(x, g):
    return (jnp.atleast_1d(jnp.where(x > 0, -g, 0.0)),)  # eval: span


log_survival.defvjp(log_survival_fwd, log_survival_bwd)


def eval_fn(x):
    return log_survival(x)


def eval_inputs():
    return (np.float32(0.7),)


def eval_reference(x):
    x = np.float64(x)
    return -x if x > 0 else 0.0
