"""radiax: the roots of a quadratic `p[0] x**2 + p[1] x + p[2]` (leading coefficient not zero),
`_roots_quadratic_no_zeros(p, /)`, as a bare `@jax.custom_jvp` over one positional-only array
parameter; the primal is a numerically stable formula (the coefficients divided by a
`stop_gradient` scale, `q = -(b +- sqrt(disc)) / 2` of the larger magnitude, roots `q / a` and
`c / q`, `jax.lax.cond` on `q != 0` with operand-less branches). The rule, registered with
`@_roots_quadratic_no_zeros.defjvp`, unpacks `(p,), (dp,) = primals, tangents`, recomputes the
roots with the implementation (not the custom function), differentiates the root equation
implicitly (the tangent projected onto the coefficients' scale-free directions first) and masks
non-finite roots with `jnp.where`; it returns `r, jnp.where(finite, dr, zeros)`.

Adapted from lmmp-puc-rio/radiax:src/radiax/__init__.py:76 (commit f7f0f47). Shortened: the
`snap_near_double` option of the stable formula is dropped (it only applies to the library's
cubic deflation); the type annotations are kept. The caller is the library's real-coefficient
path (`_roots_no_zeros_real` for `p.size == 3`) under `jax.jit`, over a quadratic whose
coefficients come from two arrays, summing the roots weighted.
"""
import functools
import jax
import jax.numpy as jnp
import numpy
EVAL = {'id': 'mutation/lax_map_caller/radiax_quadratic_roots', 'family': 'mutation', 'expect': 'unknown', 'library': 'radiax', 'source': 'lmmp-puc-rio/radiax:src/radiax/__init__.py:76', 'argnums': (0, 1), 'extra': ['jvp', 'jacfwd'], 'operator': 'lax_map_caller', 'base': 'radiax_quadratic_roots'}

def _roots_quadratic_stable(p: jax.Array, /) -> jax.Array:
    scale = jax.lax.stop_gradient(jnp.max(jnp.abs(p)))
    p = p / scale
    a, b, c = p
    discriminant = b * b - 4 * a * c
    sqrt_discriminant = jnp.sqrt(discriminant)
    q1 = -0.5 * (b + sqrt_discriminant)
    q2 = -0.5 * (b - sqrt_discriminant)
    q = jnp.where(jnp.abs(q1) >= jnp.abs(q2), q1, q2)

    def general() -> jax.Array:
        return jnp.array([q / a, c / q])

    def zero_q() -> jax.Array:
        root = -b / (2 * a)
        return jnp.array([root, root])
    return jax.lax.cond(q != 0, general, zero_q)

def _roots_quadratic_no_zeros_impl(p: jax.Array, /) -> jax.Array:
    return _roots_quadratic_stable(p)

def _projective_tangent(p: jax.Array, dp: jax.Array, /) -> jax.Array:
    return dp - dp[0] / p[0] * p

def _quadratic_jvp(p: jax.Array, dp: jax.Array, r: jax.Array, /) -> jax.Array:
    dp = _projective_tangent(p, dp)
    polynomial_tangent = (dp[0] * r + dp[1]) * r + dp[2]
    derivative = 2 * p[0] * r + p[1]
    return -polynomial_tangent / derivative

@jax.custom_jvp
def _roots_quadratic_no_zeros(p: jax.Array, /) -> jax.Array:
    return _roots_quadratic_no_zeros_impl(p)

@_roots_quadratic_no_zeros.defjvp
def _roots_quadratic_no_zeros_jvp(primals: tuple[jax.Array], tangents: tuple[jax.Array]) -> tuple[jax.Array, jax.Array]:
    (p,), (dp,) = (primals, tangents)
    r = _roots_quadratic_no_zeros_impl(p)
    finite = jnp.isfinite(r)
    safe_r = jnp.where(finite, r, jnp.ones_like(r))
    dr = _quadratic_jvp(p, dp, safe_r)
    return (r, jnp.where(finite, dr, jnp.zeros_like(dr)))

@jax.jit
def _roots_no_zeros_real(p: jax.Array, /) -> jax.Array:
    match p.size:
        case 3:
            return _roots_quadratic_no_zeros(p)
        case _:
            raise NotImplementedError('this module keeps the quadratic case only')

def eval_fn(c, w):
    p = jnp.array([c[0], c[1] * w[0], c[2] - w[1]])
    r = _roots_no_zeros_real(p)
    return r * jnp.array([1.0, 2.0]) + r ** 2 * w[0]

def eval_inputs():
    return (numpy.array([1.5, -2.0, -3.0], numpy.float32), numpy.array([1.2, 0.5], numpy.float32))

def eval_reference(c, w):
    c, w = (numpy.asarray(c, numpy.float64), numpy.asarray(w, numpy.float64))
    p = numpy.array([c[0], c[1] * w[0], c[2] - w[1]])
    p = p / numpy.max(numpy.abs(p))
    a, b, cc = p
    s = numpy.sqrt(b * b - 4 * a * cc)
    q1, q2 = (-0.5 * (b + s), -0.5 * (b - s))
    q = q1 if abs(q1) >= abs(q2) else q2
    r = numpy.array([q / a, cc / q])
    return r * numpy.array([1.0, 2.0]) + r ** 2 * w[0]

def lax_map_usage(*args):
    g = jax.grad(lambda v: jnp.sum(eval_fn(*[v if i == 0 else a for i, a in enumerate(args)])))
    x = jnp.asarray(args[0])
    return jax.lax.map(g, jnp.stack([x, x * 0.9, x * 1.1]))

def lax_map_usage_expected(*args):
    g = jax.grad(lambda v: jnp.sum(eval_fn(*[v if i == 0 else a for i, a in enumerate(args)])))
    x = jnp.asarray(args[0])
    return jnp.stack([g(x), g(x * 0.9), g(x * 1.1)])

def eval_custom():
    args = tuple(eval_inputs())
    return {'lax_map_usage': lambda: (lax_map_usage(*args), lax_map_usage_expected(*args))}
