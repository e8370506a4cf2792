"""closure hazard: solver dynamics in a custom_vjp nondiff slot close over per-example noise drawn inside a vmap; the parameters go in explicitly, and grad runs outside the vmap.

Report: jax-ml/jax#2797 https://github.com/jax-ml/jax/issues/2797 ("grad of vmap of odeint with
rng-dependent dynamics gives tracer error": FFJORD-style dynamics closed over `eps =
random.normal(rng, ...)` while the parameters were passed through odeint's extra arguments;
removing any one of grad, vmap, odeint or the rng made it work). The noise is never differentiated.
"""
from functools import partial

import jax
import jax.numpy as jnp
import numpy as np

EVAL = {
    "id": "closure/jax2797_dynamics_closes_vmapped_noise", "family": "closure", "expect": "hazard",
    "source": "jax-ml/jax#2797", "url": "https://github.com/jax-ml/jax/issues/2797",
    "written_at": "2026-12-02", "written_at_commit": "9e042dab056b2e5f1652c5b10417b37c94b25964",
    "argnums": (0,), "extra": ["grad_jit"],
}
STEPS, DT = 10, 0.1


def _euler(dynamics, y0, params):
    return jax.lax.fori_loop(0, STEPS, lambda _, y: y + DT * dynamics(y, params), y0)


@partial(jax.custom_vjp, nondiff_argnums=(0,))  # eval: span
def integrate(dynamics, y0, params):  # eval: span
    return _euler(dynamics, y0, params)


def integrate_fwd(dynamics, y0, params):
    return _euler(dynamics, y0, params), (y0, params)


def integrate_bwd(dynamics, res, g):
    y0, params = res
    _, pullback = jax.vjp(lambda y, p: _euler(dynamics, y, p), y0, params)
    return pullback(g)


integrate.defvjp(integrate_fwd, integrate_bwd)


def log_density(params, x, key):
    eps = jax.random.normal(key, x.shape)  # eval: span

    def dynamics(y, p):  # eval: span
        return -p * y + eps

    return jnp.sum(integrate(dynamics, x, params))  # eval: span


def batch_density(params, data, keys):
    return jnp.mean(jax.vmap(log_density, in_axes=(None, 0, 0))(params, data, keys))


DATA = jnp.array([[0.5, -1.0], [1.5, 0.2], [-0.3, 0.8]], jnp.float32)
KEYS = jax.random.split(jax.random.PRNGKey(0), 3)


def eval_fn(params):
    return batch_density(params, DATA, KEYS)


def eval_inputs():
    return (np.float32(0.4),)


def eval_reference(params):
    p = np.float64(params)
    out = []
    for x, key in zip(np.asarray(DATA, np.float64), KEYS):
        eps = np.asarray(jax.random.normal(key, x.shape), np.float64)
        y = x
        for _ in range(STEPS):
            y = y + DT * (-p * y + eps)
        out.append(np.sum(y))
    return np.mean(out)
