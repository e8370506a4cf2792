"""jax: a fixed point x* = f(a, x*) by iteration, differentiated implicitly; f is nondiff, bwd
solves the adjoint fixed point and returns a zero cotangent for the initial guess.

Adapted from jax-ml/jax:docs/hijax_custom_derivatives.py:525 (the FixedPoint primitive, as the
custom_vjp with nondiff_argnums=(0,) it replaces).
"""
import functools
from functools import partial
import jax
import jax.numpy as jnp
import numpy as np
from jax import lax
EVAL = {'id': 'mutation/nondiff_shift/jax_hijax_fixed_point', 'family': 'mutation', 'expect': 'unknown', 'library': 'jax', 'source': 'jax-ml/jax:docs/hijax_custom_derivatives.py:525', 'argnums': (0,), 'extra': ['grad_jit'], 'operator': 'nondiff_shift', 'base': 'jax_hijax_fixed_point'}

def _iterate(f, a, x_guess):

    def cond_fun(carry):
        x_prev, x = carry
        return jnp.max(jnp.abs(x_prev - x)) > 1e-06

    def body_fun(carry):
        _, x = carry
        return (x, f(a, x))
    _, x_star = lax.while_loop(cond_fun, body_fun, (x_guess, f(a, x_guess)))
    return x_star

@functools.partial(jax.custom_vjp, nondiff_argnums=(1,))
def fixed_point(f, a, x_guess):
    return _iterate(f, a, x_guess)

def fixed_point_fwd(f, a, x_guess):
    x_star = fixed_point(f, a, x_guess)
    return (x_star, (a, x_star))

def rev_iter(f, packed, u):
    a, x_star, x_star_bar = packed
    _, vjp_x = jax.vjp(lambda x: f(a, x), x_star)
    return x_star_bar + vjp_x(u)[0]

def fixed_point_bwd(f, res, x_star_bar):
    a, x_star = res
    _, vjp_a = jax.vjp(lambda a: f(a, x_star), a)
    a_bar, = vjp_a(_iterate(partial(rev_iter, f), (a, x_star, x_star_bar), x_star_bar))
    return (a_bar, jnp.zeros_like(x_star))
fixed_point.defvjp(fixed_point_fwd, fixed_point_bwd)

def newton_step(a, x):
    return 0.5 * (x + a / x)

def eval_fn(a):
    return fixed_point(newton_step, a, a)

def eval_inputs():
    return (np.array([2.0, 0.5, 3.0], np.float32),)

def eval_reference(a):
    return np.sqrt(np.asarray(a, np.float64))
