"""logbesselk: `wrap_log_bessel_k`, a decorator factory that turns a function computing
log K_v(x) (the modified Bessel function of the second kind) into a custom_vjp: the user's function
is wrapped with `functools.wraps` into `wrapped_func` (|v| taken, a nested `lax.cond` returning NaN
for x < 0 and +inf at x == 0), the custom function is made in call form, `custom_func =
jax.custom_vjp(wrapped_func)`, and registered with `custom_func.defvjp(fwd, bwd)` after fwd and
bwd are defined; fwd calls the raw function and saves `(v, x, out)`; bwd calls the custom function
itself at order v - 1 (the recurrence dK_v/dx = -K_{v-1} - (v/x) K_v) and returns `None, dx * g`:
no gradient for the order v, on purpose.

Adapted from tk2lab/logbesselk:src/logbesselk/jax/wrap.py:25 (commit 0ecc1a0; the custom_vjp at
:50), applied as the library applies it, `@wrap_log_bessel_k` on the log-K function
(src/logbesselk/jax/ica.py:29). The library's log-K (an integration with adaptive bins) is replaced
by a fixed trapezoid rule in log space over the integral representation
K_v(x) = int_0^inf exp(-x cosh t) cosh(v t) dt (the library's `log_integrate` of the same
integrand, src/logbesselk/jax/integral.py); its `.math` helpers (`fabs`, `exp`, `nan`, `inf`,
`result_type`) are spelled with jax.numpy. The caller maps the scalar function over arrays with
`jax.vmap`, as the library's README does.
"""
import functools
import jax
import jax.lax as lax
import jax.numpy as jnp
import numpy as np
import scipy.special
EVAL = {'id': 'mutation/bwd_trailing_comma/logbesselk_log_bessel_k', 'family': 'mutation', 'expect': 'unknown', 'library': 'logbesselk', 'source': 'tk2lab/logbesselk:src/logbesselk/jax/wrap.py:25', 'argnums': (1,), 'extra': ['grad_jit'], 'operator': 'bwd_trailing_comma', 'base': 'logbesselk_log_bessel_k'}
fabs = jnp.abs
exp = jnp.exp
nan = jnp.nan
inf = jnp.inf

def result_type(*args):
    return jnp.result_type(*args, jnp.float32).type

def log_cosh(x):
    x = fabs(x)
    return x + jnp.log1p(jnp.exp(-2 * x)) - jnp.log(2.0)

def log_integrate(func, t_max=8.0, bins=2048):
    """log of the trapezoid rule for int_0^t_max exp(func(t)) dt."""
    t = jnp.linspace(0.0, t_max, bins + 1)
    w = jnp.full((bins + 1,), t_max / bins).at[0].multiply(0.5).at[-1].multiply(0.5)
    return jax.scipy.special.logsumexp(func(t) + jnp.log(w))

def wrap_log_bessel_k(func):

    @functools.wraps(func)
    def wrapped_func(v, x):
        dtype = result_type(v, x)
        v = fabs(v)
        return lax.cond(x > 0, lambda: func(v, x), lambda: lax.cond(x < 0, lambda: dtype(nan), lambda: dtype(inf)))

    def fwd(v, x):
        out = func(v, x)
        return (out, (v, x, out))

    def bwd(res, g):
        v, x, out = res
        outm1 = custom_func(v - 1, x)
        dx = -v / x - exp(outm1 - out)
        return ((None, dx * g),)
    custom_func = jax.custom_vjp(wrapped_func)
    custom_func.defvjp(fwd, bwd)
    return custom_func

@wrap_log_bessel_k
def log_bessel_k(v, x):
    """log K_v(x) from its integral representation."""
    return log_integrate(lambda t: -x * jnp.cosh(t) + log_cosh(v * t))

def eval_fn(v, x):
    return jax.vmap(log_bessel_k)(v, x)

def eval_inputs():
    return (np.array([0.5, 1.0, 2.5], np.float32), np.array([0.7, 1.5, 3.0], np.float32))

def eval_reference(v, x):
    return np.log(scipy.special.kv(np.asarray(v, np.float64), np.asarray(x, np.float64)))
