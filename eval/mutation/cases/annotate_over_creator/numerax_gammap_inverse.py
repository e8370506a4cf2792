"""numerax (statistical and numerical functions for JAX, juehang): `gammap_inverse(p, a)`, the
inverse of the regularized incomplete gamma function in `p` (quantiles of Gamma(a, 1)), a bare
`@jax.custom_jvp` whose primal runs Halley's method in a `lax.while_loop` over a tuple state
`(x, step, iteration)`, the first and second derivatives of the objective taken with nested
`jax.grad`, from the Numerical Recipes initial guess (Wilson-Hilferty for a > 1). The rule,
registered by the decorator `@gammap_inverse.defjvp` on `gammap_inverse_jvp(primals,
tangents)`, unpacks `p, a = primals` and `p_dot, _ = tangents` -- the shape parameter's tangent
is dropped on purpose ("ignore a derivatives"), so only `p` is differentiated -- recomputes the
primal by calling the custom function, and returns `x, dx_dp * p_dot` with `dx_dp = 1 /
grad(gammainc(a, .))(x)` (implicit function theorem), the derivative floored away from zero.
The caller is numerax's `chi2.ppf(q, df, loc=0, scale=1)`: the four arguments broadcast and
flattened, `jax.vmap` of the scalar helper `_vectorized_gammap_inverse(q, df) =
gammap_inverse(q, df / 2)`, then `loc + scale * 2 * x`, reshaped. Differentiated in the
probabilities, the location and the scale; the degrees of freedom stay fixed (the rule has no
derivative for them).

Adapted from juehang/numerax:src/numerax/special/_gamma.py:12 (`gammap_inverse` and
`gammap_inverse_jvp`, :183; commit 464dc96) and src/numerax/stats/chi2.py:25 (`ppf`, with the
helper at :20). Changed: the long docstrings are shortened; `jnp.real(...)` around the initial
guess and the `jaxtyping` annotations are left out.
"""
import jax
import jax.numpy as jnp
import jax.scipy.special as special
import numpy as np
import scipy.stats
import jax.profiler
EVAL = {'id': 'mutation/annotate_over_creator/numerax_gammap_inverse', 'family': 'mutation', 'expect': 'unknown', 'library': 'numerax', 'source': 'juehang/numerax:src/numerax/special/_gamma.py:12', 'argnums': (0, 2, 3), 'extra': ['jvp', 'jacfwd'], 'operator': 'annotate_over_creator', 'base': 'numerax_gammap_inverse'}
_DTYPE = jnp.float64 if jax.config.jax_enable_x64 else jnp.float32
TINY = jnp.finfo(_DTYPE).smallest_normal
EPS = jnp.finfo(_DTYPE).eps

@jax.profiler.annotate_function
@jax.custom_jvp
def gammap_inverse(p, a):
    """x such that gammainc(a, x) = p (quantiles of Gamma(a, 1)), by Halley's method."""

    def objective(x):
        """F(x) = gammainc(a, x) - p"""
        return special.gammainc(a, x) - p

    def initial_guess(u_val, a_val):

        def large_a_guess():
            pp = jnp.where(u_val < 0.5, u_val, 1.0 - u_val)
            t = jnp.sqrt(-2.0 * jnp.log(pp))
            x = (2.30753 + t * 0.27061) / (1.0 + t * (0.99229 + t * 0.04481)) - t
            x = jnp.where(u_val < 0.5, -x, x)
            return jnp.fmax(0.001, a_val * (1.0 - 1.0 / (9.0 * a_val) - x / (3.0 * jnp.sqrt(a_val))) ** 3)

        def small_a_guess():
            t = 1.0 - a_val * (0.253 + a_val * 0.12)
            return jnp.where(u_val < t, (u_val / t) ** (1.0 / a_val), 1.0 - jnp.log(1.0 - (u_val - t) / (1.0 - t)))
        return jnp.where(a_val > 1.0, large_a_guess(), small_a_guess())
    f = objective
    df_dx = jax.grad(objective)
    d2f_dx2 = jax.grad(df_dx)
    x = initial_guess(p, a)

    def cond_fn(state):
        x, step, iteration = state
        return (jnp.abs(step) > EPS * jnp.abs(x)) & (iteration < 12)

    def body_fn(state):
        x, _, iteration = state
        f_val = f(x)
        df_val = df_dx(x)
        d2f_val = d2f_dx2(x)
        numerator = 2 * f_val * df_val
        denominator = 2 * df_val ** 2 - f_val * d2f_val
        denominator = jnp.where(jnp.abs(denominator) < TINY, jnp.sign(denominator) * TINY, denominator)
        step = numerator / denominator
        x_new = jnp.fmax(x - step, TINY)
        return (x_new, step, iteration + 1)
    initial_state = (x, jnp.inf, 0)
    final_state = jax.lax.while_loop(cond_fn, body_fn, initial_state)
    x = final_state[0]
    return x

@gammap_inverse.defjvp
def gammap_inverse_jvp(primals, tangents):
    """Implicit function theorem on gammainc(a, x) - p = 0: dx/dp = 1 / (d/dx gammainc(a, x))."""
    p, a = primals
    p_dot, _ = tangents
    x = gammap_inverse(p, a)

    def gammainc_x(x_val):
        return special.gammainc(a, x_val)
    dgammainc_dx = jax.grad(gammainc_x)(x)
    dgammainc_dx = jnp.where(jnp.abs(dgammainc_dx) < TINY, jnp.sign(dgammainc_dx) * TINY, dgammainc_dx)
    dx_dp = 1.0 / dgammainc_dx
    x_dot = dx_dp * p_dot
    return (x, x_dot)

def _vectorized_gammap_inverse(q_flat, df_flat):
    """Helper vectorizing gammap_inverse over the degrees of freedom."""
    return gammap_inverse(q_flat, df_flat / 2.0)

def ppf(q, df, loc=0, scale=1):
    """Chi-squared percent point function (inverse CDF), location-scale family."""
    q = jnp.asarray(q)
    degrees_freedom = jnp.asarray(df)
    loc = jnp.asarray(loc)
    scale = jnp.asarray(scale)
    orig_shape = jnp.broadcast_shapes(q.shape, degrees_freedom.shape, loc.shape, scale.shape)
    q_flat = jnp.broadcast_to(q, orig_shape).flatten()
    df_flat = jnp.broadcast_to(degrees_freedom, orig_shape).flatten()
    loc_flat = jnp.broadcast_to(loc, orig_shape).flatten()
    scale_flat = jnp.broadcast_to(scale, orig_shape).flatten()
    result_flat = jax.vmap(_vectorized_gammap_inverse)(q_flat, df_flat)
    result = loc_flat + scale_flat * 2.0 * result_flat
    return result.reshape(orig_shape)

def eval_fn(q, df, loc, scale):
    return ppf(q, df, loc=loc, scale=scale)

def eval_inputs():
    q = np.array([[0.1, 0.35, 0.5], [0.62, 0.8, 0.93]], np.float32)
    df = np.array([3.0, 5.0, 8.0], np.float32)
    return (q, df, np.float32(0.5), np.float32(1.7))

def eval_reference(q, df, loc, scale):
    q64 = np.asarray(q, np.float64)
    return float(loc) + float(scale) * scipy.stats.chi2.ppf(q64, np.asarray(df, np.float64))
