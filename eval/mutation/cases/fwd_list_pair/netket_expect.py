"""NetKet: the expectation of `expected_fun` over samples of a log-pdf, as a custom_vjp created
through `functools.partial` with five nondiff arguments (n_chains, chunk_size, in_axes and the two
functions) and differentiated arguments `pars, σ, *expected_fun_args`; it returns a (mean, Stats)
pair and its bwd gives the score-function (REINFORCE) gradient with the baseline trick, dropping
the Stats cotangent.

Adapted from netket/netket:netket/jax/_expect.py:140 (at 3b9e1c28; chunking through
`apply_chunked` is dropped, `netket.stats.statistics` is a small NamedTuple of mean, variance and
error of the mean, and `nk.jax.vjp` is `jax.vjp`). The rule is deliberately not the derivative of
the sample mean: it adds E[(L - <L>) grad log p], so the module gives that gradient
(`eval_grad_reference`).
"""
import functools
from functools import partial
from typing import NamedTuple
import jax
from jax import numpy as jnp
import numpy as np
EVAL = {'id': 'mutation/fwd_list_pair/netket_expect', 'family': 'mutation', 'expect': 'unknown', 'library': 'netket', 'source': 'netket/netket:netket/jax/_expect.py:140', 'argnums': (0,), 'extra': ['grad_jit'], 'operator': 'fwd_list_pair', 'base': 'netket_expect'}

class Stats(NamedTuple):
    mean: jnp.ndarray
    error_of_mean: jnp.ndarray
    variance: jnp.ndarray

def statistics(data):
    data = data.reshape(-1)
    variance = jnp.var(data)
    return Stats(jnp.mean(data), jnp.sqrt(variance / data.shape[0]), variance)

def expect(log_pdf, expected_fun, pars, σ, *expected_fun_args, n_chains=None, chunk_size=None, in_axes=None):
    return _expect(n_chains, chunk_size, in_axes, log_pdf, expected_fun, pars, σ, *expected_fun_args)

@partial(jax.custom_vjp, nondiff_argnums=(0, 1, 2, 3, 4))
def _expect(n_chains, chunk_size, in_axes, log_pdf, expected_fun, pars, σ, *expected_fun_args):
    L_σ = expected_fun(pars, σ, *expected_fun_args)
    if n_chains is not None:
        L_σ = L_σ.reshape((n_chains, -1))
    L̄_σ = statistics(L_σ)
    return (L̄_σ.mean, L̄_σ)

def _expect_fwd(n_chains, chunk_size, in_axes, log_pdf, expected_fun, pars, σ, *expected_fun_args):
    L_σ = expected_fun(pars, σ, *expected_fun_args)
    if n_chains is not None:
        L_σ_r = L_σ.reshape((n_chains, -1))
    else:
        L_σ_r = L_σ
    L̄_stat = statistics(L_σ_r)
    L̄_σ = L̄_stat.mean
    ΔL_σ = L_σ - L̄_σ
    return [(L̄_σ, L̄_stat), (pars, σ, expected_fun_args, ΔL_σ)]

def _expect_bwd(n_chains, chunk_size, in_axes, log_pdf, expected_fun, residuals, dout):
    pars, σ, cost_args, ΔL_σ = residuals
    dL̄, dL̄_stats = dout

    def f(pars, σ, *cost_args):
        log_p = log_pdf(pars, σ)
        term1 = jax.vmap(jnp.multiply)(ΔL_σ, log_p)
        term2 = expected_fun(pars, σ, *cost_args)
        out = jnp.mean(term1 + term2, axis=0)
        out = out.sum()
        return out
    _, pb = jax.vjp(f, pars, σ, *cost_args)
    grad_f = pb(dL̄)
    return grad_f
_expect.defvjp(_expect_fwd, _expect_bwd)

def _log_pdf(pars, σ):
    return 2.0 * jnp.log(jnp.cosh(σ @ pars))

def _local_energy(pars, σ):
    return jnp.sum(σ[:, :-1] * σ[:, 1:], axis=-1) + jnp.tanh(σ @ pars)

def eval_fn(pars, σ):
    return expect(_log_pdf, _local_energy, pars, σ)[0]

def eval_inputs():
    σ = np.array([[1, -1, 1, 1], [-1, -1, 1, -1], [1, 1, 1, -1], [-1, 1, -1, 1], [1, -1, -1, -1]], np.float32)
    return (np.array([0.3, -0.5, 0.8, 0.2], np.float32), σ)

def _energy64(pars, σ):
    pars, σ = (np.asarray(pars, np.float64), np.asarray(σ, np.float64))
    return np.sum(σ[:, :-1] * σ[:, 1:], axis=-1) + np.tanh(σ @ pars)

def eval_reference(pars, σ):
    return np.mean(_energy64(pars, σ))

def eval_grad_reference(pars, σ):
    pars, σ = (np.asarray(pars, np.float64), np.asarray(σ, np.float64))
    L = _energy64(pars, σ)
    t = np.tanh(σ @ pars)
    score = 2.0 * t[:, None] * σ
    return np.mean((L - L.mean())[:, None] * score + (1.0 - t * t)[:, None] * σ, axis=0)
