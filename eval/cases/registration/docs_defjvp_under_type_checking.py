"""registration hazard: the `defjvp` registration placed under `if TYPE_CHECKING:` with the typing imports.

Source: the JAX docs' custom_jvp walkthrough https://docs.jax.dev/en/latest/notebooks/Custom_derivative_rules_for_Python_code.html
(`f.defjvp(f_jvp)`). A block meant for imports only type checkers read is false at run time, so
the rule is never registered and every call raises AttributeError.
"""
from typing import TYPE_CHECKING

import jax
import jax.numpy as jnp
import numpy as np

EVAL = {
    "id": "registration/docs_defjvp_under_type_checking", "family": "registration", "expect": "hazard",
    "source": "jax docs: Custom derivative rules", "url": "https://docs.jax.dev/en/latest/notebooks/Custom_derivative_rules_for_Python_code.html",
    "written_at": "2026-12-07", "written_at_commit": "95017652b41e6b2ff5624389643a0f4b83835c4e",
    "argnums": (0,),
    "extra": ["jvp"],
}


@jax.custom_jvp
def log1pexp(x):
    return jnp.log1p(jnp.exp(x))


def log1pexp_jvp(primals, tangents):
    (x,), (x_dot,) = primals, tangents
    return log1pexp(x), x_dot * (1.0 - 1.0 / (1.0 + jnp.exp(x)))


if TYPE_CHECKING:
    from collections.abc import Callable  # noqa: F401
    log1pexp.defjvp(log1pexp_jvp)  # eval: span


def eval_fn(x):
    return log1pexp(x)


def eval_inputs():
    return (np.array([0.5, 2.0, 10.0], np.float32),)


def eval_reference(x):
    return np.log1p(np.exp(np.asarray(x, np.float64)))
