"""static-in-diff hazard: a Python function passed to a custom_vjp in a differentiable position.

Report: jax-ml/jax#1366 https://github.com/jax-ml/jax/issues/1366 (a custom gradient taking the
function to differentiate as its first argument: "<type 'function'> is not a valid Jax type";
for custom_vjp the answer is nondiff_argnums).
"""
import jax
import jax.numpy as jnp
import numpy as np

EVAL = {
    "id": "static-in-diff/jax1366_function_in_diff_slot", "family": "static-in-diff", "expect": "hazard",
    "source": "jax-ml/jax#1366", "url": "https://github.com/jax-ml/jax/issues/1366",
    "written_at": "2026-12-01", "written_at_commit": "d41130493ac77d17107ede6ec0079fa57141d150",
    "argnums": (0,),
}


@jax.custom_vjp
def doubled_grad(func, x):
    return func(x)


def doubled_grad_fwd(func, x):
    out, pullback = jax.vjp(func, x)
    return out, pullback


def doubled_grad_bwd(pullback, g):
    (dx,) = pullback(g)
    return None, 2.0 * dx


doubled_grad.defvjp(doubled_grad_fwd, doubled_grad_bwd)


def eval_fn(x):
    return doubled_grad(jnp.sin, x)  # eval: span


def eval_inputs():
    return (np.float32(0.7),)


def eval_reference(x):
    return np.sin(np.float64(x))


def eval_grad_reference(x):
    return (2.0 * np.cos(np.float64(x)),)
