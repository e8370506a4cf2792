"""registration hazard: the rules are registered on the plain implementation, not on the custom_vjp made from it.

Source: jax-ml/jax#2026 https://github.com/jax-ml/jax/pull/2026 (the custom_vjp introduction's
call form `f = custom_vjp(impl)` followed by `f.defvjp(fwd, bwd)`). Here `defvjp` is called on
the implementation function instead of the custom_vjp object; a plain function has no
`defvjp`, so importing the module raises AttributeError, and `smooth_abs` has no rules.
"""
import jax
import jax.numpy as jnp
import numpy as np

EVAL = {
    "id": "registration/pr2026_defvjp_on_undecorated_impl", "family": "registration", "expect": "hazard",
    "source": "jax-ml/jax#2026", "url": "https://github.com/jax-ml/jax/pull/2026",
    "written_at": "2026-12-02", "written_at_commit": "9e042dab056b2e5f1652c5b10417b37c94b25964",
    "argnums": (0,),
}


def _smooth_abs_impl(x):
    return jnp.sqrt(x * x + 1e-6)


smooth_abs = jax.custom_vjp(_smooth_abs_impl)  # eval: span


def smooth_abs_fwd(x):
    y = _smooth_abs_impl(x)
    return y, (x, y)


def smooth_abs_bwd(res, g):
    x, y = res
    return (g * x / y,)


_smooth_abs_impl.defvjp(smooth_abs_fwd, smooth_abs_bwd)  # eval: span


def eval_fn(x):
    return smooth_abs(x)


def eval_inputs():
    return (np.float32(-0.8),)


def eval_reference(x):
    return np.sqrt(np.float64(x) ** 2 + 1e-6)
