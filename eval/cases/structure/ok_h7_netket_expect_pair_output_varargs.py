"""structure look-alike: custom_vjp with two nondiff callables and *args returns (mean, stats); bwd unpacks the cotangent pair and returns a jax.vjp pullback's tuple.

Source: netket/netket netket/jax/_expect.py
https://github.com/netket/netket/blob/master/netket/jax/_expect.py (`_expect`:
`partial(jax.custom_vjp, nondiff_argnums=(0, 1, 2, 3, 4))` over `(..., log_pdf, expected_fun, pars, σ,
*expected_fun_args)`, returning `(mean, stats)`; the fwd returns `(mean, stats), (pars, σ,
expected_fun_args, ΔL_σ)`; the bwd unpacks `dL̄, dL̄_stats = dout` and returns `pb(dL̄)`, the pullback of a
surrogate over `(pars, σ, *args)` from `jax.vjp`: the score-function gradient of an expectation).
"""
import functools

import jax
import jax.numpy as jnp
import numpy as np

EVAL = {
    "id": "structure/ok_h7_netket_expect_pair_output_varargs", "family": "structure",
    "expect": "ok", "source": "netket/netket netket/jax/_expect.py",
    "url": "https://github.com/netket/netket/blob/master/netket/jax/_expect.py",
    "written_at": "2026-12-05", "written_at_commit": "914cb50819952883a4a3f7630a31351c99785b0d",
    "argnums": (0,), "heldout": True,
}


def log_density(theta, samples):
    return -0.5 * jnp.sum((samples - theta) ** 2, axis=-1)


def local_cost(theta, samples, coupling):
    return coupling * jnp.sum(jnp.sin(samples), axis=-1) + 0.1 * jnp.sum(theta ** 2)


@functools.partial(jax.custom_vjp, nondiff_argnums=(0, 1))  # eval: span
def expect(log_pdf, cost_fn, pars, samples, *cost_args):
    costs = cost_fn(pars, samples, *cost_args)
    mean = jnp.mean(costs)
    return mean, {"mean": mean, "variance": jnp.var(costs)}


def _expect_fwd(log_pdf, cost_fn, pars, samples, *cost_args):
    costs = cost_fn(pars, samples, *cost_args)
    mean = jnp.mean(costs)
    stats = {"mean": mean, "variance": jnp.var(costs)}
    return (mean, stats), (pars, samples, cost_args, costs - mean)  # eval: span


def _expect_bwd(log_pdf, cost_fn, residuals, dout):
    pars, samples, cost_args, centered = residuals  # eval: span
    d_mean, _d_stats = dout  # eval: span

    def surrogate(pars, samples, *cost_args):
        score = centered * log_pdf(pars, samples)
        return jnp.mean(score + cost_fn(pars, samples, *cost_args))

    _, pullback = jax.vjp(surrogate, pars, samples, *cost_args)
    return pullback(d_mean)  # eval: span


expect.defvjp(_expect_fwd, _expect_bwd)  # eval: span

SAMPLES = np.array([[0.3, -1.0], [1.2, 0.4], [-0.6, 0.8], [0.9, 1.5], [-1.3, -0.2]], np.float32)


def eval_fn(theta, coupling):
    mean, _ = expect(log_density, local_cost, theta, SAMPLES, coupling)
    return mean


def eval_inputs():
    return (np.array([0.2, -0.4], np.float32), np.float32(1.5))


def _costs(theta, coupling):
    s = SAMPLES.astype(np.float64)
    return float(coupling) * np.sin(s).sum(axis=-1) + 0.1 * np.sum(np.asarray(theta, np.float64) ** 2)


def eval_reference(theta, coupling):
    return np.mean(_costs(theta, coupling))


def eval_grad_reference(theta, coupling):
    theta = np.asarray(theta, np.float64)
    costs = _costs(theta, coupling)
    score = SAMPLES.astype(np.float64) - theta  # d log_density / d theta
    return (np.mean((costs - costs.mean())[:, None] * score, axis=0) + 0.2 * theta,)
