"""closure hazard: a custom_jvp rule computes its slope with NumPy (`onp`) on the primal; the
rule is traced under grad, jit and vmap, and NumPy's conversion raises TracerArrayConversionError.

Source: census row E40 of docs/facts/jax-errors.md (jax-ml/jax#1142's NumPy-in-a-rule mistake),
written on branch census7 as a realistic edit of a correct softplus rule.
https://github.com/jax-ml/jax/issues/1142
"""
import jax
import jax.numpy as jnp
import numpy as np
import numpy as onp

EVAL = {
    "id": "closure/census7_numpy_in_jvp_rule", "family": "closure", "expect": "hazard",
    "source": "jax-ml/jax#1142", "url": "https://github.com/jax-ml/jax/issues/1142",
    "written_at": "2026-12-07", "written_at_commit": "89458f57b4bf127d8a4a969ec2e4ddf051aca0dd",
    "argnums": (0,),
}


@jax.custom_jvp
def softplus(x):
    return jnp.logaddexp(x, 0.0)


@softplus.defjvp
def softplus_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    slope = onp.exp(x) / (1.0 + onp.exp(x))  # eval: span
    return softplus(x), slope * t


def eval_fn(x):
    return softplus(x)


def eval_inputs():
    return (np.float32(0.4),)


def eval_reference(x):
    return np.logaddexp(np.float64(x), 0.0)
