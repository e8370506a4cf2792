"""forward-mode look-alike: the JAX docs' custom_jvp log1pexp under jvp, jacfwd and hessian.

Source: JAX docs, "Custom derivative rules for Python code", the numerically stable log1pexp
example (https://jax.readthedocs.io/en/latest/notebooks/Custom_derivative_rules_for_Python_code.html).
custom_jvp supports forward and reverse mode.
"""
import jax
import jax.numpy as jnp
import numpy as np

EVAL = {
    "id": "forward-mode/ok_docs_custom_jvp_forward", "family": "forward-mode", "expect": "ok",
    "source": "jax docs: custom derivative rules",
    "url": "https://jax.readthedocs.io/en/latest/notebooks/Custom_derivative_rules_for_Python_code.html",
    "written_at": "2026-12-01", "written_at_commit": "66aa237f5176449a9711e6278e47349128c8731b",
    "argnums": (0,), "extra": ["jvp", "jacfwd", "hessian"],
}


@jax.custom_jvp
def log1pexp(x):  # eval: span
    return jnp.log1p(jnp.exp(x))


@log1pexp.defjvp
def log1pexp_jvp(primals, tangents):
    (x,), (x_dot,) = primals, tangents
    return log1pexp(x), x_dot * (1.0 - 1.0 / (1.0 + jnp.exp(x)))


def eval_fn(x):
    return log1pexp(x)


def eval_inputs():
    return (np.float32(0.4),)


def eval_reference(x):
    return np.log1p(np.exp(np.float64(x)))
