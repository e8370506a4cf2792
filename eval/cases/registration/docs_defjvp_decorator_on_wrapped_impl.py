"""registration hazard: `@impl.defjvp` on the plain function a call-form custom_jvp wraps.

Source: the JAX docs' "Custom derivative rules for Python code" (the decorator form
`@f.defjvp`) and jax-ml/jax#2026 https://github.com/jax-ml/jax/pull/2026 (the call form
`f = custom_jvp(impl)`). Here the jvp rule is decorated with the implementation's name instead of
the custom_jvp's: a plain function has no `defjvp`, so importing the module raises AttributeError.
"""
import jax
import jax.numpy as jnp
import numpy as np

EVAL = {
    "id": "registration/docs_defjvp_decorator_on_wrapped_impl", "family": "registration", "expect": "hazard",
    "source": "jax-ml/jax#2026", "url": "https://github.com/jax-ml/jax/pull/2026",
    "written_at": "2026-12-02", "written_at_commit": "115b9c4617e4f87b47d1ecf56abc6b2b19d66835",
    "argnums": (0,),
}


def _log1pexp(x):
    return jnp.log1p(jnp.exp(x))


log1pexp = jax.custom_jvp(_log1pexp)  # eval: span


@_log1pexp.defjvp  # eval: span
def log1pexp_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    return log1pexp(x), t * jax.nn.sigmoid(x)


def eval_fn(x):
    return log1pexp(x)


def eval_inputs():
    return (np.float32(0.4),)


def eval_reference(x):
    return np.log1p(np.exp(np.float64(x)))
