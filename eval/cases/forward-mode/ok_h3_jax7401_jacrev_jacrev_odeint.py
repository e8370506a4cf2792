"""forward-mode look-alike: the second derivative of an odeint loss taken as jacrev(jacrev(...)).

Report: jax-ml/jax#7401 https://github.com/jax-ml/jax/issues/7401 (hessian of a likelihood that runs
odeint failed because odeint's derivative is a custom_vjp; reverse-over-reverse never applies a jvp
to it, and is the workaround the thread's users reached for). Same decay-rate fit as the hazard,
differentiated twice in reverse mode (the `jacrev_jacrev` check); `eval_fn` is the log-likelihood itself.
"""
import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental.ode import odeint

EVAL = {
    "id": "forward-mode/ok_h3_jax7401_jacrev_jacrev_odeint", "family": "forward-mode",
    "expect": "ok", "source": "jax-ml/jax#7401", "url": "https://github.com/jax-ml/jax/issues/7401",
    "written_at": "2026-12-02", "written_at_commit": "211ce24975f5ee97618de3dc23050e26a289688a",
    "argnums": (0,), "heldout": True,
}
TIMES = np.linspace(0.0, 1.0, 6).astype(np.float32)
OBSERVED = np.exp(-0.7 * TIMES.astype(np.float64))


def decay(y, t, rate):
    return -rate * y


def log_prob(rate):
    traj = odeint(decay, jnp.float32(1.0), jnp.asarray(TIMES), rate)
    return -0.5 * jnp.sum((traj - OBSERVED) ** 2)


def eval_fn(rate):
    return log_prob(rate)


def eval_inputs():
    return (np.float32(0.4),)


def _lp(rate):
    return -0.5 * np.sum((np.exp(-rate * TIMES.astype(np.float64)) - OBSERVED) ** 2)


def eval_reference(rate):
    return np.asarray(_lp(float(rate)))


def eval_custom():
    def curvature():
        r, h = 0.4, 1e-3
        got = jax.jacrev(jax.jacrev(log_prob))(jnp.float32(r))  # eval: span
        return got, (_lp(r + h) - 2 * _lp(r) + _lp(r - h)) / h ** 2

    return {"jacrev_jacrev": curvature}
