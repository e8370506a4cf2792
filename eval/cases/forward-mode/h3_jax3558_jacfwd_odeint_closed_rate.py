"""forward-mode hazard: jax.jacfwd through odeint whose dynamics close over the differentiated rate.

Report: jax-ml/jax#3558 https://github.com/jax-ml/jax/issues/3558 (jacfwd of a sum over an odeint
trajectory, the dynamics a lambda closing over k; forward mode through odeint is unsupported and the
reporter expected an error; odeint now closure-converts its dynamics, so the closed-over k reaches
its custom_vjp and jacfwd raises). Here the sensitivity of a growth curve to its rate is taken with
jacfwd, as the reporter did.
"""
import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental.ode import odeint

EVAL = {
    "id": "forward-mode/h3_jax3558_jacfwd_odeint_closed_rate", "family": "forward-mode",
    "expect": "hazard", "source": "jax-ml/jax#3558", "url": "https://github.com/jax-ml/jax/issues/3558",
    "written_at": "2026-12-02", "written_at_commit": "211ce24975f5ee97618de3dc23050e26a289688a",
    "argnums": (0,), "heldout": True,
}
TIMES = np.linspace(0.0, 1.0, 8).astype(np.float32)


def total_growth(k):
    traj = odeint(lambda y, t: k * y, jnp.float32(1.0), jnp.asarray(TIMES))
    return traj.sum()


def eval_fn(k):
    return jax.jacfwd(total_growth)(k)  # eval: span


def eval_inputs():
    return (np.float32(0.8),)


def eval_reference(k):
    t = TIMES.astype(np.float64)
    return np.asarray(np.sum(t * np.exp(float(k) * t)))
