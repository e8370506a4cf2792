"""composition hazard: a custom_vjp function wrapped in checkify and then jit, differentiated in reverse mode.

Report: jax-ml/jax#35871 https://github.com/jax-ml/jax/pull/35871 (vjp(jit(checkify(f))) of a
custom_vjp f failed with a "weird error" while the same without jit worked; the maintainers chose to
let checkify ignore custom_vjp functions rather than fix the composition). Here a stable log-cosh
with a custom_vjp is checkified for float errors and jitted by the caller.
"""
import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental.checkify import checkify, float_checks

EVAL = {
    "id": "composition/h3_pr35871_jit_of_checkify_of_custom_vjp", "family": "composition",
    "expect": "hazard", "source": "jax-ml/jax#35871", "url": "https://github.com/jax-ml/jax/pull/35871",
    "written_at": "2026-12-02", "written_at_commit": "211ce24975f5ee97618de3dc23050e26a289688a",
    "argnums": (0,), "heldout": True,
}


@jax.custom_vjp
def log_cosh(x):
    return jnp.logaddexp(x, -x) - jnp.log(2.0)


def _log_cosh_fwd(x):
    return log_cosh(x), jnp.tanh(x)


def _log_cosh_bwd(t, g):
    return (t * g,)


log_cosh.defvjp(_log_cosh_fwd, _log_cosh_bwd)

checked_log_cosh = jax.jit(checkify(log_cosh, errors=float_checks))  # eval: span


def eval_fn(x):
    err, y = checked_log_cosh(x)
    return jnp.sum(y)


def eval_inputs():
    return (np.array([0.3, -1.2, 2.5], np.float32),)


def eval_reference(x):
    return np.asarray(np.sum(np.log(np.cosh(np.asarray(x, np.float64)))))
