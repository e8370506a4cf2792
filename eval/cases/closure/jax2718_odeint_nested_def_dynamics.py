"""closure hazard: a hand-written RK4 solver takes its dynamics in a custom_vjp nondiff slot; the caller's nested `def` dynamics reads the jitted parameter.

Report: jax-ml/jax#2718 https://github.com/jax-ml/jax/issues/2718 ("AssertionError when taking grad
of odeint with outer scope variable": a jitted `experiment(x)` defined `def model(y, t)` reading
`x` and handed it to odeint; value_and_grad over it failed). JAX's own odeint now closure-converts
its dynamics (PR #3562); a user's solver with the dynamics in nondiff_argnums does not.
"""
from functools import partial

import jax
import jax.numpy as jnp
import numpy as np

EVAL = {
    "id": "closure/jax2718_odeint_nested_def_dynamics", "family": "closure", "expect": "hazard",
    "source": "jax-ml/jax#2718", "url": "https://github.com/jax-ml/jax/issues/2718",
    "written_at": "2026-12-02", "written_at_commit": "9e042dab056b2e5f1652c5b10417b37c94b25964",
    "argnums": (0,), "extra": ["grad_jit", "value_and_grad"],
}
TIMES = np.linspace(0.0, 1.0, 11).astype(np.float32)


@partial(jax.custom_vjp, nondiff_argnums=(0,))  # eval: span
def rk4(dynamics, y0, ts):  # eval: span
    def step(y, t_pair):
        t0, t1 = t_pair
        h = t1 - t0
        k1 = dynamics(y, t0)
        k2 = dynamics(y + 0.5 * h * k1, t0 + 0.5 * h)
        k3 = dynamics(y + 0.5 * h * k2, t0 + 0.5 * h)
        k4 = dynamics(y + h * k3, t1)
        y = y + h / 6.0 * (k1 + 2 * k2 + 2 * k3 + k4)
        return y, y
    _, ys = jax.lax.scan(step, y0, (ts[:-1], ts[1:]))
    return ys


def rk4_fwd(dynamics, y0, ts):
    ys = rk4(dynamics, y0, ts)
    return ys, (y0, ts)


def rk4_bwd(dynamics, res, g):
    y0, ts = res
    _, pullback = jax.vjp(lambda y: rk4.fun(dynamics, y, ts), y0)
    (y0_bar,) = pullback(g)
    return y0_bar, jnp.zeros_like(ts)


rk4.defvjp(rk4_fwd, rk4_bwd)


@jax.jit
def experiment(decay):
    def model(y, t):  # eval: span
        return -decay * y

    history = rk4(model, jnp.float32(1.0), jnp.asarray(TIMES))  # eval: span
    return history[-1]


def eval_fn(decay):
    return experiment(decay)


def eval_inputs():
    return (np.float32(0.7),)


def eval_reference(decay):
    # RK4 on y' = -k y multiplies y by a fixed polynomial in (h k) each step
    h = 0.1
    z = -np.float64(decay) * h
    factor = 1 + z + z ** 2 / 2 + z ** 3 / 6 + z ** 4 / 24
    return factor ** 10
