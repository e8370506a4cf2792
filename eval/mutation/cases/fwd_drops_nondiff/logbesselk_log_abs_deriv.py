"""logbesselk: `wrap_log_abs_deriv_bessel_k`, a decorator factory that makes log|d^m/dv^m d^n/dx^n
K_v(x)| a custom_vjp whose derivative orders `m` and `n` are Python ints with defaults
(`wrapped_func(v, x, m: int = 0, n: int = 0)`, validated with a Python `if ... raise ValueError()`,
|v| taken, a three-level nested `lax.cond` for x < 0, x == 0 and odd m at v == 0). The custom function
is made in call form with `nondiff_argnums=(2, 3)`, `custom_func = jax.custom_vjp(wrapped_func,
nondiff_argnums=(2, 3))`; fwd calls the custom function itself and saves `(v, x, out)`; bwd takes
`(m, n, res, g)` and differentiates by raising an order, `custom_func(v, x, m + 1, n)` for v and
`custom_func(v, x, m, n + 1)` for x (the recurrence in x when m == n == 0), with a Python `&` of two
comparisons of the static orders. The caller passes the orders by keyword, `m=1, n=0`.

Adapted from tk2lab/logbesselk:src/logbesselk/jax/wrap.py:55 (commit 0ecc1a0; the custom_vjp at
:91), applied as the library applies it, `@wrap_log_abs_deriv_bessel_k` on the integral
(src/logbesselk/jax/integral.py:55). The library's adaptive integration is replaced by a fixed
trapezoid rule in log space over the same integrand, -x cosh t + log cosh(v t) (even m) or
log sinh(v t) (odd m) + m log t + n log cosh t; its `.math` helpers are spelled with jax.numpy.
The caller evaluates log dK_v(x)/dv (m=1) over arrays with `jax.vmap`.
"""
import functools
import jax
import jax.lax as lax
import jax.numpy as jnp
import numpy as np
import scipy.integrate
EVAL = {'id': 'mutation/fwd_drops_nondiff/logbesselk_log_abs_deriv', 'family': 'mutation', 'expect': 'unknown', 'library': 'logbesselk', 'source': 'tk2lab/logbesselk:src/logbesselk/jax/wrap.py:55', 'argnums': (0, 1), 'extra': ['grad_jit'], 'operator': 'fwd_drops_nondiff', 'base': 'logbesselk_log_abs_deriv'}
fabs = jnp.abs
exp = jnp.exp
sign = jnp.sign
nan = jnp.nan
inf = jnp.inf

def result_type(*args):
    return jnp.result_type(*args, jnp.float32).type

def log_cosh(x):
    x = fabs(x)
    return x + jnp.log1p(jnp.exp(-2 * x)) - jnp.log(2.0)

def log_sinh(x):
    return x + jnp.log1p(-jnp.exp(-2 * x)) - jnp.log(2.0)

def log_integrate(func, t_max=8.0, bins=2048):
    """log of the trapezoid rule for int_0^t_max exp(func(t)) dt."""
    t = jnp.linspace(0.0, t_max, bins + 1)
    w = jnp.full((bins + 1,), t_max / bins).at[0].multiply(0.5).at[-1].multiply(0.5)
    return jax.scipy.special.logsumexp(func(t) + jnp.log(w))

def wrap_log_abs_deriv_bessel_k(func):

    @functools.wraps(func)
    def wrapped_func(v, x, m: int=0, n: int=0):
        if m < 0:
            raise ValueError()
        if n < 0:
            raise ValueError()
        dtype = result_type(v, x)
        v = fabs(v)
        return lax.cond(x > 0 if m % 2 == 0 else (x > 0) & (v > 0), lambda: func(v, x, m, n), lambda: lax.cond(x < 0, lambda: dtype(nan), lambda: lax.cond(x == 0, lambda: dtype(inf), lambda: dtype(-inf))))

    def fwd(v, x):
        out = custom_func(v, x, m, n)
        return (out, (v, x, out))

    def bwd(m, n, res, g):
        v, x, out = res
        dv = sign(v) * exp(custom_func(v, x, m + 1, n) - out)
        if (m == 0) & (n == 0):
            dx = -v / x - exp(custom_func(v - 1, x) - out)
        else:
            dx = -exp(custom_func(v, x, m, n + 1) - out)
        return (dv * g, dx * g)
    custom_func = jax.custom_vjp(wrapped_func, nondiff_argnums=(2, 3))
    custom_func.defvjp(fwd, bwd)
    return custom_func

@wrap_log_abs_deriv_bessel_k
def log_abs_deriv_bessel_k(v, x, m: int=0, n: int=0):

    def func(t):
        out = -x * jnp.cosh(t)
        if m % 2 == 0:
            out += log_cosh(v * t)
        else:
            out += log_sinh(v * t)
        if m > 0:
            out += m * jnp.log(t)
        if n > 0:
            out += n * log_cosh(t)
        return out
    return log_integrate(func)

def eval_fn(v, x):
    return jax.vmap(lambda a, b: log_abs_deriv_bessel_k(a, b, m=1, n=0))(v, x)

def eval_inputs():
    return (np.array([0.6, 1.2, 2.0], np.float32), np.array([0.8, 1.4, 2.5], np.float32))

def eval_reference(v, x):
    v64, x64 = np.broadcast_arrays(np.asarray(v, np.float64), np.asarray(x, np.float64))
    out = np.empty(v64.shape)
    for i in np.ndindex(v64.shape):
        a, b = (float(v64[i]), float(x64[i]))
        val, _ = scipy.integrate.quad(lambda t: t * np.sinh(a * t) * np.exp(-b * np.cosh(t)), 0.0, 12.0, epsabs=0.0, epsrel=1e-12, limit=200)
        out[i] = np.log(val)
    return out
