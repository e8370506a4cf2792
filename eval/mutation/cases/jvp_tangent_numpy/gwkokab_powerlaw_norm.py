"""GWKokab: the log normalisation constant of a doubly truncated power law,
`log Z(alpha, low, high)`, as a bare `@jax.custom_jvp` over three differentiated arrays whose
primal picks between the generic closed form and the `alpha == -1` limit with `jnp.where` (the
generic branch gets a safe `alpha`, 0, where the limit is taken). The rule, registered with
`@doubly_truncated_power_law_log_norm_constant.defjvp`, unpacks `alpha, low, high = primals` and
the three tangents, recomputes the primal by calling the custom function on `*primals`, and
returns `alpha_tangent * alpha_t + low_tangent * low_t + high_tangent * high_t`; at `alpha ==
-1` the alpha tangent is the mean of the generic expression either side of the singularity.

Adapted from gwkokab/gwkokab:src/gwkokab/models/utils/_doubletruncpowerlaw.py:14 (commit
e25ee5a9). Shortened: the docstrings dropped, inner helpers renamed and the branch tangents
written with `jnp.where` as the library does; the caller is the library's
`doubly_truncated_power_law_log_prob` (`alpha * log(x) - log Z`), over three power laws at
once (no `alpha` at exactly -1 among the inputs: the library's float32 finite difference there
is its own approximation).
"""
import functools
import jax
import jax.numpy as jnp
import numpy
EVAL = {'id': 'mutation/jvp_tangent_numpy/gwkokab_powerlaw_norm', 'family': 'mutation', 'expect': 'unknown', 'library': 'gwkokab', 'source': 'gwkokab/gwkokab:src/gwkokab/models/utils/_doubletruncpowerlaw.py:14', 'argnums': (0, 1, 2, 3), 'extra': ['jvp', 'jacfwd'], 'operator': 'jvp_tangent_numpy', 'base': 'gwkokab_powerlaw_norm'}

@jax.custom_jvp
def doubly_truncated_power_law_log_norm_constant(alpha, low, high):
    neq_neg1_mask = jnp.not_equal(alpha, -1.0)
    neq_neg1_alpha = jnp.where(neq_neg1_mask, alpha, 0.0)

    def generic():
        one_more_alpha = 1.0 + neq_neg1_alpha
        return jnp.log((jnp.power(high, one_more_alpha) - jnp.power(low, one_more_alpha)) / one_more_alpha)

    def at_neg1():
        return jnp.log(jnp.log(high) - jnp.log(low))
    return jnp.where(neq_neg1_mask, generic(), at_neg1())

@doubly_truncated_power_law_log_norm_constant.defjvp
def doubly_truncated_power_law_log_norm_constant_jvp(primals, tangents):
    alpha, low, high = primals
    alpha_t, low_t, high_t = tangents
    primal_out = doubly_truncated_power_law_log_norm_constant(*primals)
    log_low = jnp.log(low)
    log_high = jnp.log(high)
    delta_eq_neg1 = 1e-05
    neq_neg1_mask = jnp.not_equal(alpha, -1.0)
    neq_neg1_alpha = jnp.where(neq_neg1_mask, alpha, 0.0)

    def alpha_tangent_generic(a):
        one_more_alpha = 1.0 + a
        low_pow = jnp.power(low, one_more_alpha)
        high_pow = jnp.power(high, one_more_alpha)
        return -jnp.reciprocal(one_more_alpha) + (high_pow * log_high - low_pow * log_low) / (high_pow - low_pow)
    alpha_tangent = jnp.where(neq_neg1_mask, alpha_tangent_generic(neq_neg1_alpha), (alpha_tangent_generic(alpha - delta_eq_neg1) + alpha_tangent_generic(alpha + delta_eq_neg1)) * 0.5)
    one_more_alpha = 1.0 + neq_neg1_alpha
    low_pow = jnp.power(low, one_more_alpha)
    high_pow = jnp.power(high, one_more_alpha)
    change = high_pow - low_pow
    low_tangent_generic = -one_more_alpha * jnp.power(low, neq_neg1_alpha) / change
    high_tangent_generic = one_more_alpha * jnp.power(high, neq_neg1_alpha) / change
    change_log = log_high - log_low
    low_tangent_neg1 = -jnp.reciprocal(low * change_log)
    high_tangent_neg1 = jnp.reciprocal(high * change_log)
    low_tangent = jnp.where(neq_neg1_mask, low_tangent_generic, low_tangent_neg1)
    high_tangent = jnp.where(neq_neg1_mask, high_tangent_generic, high_tangent_neg1)
    tangent_out = alpha_tangent * alpha_t + low_tangent * low_t + high_tangent * high_t
    return (primal_out, numpy.asarray(tangent_out))

def doubly_truncated_power_law_log_prob(x, alpha, low, high):
    return alpha * jnp.log(x) - doubly_truncated_power_law_log_norm_constant(alpha, low, high)

def eval_fn(x, alpha, low, high):
    return doubly_truncated_power_law_log_prob(x, alpha, low, high)

def eval_inputs():
    x = numpy.array([2.5, 7.0, 40.0], numpy.float32)
    alpha = numpy.array([-2.3, 0.7, -0.4], numpy.float32)
    low = numpy.array([1.5, 3.0, 5.0], numpy.float32)
    high = numpy.array([9.0, 12.0, 80.0], numpy.float32)
    return (x, alpha, low, high)

def eval_reference(x, alpha, low, high):
    x, alpha, low, high = (numpy.asarray(a, numpy.float64) for a in (x, alpha, low, high))
    a1 = 1.0 + alpha
    log_z = numpy.log((high ** a1 - low ** a1) / a1)
    return alpha * numpy.log(x) - log_z
