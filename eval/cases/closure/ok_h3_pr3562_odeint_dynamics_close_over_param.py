"""closure look-alike: odeint dynamics close over the differentiated parameter; grad works (odeint closure-converts).

Report: jax-ml/jax#3562 https://github.com/jax-ml/jax/pull/3562 ("allow closures for odeint dynamics
functions": odeint traces its dynamics to a jaxpr up front and passes the closed-over values to its
custom_vjp as explicit arguments, so grad of a jitted experiment whose model closes over x works).
Here the final level of a leaky tank is differentiated with respect to the leak rate the dynamics
close over.
"""
import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental.ode import odeint

EVAL = {
    "id": "closure/ok_h3_pr3562_odeint_dynamics_close_over_param", "family": "closure",
    "expect": "ok", "source": "jax-ml/jax#3562", "url": "https://github.com/jax-ml/jax/pull/3562",
    "written_at": "2026-12-02", "written_at_commit": "211ce24975f5ee97618de3dc23050e26a289688a",
    "argnums": (0,), "heldout": True,
}
TIMES = np.linspace(0.0, 2.0, 5).astype(np.float32)


@jax.jit
def final_level(leak):
    def tank(y, t):  # eval: span
        return -leak * y  # eval: span

    history = odeint(tank, jnp.float32(1.0), jnp.asarray(TIMES))
    return history[-1]


def eval_fn(leak):
    return final_level(leak)


def eval_inputs():
    return (np.float32(0.3),)


def eval_reference(leak):
    return np.asarray(np.exp(-float(leak) * 2.0))
