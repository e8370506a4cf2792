"""jaxstro (differentiable astronomy utilities): `integrate_replay_core(config, domain, args,
epsabs, epsrel)`, adaptive quadrature whose derivative replays the accepted formula, as
`@partial(jax.custom_jvp, nondiff_argnums=(0,))` with a static, hashable `IntegrateConfig`
(the integrand, the rule's order and the refinement limit) nondiff. The primal runs the
adaptive solve and returns a `QuadResult` NamedTuple: the value, an error estimate, an int32
status and an int32 work count (a pytree with integer leaves). The rule, registered with the
decorator `@integrate_replay_core.defjvp`, takes `config` first, unpacks four primals and four
tangents (the tolerances' tangents are ignored), solves again, stops the gradient of the
accepted refinement level (the evidence), and differentiates the *replayed* fixed formula with
`jax.jvp` over `(domain, args)`. The tangent of the result is built by `result_tangent`:
the value's tangent, zeros for the float diagnostics and `float0` zeros for the integer ones.

Adapted from jaxstro/jaxstro:src/jaxstro/quad/_replay.py:204 (commit 99274ee), with
`result_tangent` and `_zero_tangent` of the same file (:58, :65) and `QuadResult` from
`quad/result.py`. Changed: jaxstro's five adaptive methods (Gauss-Kronrod, Clenshaw-Curtis,
tanh-sinh, Romberg) and their regional evidence are replaced by one global rule, composite
Gauss-Legendre on 2**level equal panels, refined until two levels agree; the error and work
NamedTuples keep two fields each; jaxstro's frozen dataclass `IntegrateConfig` is a NamedTuple
here (equally hashable and immutable: the labeller compiles modules with postponed annotations,
which a dataclass in an unregistered module cannot resolve). The caller integrates a damped oscillation over [0, upper]
and differentiates with respect to the upper limit and the integrand's two parameters.
"""
import functools
from functools import partial
from typing import Any, Callable, NamedTuple
import jax
import jax.numpy as jnp
import numpy as np
EVAL = {'id': 'mutation/switch_caller/jaxstro_integrate_replay', 'family': 'mutation', 'expect': 'unknown', 'library': 'jaxstro', 'source': 'jaxstro/jaxstro:src/jaxstro/quad/_replay.py:204', 'argnums': (0, 1), 'extra': ['jvp', 'jacfwd'], 'operator': 'switch_caller', 'base': 'jaxstro_integrate_replay'}

class QuadError(NamedTuple):
    estimate: Any
    kind: Any

class QuadWork(NamedTuple):
    evaluations: Any
    levels: Any

class QuadResult(NamedTuple):
    value: Any
    error: QuadError
    status: Any
    work: QuadWork

class GlobalReplayEvidence(NamedTuple):
    accepted_level: Any

class PrimalSolve(NamedTuple):
    result: QuadResult
    evidence: GlobalReplayEvidence

class IntegrateConfig(NamedTuple):
    fun: Callable
    order: int
    max_levels: int

def _level_estimates(config, domain, args):
    """Composite Gauss-Legendre estimates on 1, 2, 4, ... equal panels."""
    lower, upper = domain
    nodes, weights = np.polynomial.legendre.leggauss(config.order)
    estimates = []
    for level in range(config.max_levels):
        panels = 2 ** level
        edges = lower + (upper - lower) * (jnp.arange(panels + 1) / panels)
        left, width = (edges[:-1], edges[1:] - edges[:-1])
        x = left[:, None] + 0.5 * width[:, None] * (nodes + 1.0)
        estimates.append(jnp.sum(0.5 * width[:, None] * weights * config.fun(x, args)))
    return jnp.stack(estimates)

