"""composition look-alike: jax.checkpoint over a custom_vjp whose fwd calls the custom_vjp function itself.

Report: jax-ml/jax#38914 https://github.com/jax-ml/jax/pull/38914 (under the opt-in remat3 and
custom_vjp3 flags, grad(remat(f)) recursed forever when f's fwd rule called f for the primal, the
conventional pattern; the PR fixed it). With JAX's default flags the same code is fine. Here a
checkpointed block uses a custom_vjp softplus written the conventional way.
"""
import jax
import jax.numpy as jnp
import numpy as np

EVAL = {
    "id": "composition/ok_h6_pr38914_remat_over_custom_vjp_fwd_calls_primal", "family": "composition",
    "expect": "ok", "source": "jax-ml/jax#38914", "url": "https://github.com/jax-ml/jax/pull/38914",
    "written_at": "2026-12-02", "written_at_commit": "62a0272af379a14644eeb31ed58eba40374c4cfb",
    "argnums": (0,), "extra": ["grad_jit", "value_and_grad"], "heldout": True,
}


@jax.custom_vjp
def softplus(x):
    return jnp.logaddexp(x, 0.0)


def _softplus_fwd(x):
    return softplus(x), x  # eval: span


def _softplus_bwd(x, g):
    return (g * jax.nn.sigmoid(x),)


softplus.defvjp(_softplus_fwd, _softplus_bwd)


@jax.checkpoint  # eval: span
def block(x):
    return softplus(jnp.sin(x)) * 2.0


def eval_fn(x):
    return jnp.sum(block(x))


def eval_inputs():
    return (np.array([0.4, -1.1, 2.3], np.float32),)


def eval_reference(x):
    s = np.sin(np.asarray(x, np.float64))
    return np.asarray(np.sum(2.0 * np.logaddexp(s, 0.0)))
