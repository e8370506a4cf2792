"""closure hazard: an implicitly differentiated solver whose objective closes over the parameter being differentiated.

Report: google/jaxopt#31 https://github.com/google/jaxopt/issues/31 (OptaxSolver with implicit
differentiation: the objective closed over `param_for_grad` and grad raised CustomVJPException).
The maintainers' answer: pass the parameter through `run(*args)` instead of closing over it.
Here: a fixed-point solver with a custom_vjp (implicit function theorem), the objective a closure.
"""
from functools import partial

import jax
import jax.numpy as jnp
import numpy as np

EVAL = {
    "id": "closure/jaxopt31_objective_closure", "family": "closure", "expect": "hazard",
    "source": "google/jaxopt#31", "url": "https://github.com/google/jaxopt/issues/31",
    "written_at": "2026-12-01", "written_at_commit": "66aa237f5176449a9711e6278e47349128c8731b",
    "argnums": (0,), "extra": ["grad_jit"],
}


@partial(jax.custom_vjp, nondiff_argnums=(0,))  # eval: span
def minimise(grad_fn, x0):  # eval: span
    return jax.lax.fori_loop(0, 60, lambda _, x: x - 0.2 * grad_fn(x), x0)


def minimise_fwd(grad_fn, x0):
    x = minimise(grad_fn, x0)
    return x, x


def minimise_bwd(grad_fn, x_star, g):
    # the solution does not depend on x0; its dependence on hyperparameters is lost
    return (jnp.zeros_like(x_star),)


minimise.defvjp(minimise_fwd, minimise_bwd)


def eval_fn(theta):
    objective = lambda x: jnp.sum((x - theta) ** 2) + 0.5 * jnp.sum(x ** 2)  # eval: span
    return minimise(jax.grad(objective), jnp.zeros(2))  # eval: span


def eval_inputs():
    return (np.array([1.0, -2.0], np.float32),)


def eval_reference(theta):
    return np.asarray(theta, np.float64) * (2.0 / 3.0)
