"""structure hazard: lax.custom_root with has_aux=True whose solver returns an integer iteration count as aux.

Report: jax-ml/jax#24295 https://github.com/jax-ml/jax/issues/24295 (a Newton root finder built on
lax.custom_root returned (root, (residual, n_steps)) with has_aux=True; from JAX 0.4.34 on,
differentiating it failed because custom_root's internal custom_jvp gave the integer aux an
integer tangent where float0 is expected). Here a square root by Newton's method reports its step
count.
"""
import jax
import jax.numpy as jnp
import numpy as np

EVAL = {
    "id": "structure/h5_jax24295_custom_root_integer_aux", "family": "structure",
    "expect": "hazard", "source": "jax-ml/jax#24295", "url": "https://github.com/jax-ml/jax/issues/24295",
    "written_at": "2026-12-02", "written_at_commit": "2f27280778b10986f4436c94bc630dd525ce7747",
    "argnums": (0,), "heldout": True,
}

MAXITER = 30


def _newton(resfun, guess):
    def cond(state):
        x, k = state
        return (k < MAXITER) & (jnp.abs(resfun(x)) > 1e-6)

    def body(state):
        x, k = state
        return x - resfun(x) / jax.grad(resfun)(x), k + 1

    x, steps = jax.lax.while_loop(cond, body, (guess, 0))
    return x, steps  # eval: span


def _tangent_solve(g, y):
    return y / jax.grad(g)(jnp.ones_like(y))


def newton_sqrt(a):
    root, _steps = jax.lax.custom_root(  # eval: span
        lambda x: x * x - a, jnp.float32(1.0), _newton, _tangent_solve, has_aux=True)  # eval: span
    return root


def eval_fn(a):
    return newton_sqrt(a)


def eval_inputs():
    return (np.float32(2.0),)


def eval_reference(a):
    return np.asarray(np.sqrt(float(a)))
