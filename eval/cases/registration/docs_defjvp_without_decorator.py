"""registration hazard: `@f.defjvp` on a function that was never made a custom_jvp.

Source: the "Custom derivative rules for Python code" page of the JAX docs
(https://jax.readthedocs.io/en/latest/notebooks/Custom_derivative_rules_for_Python_code.html),
whose examples decorate the primal with `@jax.custom_jvp` and then the rule with `@f.defjvp`;
copying the rule without the primal's decorator leaves a plain function, which has no `defjvp`:
the module fails at import with AttributeError.
"""
import jax.numpy as jnp
import numpy as np

EVAL = {
    "id": "registration/docs_defjvp_without_decorator", "family": "registration", "expect": "hazard",
    "source": "jax docs: Custom derivative rules for Python code",
    "url": "https://jax.readthedocs.io/en/latest/notebooks/Custom_derivative_rules_for_Python_code.html",
    "written_at": "2026-12-01", "written_at_commit": "c10c45a8c2ee52022265ee289b536960fd004d90",
    "argnums": (0,),
}


def log1pexp(x):  # eval: span
    return jnp.log(1.0 + jnp.exp(x))


@log1pexp.defjvp  # eval: span
def log1pexp_jvp(primals, tangents):
    (x,), (x_dot,) = primals, tangents
    return log1pexp(x), x_dot * (1.0 - 1.0 / (1.0 + jnp.exp(x)))


def eval_fn(x):
    return log1pexp(x)


def eval_inputs():
    return (np.float32(0.5),)


def eval_reference(x):
    return np.log1p(np.exp(np.float64(x)))
