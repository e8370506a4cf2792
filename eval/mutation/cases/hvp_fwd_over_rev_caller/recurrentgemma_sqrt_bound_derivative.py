"""RecurrentGemma (Griffin's RG-LRU layer): `sqrt_bound_derivative(x, max_gradient)`, a square root
whose gradient is clipped at `max_gradient` (to prevent NaNs in bfloat16 training), as
`@functools.partial(jax.custom_vjp, nondiff_argnums=(1,))` stacked over a second decorator, the
library's runtime type-checking decorator `@at.typed`, which also decorates both rules. The primal
`del`s the bound and returns `jnp.sqrt(x)`; the forward rule keeps the nondiff bound in its
signature as an unused `_` parameter and saves the 1-tuple `(x,)`; the backward rule takes the
bound first, `(max_gradient, res, g)`, unpacks `(x,) = res`, raises `x` to the smallest value
whose derivative is within the bound, and returns the pullback of `jax.vjp(jnp.sqrt, x_pre)`
applied to `g` (the 1-tuple it gives). Registered with the statement
`sqrt_bound_derivative.defvjp(stable_sqrt_fwd, stable_sqrt_bwd)`; the layer calls it with a
Python int bound, `sqrt_bound_derivative(1 - a_squared, 1000)`.

Adapted from google-deepmind/recurrentgemma:recurrentgemma/jax/layers.py:184 (commit 2efa84d),
with the caller of recurrentgemma/jax/layers.py:452 (`RGLRU.__call__`, the real case) and
`typed` of recurrentgemma/jax/array_typing.py:27. Changed: `typed` is jaxtyping's `jaxtyped` with
typeguard's checker in the library (typeguard is not installed here): here a `functools.wraps`
decorator of the same shape that runs the function under a `jax.named_scope` of its name, the
type check dropped (with the annotations it reads); the layer's input and gate projections
(`BlockDiagonalLinear`) and complex branch are dropped: the caller takes the gate pre-activations directly, keeps the reset at segment
starts and runs the linear recurrence `h_t = a_t h_{t-1} + x_t` with `lax.scan` (the library's
`scan.linear_scan`). The bound is not reached at these inputs (`1 - a**2` stays far above
`1 / (4 * 1000**2)`), so the rule is the true derivative there.
"""
import functools
import jax
import jax.numpy as jnp
import numpy as np
EVAL = {'id': 'mutation/hvp_fwd_over_rev_caller/recurrentgemma_sqrt_bound_derivative', 'family': 'mutation', 'expect': 'unknown', 'library': 'recurrentgemma', 'source': 'google-deepmind/recurrentgemma:recurrentgemma/jax/layers.py:184', 'argnums': (0, 1, 2), 'extra': ['grad_jit'], 'operator': 'hvp_fwd_over_rev_caller', 'base': 'recurrentgemma_sqrt_bound_derivative'}

def typed(function):
    """Runs `function` under a named scope of its own (the library's decorator type-checks)."""

    @functools.wraps(function)
    def scoped(*args, **kwargs):
        with jax.named_scope(function.__name__):
            return function(*args, **kwargs)
    return scoped

@functools.partial(jax.custom_vjp, nondiff_argnums=(1,))
@typed
def sqrt_bound_derivative(x, max_gradient):
    """Computes a square root with a gradient clipped at `max_gradient`."""
    del max_gradient
    return jnp.sqrt(x)

@typed
def stable_sqrt_fwd(x, _):
    return (jnp.sqrt(x), (x,))

@typed
def stable_sqrt_bwd(max_gradient, res, g):
    x, = res
    x_pre = jnp.maximum(x, 1 / (4 * max_gradient ** 2))
    return jax.vjp(jnp.sqrt, x_pre)[1](g)
sqrt_bound_derivative.defvjp(stable_sqrt_fwd, stable_sqrt_bwd)
SEGMENT_POS = np.array([0, 1, 2, 0, 1], np.int32)

def rg_lru(x, gate_x_logits, gate_a_logits, a_real_param):
    gate_x = jax.nn.sigmoid(gate_x_logits)
    gate_a = jax.nn.sigmoid(gate_a_logits)
    log_a = -8.0 * gate_a * jax.nn.softplus(a_real_param)
    a, a_squared = (jnp.exp(log_a), jnp.exp(2 * log_a))
    gated_x = x * gate_x
    reset = (SEGMENT_POS == 0).astype(a.dtype)
    multiplier = sqrt_bound_derivative(1 - a_squared, 1000)
    multiplier = reset[..., None] + (1 - reset)[..., None] * multiplier
    normalized_x = gated_x * multiplier.astype(x.dtype)

    def step(h, inputs):
        a_t, x_t = inputs
        h = a_t * h + x_t
        return (h, h)
    _, y = jax.lax.scan(step, jnp.zeros_like(x[0]), (a * (1 - reset[..., None]), normalized_x))
    return y
GATE_X_LOGITS = np.array([[0.3, -0.2, 0.8], [1.1, 0.4, -0.6], [-0.5, 0.9, 0.2], [0.7, -1.0, 0.5], [0.1, 0.6, -0.3]], np.float32)

def eval_fn(x, gate_a_logits, a_real_param):
    return rg_lru(x, GATE_X_LOGITS, gate_a_logits, a_real_param)

def eval_inputs():
    x = np.array([[0.5, -1.2, 0.8], [1.4, 0.3, -0.7], [-0.6, 0.9, 1.1], [0.2, -0.4, 0.6], [1.0, 0.7, -0.9]], np.float32)
    gate_a_logits = np.array([[-0.4, 0.6, 0.1], [0.8, -0.3, -1.1], [0.2, 0.5, -0.6], [-0.9, 0.3, 0.7], [0.4, -0.2, 0.9]], np.float32)
    a_real_param = np.array([-1.5, -0.8, -2.2], np.float32)
    return (x, gate_a_logits, a_real_param)

def eval_reference(x, gate_a_logits, a_real_param):
    x, ga, ar = (np.asarray(v, np.float64) for v in (x, gate_a_logits, a_real_param))
    sig = lambda z: 1.0 / (1.0 + np.exp(-z))
    softplus = np.log1p(np.exp(ar))
    log_a = -8.0 * sig(ga) * softplus
    a = np.exp(log_a)
    reset = (SEGMENT_POS == 0).astype(np.float64)[:, None]
    mult = reset + (1 - reset) * np.sqrt(1 - np.exp(2 * log_a))
    nx = x * sig(GATE_X_LOGITS.astype(np.float64)) * mult
    a = a * (1 - reset)
    h = np.zeros(x.shape[1])
    out = []
    for t in range(x.shape[0]):
        h = a[t] * h + nx[t]
        out.append(h)
    return np.stack(out)

def hvp_usage(*args):

    def loss(v):
        return jnp.sum(eval_fn(*[v if i == 0 else a for i, a in enumerate(args)]))
    x = jnp.asarray(args[0])
    _, hv = jax.jvp(jax.grad(loss), (x,), (jnp.ones_like(x),))
    return hv

def eval_custom():
    args = tuple(eval_inputs())
    return {'hvp_usage': lambda: (hvp_usage(*args), None)[1]}
