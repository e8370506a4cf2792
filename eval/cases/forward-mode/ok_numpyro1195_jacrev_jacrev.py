"""forward-mode look-alike: the numpyro#1195 fix, the Hessian as jacrev(jacrev(loss)) through a custom_vjp.

Report: pyro-ppl/numpyro#1195 https://github.com/pyro-ppl/numpyro/issues/1195 (suggested edit
hessian(f) = jacrev(jacrev(f))); reverse-over-reverse works through custom_vjp.
"""
import jax
import jax.numpy as jnp
import numpy as np

EVAL = {
    "id": "forward-mode/ok_numpyro1195_jacrev_jacrev", "family": "forward-mode", "expect": "ok",
    "source": "pyro-ppl/numpyro#1195", "url": "https://github.com/pyro-ppl/numpyro/issues/1195",
    "written_at": "2026-12-01", "written_at_commit": "66aa237f5176449a9711e6278e47349128c8731b",
    "argnums": (0,),
}
T = np.linspace(0.0, 1.0, 4).astype(np.float32)
OBS = np.array([1.0, 0.8, 0.6, 0.5], np.float32)


@jax.custom_vjp
def decay_path(rate):  # eval: span
    return jnp.exp(-rate * T)


def decay_path_fwd(rate):
    y = decay_path(rate)
    return y, (rate, y)


def decay_path_bwd(res, g):
    rate, y = res
    return (jnp.sum(-T * jnp.exp(-rate * T) * g),)


decay_path.defvjp(decay_path_fwd, decay_path_bwd)


def eval_fn(rate):
    return 0.5 * jnp.sum((decay_path(rate) - OBS) ** 2)


def laplace_precision(rate):
    return jax.jacrev(jax.jacrev(eval_fn))(rate)


def eval_inputs():
    return (np.float32(0.9),)


def eval_reference(rate):
    return 0.5 * np.sum((np.exp(-np.float64(rate) * T) - OBS) ** 2)


def eval_custom():
    def precision():
        r = np.float64(0.9)
        h = 1e-4
        fd = (eval_reference(r + h) - 2 * eval_reference(r) + eval_reference(r - h)) / h ** 2
        return laplace_precision(np.float32(0.9)), fd

    return {"jacrev_jacrev": precision}
