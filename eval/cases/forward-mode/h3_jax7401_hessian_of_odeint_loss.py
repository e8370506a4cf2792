"""forward-mode hazard: jax.hessian of a loss that integrates an ODE with odeint (a custom_vjp inside).

Report: jax-ml/jax#7401 https://github.com/jax-ml/jax/issues/7401 (a package fitting a carbon-cycle
model computed jit(hessian(log_prob)) for a Laplace/variational approximation; log_prob runs
jax.experimental.ode.odeint, whose derivative is a custom_vjp, and the hessian failed with "can't
apply forward-mode autodiff (jvp) to a custom_vjp function"). Here a decay-rate fit is
differentiated twice with jax.hessian, which is jacfwd over jacrev.
"""
import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental.ode import odeint

EVAL = {
    "id": "forward-mode/h3_jax7401_hessian_of_odeint_loss", "family": "forward-mode",
    "expect": "hazard", "source": "jax-ml/jax#7401", "url": "https://github.com/jax-ml/jax/issues/7401",
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
    return jax.hessian(log_prob)(rate)  # eval: span


def eval_inputs():
    return (np.float32(0.4),)


def _lp(rate):
    return -0.5 * np.sum((np.exp(-rate * TIMES.astype(np.float64)) - OBSERVED) ** 2)


def eval_reference(rate):
    r, h = float(rate), 1e-3
    return np.asarray((_lp(r + h) - 2 * _lp(r) + _lp(r - h)) / h ** 2)
