"""silent-wrong hazard: a bwd that is itself a custom_vjp returns None for the residuals it received.

Report: jax-ml/jax#21220 https://github.com/jax-ml/jax/issues/21220 ("Nested custom vjps do not
correctly propagate cotangents"): reverse over reverse through nested custom_vjps gave a zero
second derivative because the inner bwd returned None for the saved values.
"""
import jax
import jax.numpy as jnp
import numpy as np

EVAL = {
    "id": "silent-wrong/jax21220_nested_bwd_none_residual", "family": "silent-wrong", "expect": "hazard",
    "source": "jax-ml/jax#21220", "url": "https://github.com/jax-ml/jax/issues/21220",
    "written_at": "2026-12-01", "written_at_commit": "51cd759b3dcfbfcb9895d145cf90562a1a6708f2",
    "argnums": (0,),
}


@jax.custom_vjp
def quartic(x):
    return x ** 4


def quartic_fwd(x):
    return quartic(x), (x,)


@jax.custom_vjp
def quartic_bwd(saved, ct):
    (x,) = saved
    return (4.0 * x ** 3 * ct,)


def quartic_bwd_fwd(saved, ct):
    return quartic_bwd(saved, ct), saved


def quartic_bwd_bwd(saved, dd):
    (x,) = saved
    (dd,) = dd
    return (None,), 4.0 * x ** 3 * dd  # eval: span


quartic_bwd.defvjp(quartic_bwd_fwd, quartic_bwd_bwd)
quartic.defvjp(quartic_fwd, quartic_bwd)


def eval_fn(x):
    return quartic(x)


def eval_inputs():
    return (np.float32(1.5),)


def eval_reference(x):
    return np.float64(x) ** 4


def eval_custom():
    def second_derivative():
        x = np.float32(1.5)
        return jax.grad(jax.grad(quartic))(x), 12.0 * np.float64(x) ** 2
    return {"grad_grad": second_derivative}