def _solve_raw(config, domain, args, epsabs, epsrel):
    estimates = _level_estimates(config, domain, args)
    change = jnp.abs(estimates[1:] - estimates[:-1])
    accepted_mask = change <= jnp.maximum(epsabs, epsrel * jnp.abs(estimates[1:]))
    converged = jnp.any(accepted_mask)
    level = jnp.where(converged, jnp.argmax(accepted_mask) + 1, config.max_levels - 1).astype(jnp.int32)
    result = QuadResult(value=estimates[level], error=QuadError(estimate=change[level - 1], kind=jnp.asarray(1, dtype=jnp.int32)), status=jnp.where(converged, 0, 1).astype(jnp.int32), work=QuadWork(evaluations=(config.order * (2 ** (level + 1) - 1)).astype(jnp.int32), levels=level))
    return PrimalSolve(result=result, evidence=GlobalReplayEvidence(accepted_level=level))

def _zero_tangent(leaf):
    leaf = jnp.asarray(leaf)
    if jnp.issubdtype(leaf.dtype, jnp.inexact):
        return jnp.zeros_like(leaf)
    return np.zeros(leaf.shape, dtype=jax.dtypes.float0)

def result_tangent(result, value_tangent):
    """Attach the value JVP and exact zero tangents to diagnostics."""
    return QuadResult(value=value_tangent, error=QuadError(estimate=_zero_tangent(result.error.estimate), kind=_zero_tangent(result.error.kind)), status=_zero_tangent(result.status), work=QuadWork(*(_zero_tangent(leaf) for leaf in result.work)))

def replay_value(config, domain, args, evidence, primal_value):
    """Reconstruct the stopped accepted quadrature formula."""
    estimates = _level_estimates(config, domain, args)
    return estimates[evidence.accepted_level].astype(jnp.asarray(primal_value).dtype)

@partial(jax.custom_jvp, nondiff_argnums=(0,))
def integrate_replay_core(config, domain, args, epsabs, epsrel):
    return _solve_raw(config, domain, args, epsabs, epsrel).result

@integrate_replay_core.defjvp
def _integrate_replay_core_jvp(config, primals, tangents):
    domain, args, epsabs, epsrel = primals
    domain_tangent, args_tangent, _epsabs_tangent, _epsrel_tangent = tangents
    solve = _solve_raw(config, domain, args, epsabs, epsrel)
    evidence = jax.tree.map(jax.lax.stop_gradient, solve.evidence)

    def replay(live_domain, live_args):
        return replay_value(config, live_domain, live_args, evidence, solve.result.value)
    _, value_tangent = jax.jvp(replay, (domain, args), (domain_tangent, args_tangent))
    return (solve.result, result_tangent(solve.result, value_tangent))

def _damped_oscillation(x, params):
    return jnp.exp(-params[0] * x) * jnp.cos(params[1] * x)
CONFIG = IntegrateConfig(fun=_damped_oscillation, order=8, max_levels=5)

def eval_fn(upper, params):
    result = integrate_replay_core(CONFIG, (0.0, upper), params, 1e-06, 1e-05)
    return result.value

def eval_inputs():
    return (np.float32(3.0), np.array([0.7, 2.0], np.float32))

def eval_reference(upper, params):
    u = np.asarray(upper, np.float64)
    a, b = (np.asarray(params, np.float64)[..., i] for i in range(2))
    return (np.exp(-a * u) * (b * np.sin(b * u) - a * np.cos(b * u)) + a) / (a * a + b * b)

def switch_usage(*args):

    def loss(v):
        return jnp.sum(eval_fn(*[v if i == 0 else a for i, a in enumerate(args)]))
    x = jnp.asarray(args[0])
    branches = [loss, lambda v: 2.0 * loss(v)]
    return jax.grad(lambda v: jax.lax.switch(1, branches, v))(x)

def switch_usage_expected(*args):

    def loss(v):
        return jnp.sum(eval_fn(*[v if i == 0 else a for i, a in enumerate(args)]))
    x = jnp.asarray(args[0])
    return 2.0 * jax.grad(loss)(x)

def eval_custom():
    args = tuple(eval_inputs())
    return {'switch_usage': lambda: (switch_usage(*args), switch_usage_expected(*args))}
