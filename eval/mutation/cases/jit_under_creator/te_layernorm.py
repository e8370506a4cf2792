"""TransformerEngine (JAX): the LayerNorm/RMSNorm wrapper `_layernorm(x, gamma, beta, layernorm_type,
zero_centered_gamma=False, epsilon=1e-6)` as `@partial(jax.custom_vjp, nondiff_argnums=(3, 4, 5))`:
a string, a bool and a float, two of them defaulted, in nondiff_argnums; the primal calls the fwd
rule and drops its residuals; fwd branches on the string and saves `(x, mu, rsigma, gamma, beta)`
with `mu = None` for RMSNorm; bwd takes the three options first, then `ctx, dz`, and returns
`dx, dgamma, dbeta` with `dbeta = None` for RMSNorm (beta does not enter an RMSNorm); registered with
`_layernorm.defvjp(_layernorm_fwd_rule, _layernorm_bwd_rule)`. The public `layernorm` passes the
options by keyword.

Adapted from NVIDIA/TransformerEngine:transformer_engine/jax/layernorm.py:48 (commit 11fa0dc). The
library's kernels (`layernorm_fwd`, `rmsnorm_fwd`, `layernorm_bwd`, `rmsnorm_bwd`, CUDA custom calls)
are written here in jax.numpy with the same outputs (`mu`, `rsigma` = 1/sqrt(var + eps)) and the
analytic backward of the normalisation; `canonicalize_layernorm_type` is kept. The caller runs a
zero-centred LayerNorm, then an RMSNorm of its output with the same gamma and beta.
"""
import functools
from functools import partial
import jax
import jax.numpy as jnp
import numpy
EVAL = {'id': 'mutation/jit_under_creator/te_layernorm', 'family': 'mutation', 'expect': 'unknown', 'library': 'transformer-engine', 'source': 'NVIDIA/TransformerEngine:transformer_engine/jax/layernorm.py:48', 'argnums': (0, 1, 2), 'extra': ['grad_jit'], 'operator': 'jit_under_creator', 'base': 'te_layernorm'}

def canonicalize_layernorm_type(x):
    canonicalized = x.lower().strip().replace('-', '').replace('_', '')
    assert canonicalized in ['layernorm', 'rmsnorm']
    return canonicalized

def layernorm_fwd(x, gamma, beta, zero_centered_gamma, epsilon):
    mu = jnp.mean(x, axis=-1, keepdims=True)
    rsigma = jax.lax.rsqrt(jnp.mean(jnp.square(x - mu), axis=-1, keepdims=True) + epsilon)
    scale = gamma + 1.0 if zero_centered_gamma else gamma
    return ((x - mu) * rsigma * scale + beta, mu, rsigma)

def rmsnorm_fwd(x, gamma, epsilon):
    rsigma = jax.lax.rsqrt(jnp.mean(jnp.square(x), axis=-1, keepdims=True) + epsilon)
    return (x * rsigma * gamma, rsigma)

def layernorm_bwd(dz, x, mu, rsigma, gamma, beta, zero_centered_gamma, epsilon):
    xhat = (x - mu) * rsigma
    scale = gamma + 1.0 if zero_centered_gamma else gamma
    dxhat = dz * scale
    dx = rsigma * (dxhat - jnp.mean(dxhat, axis=-1, keepdims=True) - xhat * jnp.mean(dxhat * xhat, axis=-1, keepdims=True))
    batch = tuple(range(x.ndim - 1))
    return (dx, jnp.sum(dz * xhat, axis=batch), jnp.sum(dz, axis=batch))

def rmsnorm_bwd(dz, x, rsigma, gamma, epsilon):
    xhat = x * rsigma
    dxhat = dz * gamma
    dx = rsigma * (dxhat - xhat * jnp.mean(dxhat * xhat, axis=-1, keepdims=True))
    return (dx, jnp.sum(dz * xhat, axis=tuple(range(x.ndim - 1))))

def layernorm(inputs, gamma, beta, layernorm_type, zero_centered_gamma=False, epsilon=1e-06):
    output = _layernorm(inputs, gamma, beta, layernorm_type=layernorm_type, zero_centered_gamma=zero_centered_gamma, epsilon=epsilon)
    return output

@partial(jax.custom_vjp, nondiff_argnums=(3, 4, 5))
@jax.jit
def _layernorm(x, gamma, beta, layernorm_type: str, zero_centered_gamma: bool=False, epsilon: float=1e-06):
    output, _ = _layernorm_fwd_rule(x, gamma, beta, layernorm_type, zero_centered_gamma, epsilon)
    return output

def _layernorm_fwd_rule(x, gamma, beta, layernorm_type: str, zero_centered_gamma: bool=False, epsilon: float=1e-06):
    layernorm_type = canonicalize_layernorm_type(layernorm_type)
    if layernorm_type == 'layernorm':
        output, mu, rsigma = layernorm_fwd(x, gamma, beta, zero_centered_gamma, epsilon)
    elif layernorm_type == 'rmsnorm':
        assert not zero_centered_gamma, "zero_centered_gamma is not supported if layernorm_type is 'rmsnorm'"
        output, rsigma = rmsnorm_fwd(x, gamma, epsilon)
        mu = None
    else:
        raise ValueError(f'layernorm_type={layernorm_type!r} is not supported.')
    return (output, (x, mu, rsigma, gamma, beta))

def _layernorm_bwd_rule(layernorm_type, zero_centered_gamma, epsilon, ctx, dz):
    x, mu, rsigma, gamma, beta = ctx
    if layernorm_type == 'layernorm':
        dx, dgamma, dbeta = layernorm_bwd(dz, x, mu, rsigma, gamma, beta, zero_centered_gamma=zero_centered_gamma, epsilon=epsilon)
    elif layernorm_type == 'rmsnorm':
        assert not zero_centered_gamma, "zero_centered_gamma is not supported if layernorm_type is 'rmsnorm'"
        dx, dgamma = rmsnorm_bwd(dz, x, rsigma, gamma, epsilon=epsilon)
        dbeta = None
    else:
        raise ValueError(f'layernorm_type={layernorm_type!r} is not supported.')
    return (dx, dgamma, dbeta)
_layernorm.defvjp(_layernorm_fwd_rule, _layernorm_bwd_rule)

def eval_fn(x, gamma, beta):
    h = layernorm(x, gamma, beta, 'layernorm', zero_centered_gamma=True, epsilon=1e-05)
    return layernorm(1.3 * h + 0.2, gamma + 1.0, beta, 'rmsnorm')

def eval_inputs():
    x = numpy.array([[0.3, -1.2, 0.8, 2.0, -0.4], [1.1, 0.2, -0.7, 0.5, -1.6], [-0.9, 0.4, 1.7, -0.2, 0.6]], numpy.float32)
    gamma = numpy.array([0.1, -0.2, 0.05, 0.3, -0.1], numpy.float32)
    beta = numpy.array([0.2, -0.1, 0.0, 0.4, -0.3], numpy.float32)
    return (x, gamma, beta)

def eval_reference(x, gamma, beta):
    x, gamma, beta = (numpy.asarray(a, numpy.float64) for a in (x, gamma, beta))
    mu = x.mean(-1, keepdims=True)
    h = (x - mu) / numpy.sqrt(((x - mu) ** 2).mean(-1, keepdims=True) + 1e-05) * (gamma + 1.0) + beta
    y = 1.3 * h + 0.2
    return y / numpy.sqrt((y ** 2).mean(-1, keepdims=True) + 1e-06) * (gamma + 1.0)
