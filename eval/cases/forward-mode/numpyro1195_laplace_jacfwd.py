"""forward-mode hazard: a Laplace approximation takes jacfwd(jacrev(loss)) of a model that goes through a custom_vjp.

Report: pyro-ppl/numpyro#1195 https://github.com/pyro-ppl/numpyro/issues/1195 (hessian of a
likelihood through odeint, which has a custom_vjp: "can't apply forward-mode autodiff (jvp) to a
custom_vjp function"; the suggested fix is jacrev(jacrev(f))).
"""
import jax
import jax.numpy as jnp
import numpy as np

EVAL = {
    "id": "forward-mode/numpyro1195_laplace_jacfwd", "family": "forward-mode", "expect": "hazard",
    "source": "pyro-ppl/numpyro#1195", "url": "https://github.com/pyro-ppl/numpyro/issues/1195",
    "written_at": "2026-12-01", "written_at_commit": "66aa237f5176449a9711e6278e47349128c8731b",
    "argnums": (0,), "extra": ["hessian"],
}


@jax.custom_vjp
def decay_path(rate):
    return jnp.exp(-rate * jnp.linspace(0.0, 1.0, 4))


def decay_path_fwd(rate):
    y = decay_path(rate)
    return y, y


def decay_path_bwd(y, g):
    return (jnp.sum(-jnp.linspace(0.0, 1.0, 4) * y * g),)


decay_path.defvjp(decay_path_fwd, decay_path_bwd)
OBS = np.array([1.0, 0.8, 0.6, 0.5], np.float32)


def eval_fn(rate):
    return 0.5 * jnp.sum((decay_path(rate) - OBS) ** 2)


def laplace_precision(rate):
    return jax.jacfwd(jax.jacrev(eval_fn))(rate)  # eval: span


def eval_inputs():
    return (np.float32(0.9),)


def eval_reference(rate):
    t = np.linspace(0.0, 1.0, 4)
    return 0.5 * np.sum((np.exp(-np.float64(rate) * t) - OBS) ** 2)
