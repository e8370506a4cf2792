"""structure hazard: a quantising custom_vjp returns an integer array, and the caller pulls back a float cotangent.

Report: jax-ml/jax#18931 https://github.com/jax-ml/jax/issues/18931 ("Untie dtype of tensor and
dtype of its cotangent gradient"): a straight-through quantiser `x.astype(int8)` with a bwd that
passes the cotangent through; `jax.vjp` rejects the float cotangent because an integer output's
cotangent type is float0 (clearer message since jax-ml/jax#19538). The issue is open, but the
oracle finds the pullback accepted in JAX 0.10.2: a look-alike by label.
"""
import jax
import jax.numpy as jnp
import numpy as np

EVAL = {
    "id": "structure/jax18931_int_output_float_cotangent", "family": "structure", "expect": "hazard",
    "source": "jax-ml/jax#18931", "url": "https://github.com/jax-ml/jax/issues/18931",
    "written_at": "2026-12-01", "written_at_commit": "3a32060410af927ec9a792df959a3558c6e4408f",
    "argnums": (),
}


@jax.custom_vjp
def quantise(x):  # eval: span
    return jnp.round(x).astype(jnp.int8)  # eval: span


def quantise_fwd(x):
    return quantise(x), None


def quantise_bwd(_, g):
    return (g,)  # straight-through


quantise.defvjp(quantise_fwd, quantise_bwd)


def eval_fn(x):
    return quantise(x)


def eval_inputs():
    return (np.array([1.2, -3.7], np.float32),)


def eval_reference(x):
    return np.round(np.asarray(x, np.float64))


def eval_custom():
    def straight_through_pullback():
        _, pullback = jax.vjp(quantise, jnp.array([1.2, -3.7]))
        return pullback(jnp.array([1.0, 2.0]))[0], np.array([1.0, 2.0])

    return {"vjp_float_cotangent": straight_through_pullback}
